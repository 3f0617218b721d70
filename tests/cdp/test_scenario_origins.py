"""allowed_origins holds beyond the page (issue 24 item 1): a service worker's install and activate fetches and a
shared worker's fetch to another origin never reach it, and neither does a WebSocket (which DevTools cannot hold:
the launched browser's proxy rules refuse it), while one to the page's own origin connects.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.waiting import wait_for

PAGE = """<!doctype html><html><head><title>origins</title></head><body>
<script>
new WebSocket('ws://127.0.0.1:{other}/ws');
new WebSocket('ws://127.0.0.1:{site}/own-ws');
navigator.serviceWorker.register('/sw.js');
new SharedWorker('/shared.js');
setTimeout(() => {{ document.title = 'done'; }}, 1500);
</script></body></html>"""
SERVICE_WORKER = """
self.addEventListener('install', () => {{ fetch('http://127.0.0.1:{other}/sw-install').catch(() => {{}}); }});
self.addEventListener('activate', () => {{ fetch('http://127.0.0.1:{other}/sw-activate').catch(() => {{}}); }});
"""
SHARED_WORKER = "fetch('http://127.0.0.1:{other}/shared').catch(() => {{}});"


class Listener:
    """An HTTP server on another origin: it records every request that reaches it."""

    def __init__(self, pages: dict[str, tuple[str, str]] | None = None) -> None:
        self.hits: list[str] = []
        self.pages = pages or {}
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                listener.hits.append(self.path)
                kind, body = listener.pages.get(self.path, ("text/plain", "x"))
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Service-Worker-Allowed", "/")
                self.end_headers()
                self.wfile.write(body.encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[Listener, Listener]]:
    other = Listener()
    site = Listener()
    site.pages.update(
        {
            "/": ("text/html", PAGE.format(other=other.port, site=site.port)),
            "/sw.js": ("text/javascript", SERVICE_WORKER.format(other=other.port)),
            "/shared.js": ("text/javascript", SHARED_WORKER.format(other=other.port)),
        }
    )
    yield site, other
    site.close()
    other.close()


def test_workers_cannot_reach_another_origin_and_a_websocket_is_reported(
    rea_registry: Registry, servers: tuple[Listener, Listener]
) -> None:
    toolchains.require("chromium")
    site, other = servers
    session = Session(rea_registry)
    try:
        capture = result_of(
            session,
            "capture_browser_scenario",
            {
                "start_url": {"url": f"http://127.0.0.1:{site.port}/"},
                "actions": [{"step_id": "workers-ran", "action": "wait_for_timeout", "duration_ms": 2500}],
                "capture": {"after_each_step": ["url"], "at_end": ["title"], "events": ["network"]},
            },
        )
    finally:
        session.close()
    assert [s["status"] for s in capture["steps"]] == ["completed", "completed"]
    # A request still in flight when the browser closed reaches the listener's thread just after.
    wait_for(
        lambda: (
            ("/shared" in site.hits or "/shared.js" in site.hits)  # the shared worker did run
            and "/sw.js" in site.hits  # and the service worker was installed
            and "/own-ws" in site.hits
        ),  # a WebSocket to the page's own origin is not held
        "the workers' and the WebSocket's requests reached the page's own origin",
        timeout_s=10,
    )
    assert other.hits == [], other.hits
    events = capture["events"]["items"]
    blocked = {e["url"]["url"] for e in events if e["kind"] == "request-blocked" and e["url"]}
    assert f"http://127.0.0.1:{other.port}/shared" in blocked
    assert {f"http://127.0.0.1:{other.port}/sw-install", f"http://127.0.0.1:{other.port}/sw-activate"} & blocked
    # The launched browser's proxy rules refuse the WebSocket DevTools cannot hold: blocked, not uncontained.
    sockets = [e for e in events if e["resource_type"] == "WebSocket"]
    assert [(e["kind"], e["url"]["url"]) for e in sockets] == [("request-blocked", f"ws://127.0.0.1:{other.port}/ws")]
    assert not any("WebSocket" in line for line in capture["limitations"])
