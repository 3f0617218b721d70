"""rea's bridge script run standalone (as Hopper runs it) against the injected fake Hopper API facade."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea_plugins.hopper.client import BRIDGE

HERE = Path(__file__).resolve().parent


class Peer:
    """A raw client of the bridge socket: newline-delimited JSON."""

    def __init__(self, path: str, token: str) -> None:
        self.token = token
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(30)
        self.buffer = b""
        self.next_id = 0

    def read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "the bridge closed the connection"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def write(self, payload: dict[str, Any] | bytes) -> None:
        self.sock.sendall((payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n")

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.write({"id": self.next_id, "token": self.token, "method": method, "params": params or {}})
        while True:
            message = self.read()
            if "event" not in message:
                assert message["id"] == self.next_id and message["token"] == self.token
                return message


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[tuple[Peer, subprocess.Popen[bytes], Path]]:
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    token = secrets.token_hex(32)
    session = folder / "session.json"
    session.write_text(json.dumps({"token": token, "run_id": "run_test", "socket": str(folder / "bridge.sock")}))
    session.chmod(0o600)
    env = {**os.environ, "REA_HOPPER_SESSION": str(session), "REA_HOPPER_TEST_FACADE": str(HERE / "fake_hopper_api.py")}
    proc = subprocess.Popen([sys.executable, BRIDGE], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield Peer(str(folder / "bridge.sock"), token), proc, session
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def test_ready_then_requests_then_shutdown(bridge: tuple[Peer, subprocess.Popen[bytes], Path]) -> None:
    peer, proc, session = bridge
    progress = peer.read()
    assert progress["event"] == "progress" and progress["token"] == peer.token
    ready = peer.read()
    assert ready["event"] == "ready" and ready["run_id"] == "run_test" and ready["pid"] == proc.pid
    assert ready["hopper_version"] == "5.19.6-fake" and ready["protocol"] == 1
    # The secret file is gone once read: the token now lives only in the bridge.
    assert not session.exists()
    doc = peer.ask("document")["result"]
    assert doc["entry"] == 0x100000F00 and doc["bits64"] is True
    assert [s["name"] for s in doc["segments"]] == ["__TEXT", "__DATA"]
    assert [s["name"] for s in doc["segments"][0]["sections"]] == ["__text", "__stubs", "__cstring"]
    procs = peer.ask("procedures", {"segment": 0})["result"]
    assert [(p["name"], p["section"]) for p in procs] == [
        ("_main", "__text"),
        ("_greet", "__text"),
        ("imp___stubs__puts", "__stubs"),
    ]
    assert procs[0]["end"] == 0x100000F13
    names = peer.ask("names", {"segment": 1})["result"]
    assert names == [{"address": 0x100002000, "name": "_puts_ptr"}]
    strings = peer.ask("strings", {"segment": 0})["result"]
    assert [(s["value"], s["unicode"]) for s in strings] == [("REA_HOPPER_GREETING", False), ("WIDE", True)]
    main = peer.ask("procedure", {"address": 0x100000F00})["result"]
    assert [b["count"] for b in main["blocks"]] == [5, 2, 1]
    call = main["instructions"][1]
    assert call == {
        "address": 0x100000F01,
        "bytes": "e83a000000",
        "mnemonic": "call",
        "operands": ["_greet"],
        "conditional": False,
        "unconditional": False,
        "references": [0x100000F40],
    }
    assert {"type": 1, "from": 0x100000F0F, "to": None} in main["callees"]
    assert peer.ask("references_to", {"address": 0x100000F80})["result"] == [0x100000F06, 0x100000F47]
    assert "_greet();" in peer.ask("decompile", {"address": 0x100000F00})["result"]["text"]
    assert peer.ask("decompile", {"address": 0x100000F40})["result"]["text"] is None
    notes = peer.ask("annotations", {"address": 0x100000F40})["result"]
    assert notes == {"name": "_greet", "comment": None, "inline_comment": None, "bookmark": {"name": "greeting"}}
    bad = peer.ask("procedure", {"address": 0x100000F01})
    assert bad["error"]["code"] == "invalid_request"
    unknown = peer.ask("format_disk")
    assert unknown["error"]["code"] == "capability_unavailable"
    ack = peer.ask("shutdown")["result"]
    assert ack == {"shutdown": True, "analysis_stopped": True, "document_closed": True}
    assert proc.wait(10) == 0


def test_tokens_are_checked_and_malformed_lines_reported(bridge: tuple[Peer, subprocess.Popen[bytes], Path]) -> None:
    peer, proc, _ = bridge
    assert peer.read()["event"] == "progress" and peer.read()["event"] == "ready"
    # Without the token nothing is answered, not even an error naming the request.
    peer.write({"id": 77, "token": "0" * 64, "method": "document", "params": {}})
    peer.write({"id": 78, "method": "document", "params": {}})
    peer.write(b"{this is not json")
    diagnostic = peer.read()
    assert diagnostic["event"] == "diagnostic" and "malformed" in diagnostic["message"]
    answer = peer.ask("ping")
    assert answer["id"] == 1 and answer["result"]["pid"] == proc.pid
    peer.ask("shutdown")
    assert proc.wait(10) == 0


def test_the_bridge_refuses_to_run_without_hopper_or_a_facade(tmp_path: Path) -> None:
    session = tmp_path / "session.json"
    session.write_text(json.dumps({"token": "t", "run_id": "r", "socket": str(tmp_path / "s.sock")}))
    env = {k: v for k, v in os.environ.items() if k != "REA_HOPPER_TEST_FACADE"}
    out = subprocess.run(
        [sys.executable, BRIDGE],
        env={**env, "REA_HOPPER_SESSION": str(session)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "not running inside Hopper" in out.stderr
