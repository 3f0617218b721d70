"""WebRTC cannot reach around allowed_origins (issue 42 item 8): a page that gathers ICE candidates against a STUN
server (a UDP socket the test holds on 127.0.0.1) sends it nothing, since the launched browser allows WebRTC no
UDP that does not go through its proxy."""

from __future__ import annotations

import http.server
import json
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.cdp.browser import OwnedBrowser
from tests import toolchains
from tests.waiting import NOT_YET
from tests.waiting import wait_for

PAGE = """<!doctype html><html><head><title>webrtc</title></head><body>
<script>
const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{stun}'}}]}});
pc.createDataChannel('probe');
pc.onicecandidate = (event) => {{ if (!event.candidate) document.title = 'gathered'; }};
pc.createOffer().then((offer) => pc.setLocalDescription(offer));
</script></body></html>"""


@pytest.fixture
def stun() -> Iterator[socket.socket]:
    """A 'STUN server': a UDP socket on 127.0.0.1 that only counts what arrives."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()


@pytest.fixture
def page(stun: socket.socket) -> Iterator[int]:
    body = PAGE.format(stun=stun.getsockname()[1]).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_port)
    finally:
        server.shutdown()
        server.server_close()


def _received(sock: socket.socket) -> list[bytes]:
    packets = []
    while select.select([sock], [], [], 0.5)[0]:
        packets.append(sock.recv(2048))
    return packets


def test_a_page_sends_no_stun_packet(rea_registry: Registry, stun: socket.socket, page: int) -> None:
    toolchains.require("chromium")
    session = Session(rea_registry)
    try:
        capture = result_of(
            session,
            "capture_browser_scenario",
            {
                "start_url": {"url": f"http://127.0.0.1:{page}/"},
                # ICE gathering against an unanswered STUN server retries for seconds: this covers its first tries.
                "actions": [{"step_id": "gathering", "action": "wait_for_timeout", "duration_ms": 3000}],
                "capture": {"at_end": ["title"]},
            },
        )
    finally:
        session.close()
    assert [s["status"] for s in capture["steps"]][-1] == "completed"
    assert _received(stun) == []


def test_the_profile_says_no_unproxied_udp(browser: OwnedBrowser) -> None:
    # Written before the browser started; the browser rewrites the file with its own keys, and keeps these.
    path = Path(browser.proc.private_dir, "profile", "Default", "Preferences")
    # A half-rewritten file (or one without the key yet) is "not yet".
    webrtc = wait_for(
        lambda: json.loads(path.read_bytes())["webrtc"],
        "the profile's Preferences",
        timeout_s=30,
        pending=(*NOT_YET, ValueError, KeyError),
    )
    assert webrtc["ip_handling_policy"] == "disable_non_proxied_udp"
    assert webrtc["nonproxied_udp_enabled"] is False
