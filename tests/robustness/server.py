"""One long-lived ``rea serve`` driven line by line, with a deadline on every call and /proc observations.

A raw JSON-RPC client (not the SDK) so that a hang is a missed deadline rather than a stuck event loop, a
crash is an end of stream, and what the server sent is checked exactly as it was written.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Self

from rea.process import procfs
from tests.mcp.harness import server_env


@dataclass
class Reply:
    """What one call produced: ``ok``/``error`` (a tool result), ``rpc_error``, ``hang`` or ``crash``."""

    status: str
    payload: Any
    seconds: float


def proc_children(pid: int, table: dict[int, procfs.ProcInfo] | None = None) -> dict[int, str]:
    """Live processes whose parent is ``pid``: pid -> start time (field 22 of /proc/<pid>/stat), from ``table`` (one
    scan of /proc shared by several questions) or a fresh scan."""
    table = procfs.scan() if table is None else table
    return {i.pid: str(i.start) for i in table.values() if i.ppid == pid and i.state != "Z"}


def alive(pid: int, start: str) -> bool:
    """Whether ``pid`` still names the process that had start time ``start`` (and has not exited)."""
    now = procfs.read(pid)
    return now is not None and str(now.start) == start and now.state != "Z"


def status_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def environ_value(pid: int, key: str) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(key.encode() + b"="):
            return item.split(b"=", 1)[1].decode(errors="replace")
    return None


class Server:
    """``rea serve`` over stdio with a private TMPDIR, HOME and working directory."""

    def __init__(self, tmp: Path, home: Path, cwd: Path, cache: Path, stderr: Path) -> None:
        env = server_env(
            TMPDIR=str(tmp),
            HOME=str(home),
            XDG_CACHE_HOME=str(home / ".cache"),
            REA_CACHE_DIR=str(cache),
            # A mutated function's decompile is bounded well inside the per-call deadline (CALL_DEADLINE_S).
            REA_NATIVE_DECOMPILE_TIMEOUT_S="10",
        )
        self._stderr = open(stderr, "ab")  # noqa: SIM115 - kept for the server's life
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rea.cli.main", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self.pid = self.proc.pid
        self._buf = b""
        self._next = 1
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "rea-robustness", "version": "1"},
            },
            120,
        )
        if reply.status != "ok":
            raise RuntimeError(f"rea serve did not initialize: {reply}")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    @classmethod
    def under(cls, root: Path) -> Self:
        """A server whose TMPDIR, HOME, working directory and cache are fresh folders under ``root``."""
        dirs = {name: root / name for name in ("tmp", "home", "cwd", "cache")}
        for d in dirs.values():
            d.mkdir()
        return cls(dirs["tmp"], dirs["home"], dirs["cwd"], dirs["cache"], root / "stderr.log")

    def _send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _line(self, deadline: float) -> bytes | None:
        """The next line, or None at the deadline; EOFError when the server closed its output."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def request(self, method: str, params: Any, deadline_s: float) -> Reply:
        rid = self._next
        self._next += 1
        start = time.monotonic()
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            while True:
                line = self._line(start + deadline_s)
                if line is None:
                    return Reply("hang", None, time.monotonic() - start)
                message = json.loads(line)
                if message.get("id") == rid:
                    break
        except (EOFError, BrokenPipeError):
            return Reply("crash", self.proc.poll(), time.monotonic() - start)
        took = time.monotonic() - start
        if "error" in message:
            return Reply("rpc_error", message["error"], took)
        return Reply("ok", message["result"], took)

    def call(self, tool: str, args: dict[str, Any], deadline_s: float) -> Reply:
        """A tools/call: ``ok`` with the structured result or ``error`` with the parsed text content."""
        reply = self.request("tools/call", {"name": tool, "arguments": args}, deadline_s)
        if reply.status != "ok":
            return reply
        result = reply.payload
        try:
            text = result["content"][0]["text"]
            payload = json.loads(text)
        except (KeyError, IndexError, TypeError, ValueError):
            return Reply("rpc_error", {"unparseable_result": str(result)[:500]}, reply.seconds)
        if result.get("isError"):
            return Reply("error", payload, reply.seconds)
        if result.get("structuredContent") != payload:
            return Reply("rpc_error", {"text_and_structured_differ": tool}, reply.seconds)
        return Reply("ok", payload, reply.seconds)

    def children(self, table: dict[int, procfs.ProcInfo] | None = None) -> dict[int, str]:
        return proc_children(self.pid, table)

    def peak_rss_kib(self) -> int:
        return status_kib(self.pid, "VmHWM")

    def close(self, timeout: float = 60) -> int | None:
        """End the session (stdin closed) and wait; None if it had to be killed."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self._stderr.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.proc.wait()
