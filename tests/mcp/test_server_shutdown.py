"""``rea serve`` stopped by SIGTERM or SIGINT with owned processes in flight, and started again after a SIGKILL.

In flight: a radare2 engine worker, LLDB under observe_native_calls, a sandboxed (bubblewrap) process scenario
and an owned Chromium in a browser scenario. SIGTERM/SIGINT cancel the calls, release every owned process and
private directory, and exit 0. After SIGKILL the owned processes die with the server (parent-death signal);
what it could not remove is removed by the next start, which proves the owner gone and never touches a live
owner's or another user's directory.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.process import leftovers
from rea.process import procfs
from tests import toolchains
from tests.browsers import no_browser_left  # noqa: F401  (the module-scoped check)
from tests.cdp.site import Site
from tests.mcp.harness import server_env

# Chromium started by a server these tests stop or kill is gone with it (tests.browsers names any left).
pytestmark = pytest.mark.usefixtures("no_browser_left")

SLEEPER = r"""
#include <stdio.h>
#include <unistd.h>
int tick(int n) { return n + 1; }
int main(void) { printf("sleeping\n"); fflush(stdout); sleep(120); return tick(0); }
"""
SECRET = "shutdown.secret@example.test"


class RawServer:
    """``rea serve`` driven line by line, so the test can signal it while calls are in flight."""

    def __init__(self, tmp: Path, **env: str) -> None:
        self.tmp = tmp
        for sub in ("tmp", "home"):
            (tmp / sub).mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rea.cli.main", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=tmp,
            env=server_env(TMPDIR=str(tmp / "tmp"), HOME=str(tmp / "home"), REA_CACHE_MAX_BYTES="0", **env),
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "shutdown-test", "version": "1"},
            },
        )
        self.wait_reply(0, 60)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(json.loads(line))

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        rid = self._next
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def call(self, name: str, args: dict[str, Any]) -> int:
        return self.request("tools/call", {"name": name, "arguments": args})

    def wait_reply(self, rid: int, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                reply = self.replies.get(timeout=0.1)
            except queue.Empty:
                continue
            if reply.get("id") == rid:
                return reply
        raise AssertionError(f"no reply to request {rid} in {timeout_s} s")

    def tree(self) -> list[procfs.ProcInfo]:
        return procfs.descendants(self.proc.pid, procfs.scan())

    def private_dirs(self) -> list[str]:
        return sorted(n for n in os.listdir(self.tmp / "tmp") if n.startswith("rea-"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _wait_for(server: RawServer, kinds: dict[str, str], timeout_s: float = 90) -> list[procfs.ProcInfo]:
    """Wait until the server's tree has a process whose command line contains each of ``kinds``' values."""
    deadline = time.monotonic() + timeout_s
    missing = dict(kinds)
    while time.monotonic() < deadline:
        tree = server.tree()
        lines = [_cmdline(i.pid) for i in tree]
        missing = {k: v for k, v in kinds.items() if not any(v in line for line in lines)}
        if not missing:
            return tree
        time.sleep(0.2)
    answered = []
    while not server.replies.empty():
        answered.append(json.dumps(server.replies.get())[:400])
    raise AssertionError(f"owned processes never started: {sorted(missing)}; answers: {answered}")


def _alive(infos: list[procfs.ProcInfo]) -> list[int]:
    return [i.pid for i in infos if procfs.same_process(i)]


def _in_rea_cgroup(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            return any(":/rea/" in line or "/rea/" in line.split(":", 2)[-1] for line in fh)
    except OSError:
        return True  # gone by now


def _gone_within(infos: list[procfs.ProcInfo], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := _alive(infos)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    out = tmp_path_factory.mktemp("sleeper")
    (out / "sleeper.c").write_text(SLEEPER)
    subprocess.run(
        [gcc, "-O0", "-g", "-o", str(out / "sleeper"), str(out / "sleeper.c")], check=True, capture_output=True
    )
    return out / "sleeper"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    yield served
    served.close()


def _start_work(server: RawServer, sleeper: Path, site: Site | None) -> dict[str, str]:
    """Open radare2 on the sleeper, then leave LLDB, a sandboxed scenario and (with a site) Chromium in flight."""
    opened = server.wait_reply(server.call("open_binary", {"path": str(sleeper), "provider_id": "radare2"}), 120)
    assert not opened["result"].get("isError"), opened
    listed = server.wait_reply(server.call("list_procedures", {}), 120)  # starts the engine's worker
    assert not listed["result"].get("isError"), listed
    kinds = {"radare2 worker": "rea_plugins.radare2", "bubblewrap": "bwrap", "lldb worker": "rea_plugins.lldb"}
    server.call("observe_native_calls", {"executable": str(sleeper), "functions": ["tick"]})
    server.call(
        "capture_process_scenario",
        {
            "executable": str(sleeper),
            "working_directory": str(server.tmp),
            "sandbox": "required",
            "timeout_ms": 120_000,
        },
    )
    if site is not None:
        kinds["chromium"] = "--remote-debugging"
        server.call(
            "capture_browser_scenario",
            {
                "start_url": {"url": site.origin + "/"},
                "secrets": [{"secret_id": "email", "environment_variable": "REA_TEST_SUBSCRIBER"}],
                "actions": [
                    {
                        "step_id": "type-email",
                        "action": "fill",
                        "locator": {"kind": "test_id", "value": "email"},
                        "value": {"source": "secret", "secret_id": "email"},
                    },
                    {
                        "step_id": "never",
                        "action": "wait_for",
                        "locator": {"kind": "css", "selector": "#never"},
                        "state": "visible",
                    },
                ],
                "limits": {"step_timeout_ms": 120_000},
            },
        )
    return kinds


def _require_engines(browser: bool) -> None:
    toolchains.require("bwrap")
    if browser:
        toolchains.require("chromium")
    from tests.lldb.conftest import require_lldb
    from tests.radare2.conftest import require_radare2

    require_radare2()
    require_lldb()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_releases_every_owned_process_and_directory_and_exits_0(
    signum: int, sleeper: Path, site: Site, tmp_path: Path
) -> None:
    browser = signum == signal.SIGTERM  # one browser run is enough; SIGINT takes the same path
    _require_engines(browser)
    server = RawServer(tmp_path, REA_TEST_SUBSCRIBER=SECRET)
    try:
        kinds = _start_work(server, sleeper, site if browser else None)
        tree = _wait_for(server, kinds)
        assert len(server.private_dirs()) >= len(kinds)
        started = time.monotonic()
        server.proc.send_signal(signum)
        code = server.proc.wait(timeout=60)
        took = time.monotonic() - started
        assert code == 0, f"rea serve exited with {code} after {signum}"
        assert _gone_within(tree, 3) == [], "owned processes outlived the server"
        assert server.private_dirs() == [], "private directories left behind"
        assert took < 30
    finally:
        server.close()


def test_a_start_after_sigkill_removes_what_the_killed_server_left(sleeper: Path, site: Site, tmp_path: Path) -> None:
    _require_engines(browser=True)
    first = RawServer(tmp_path, REA_TEST_SUBSCRIBER=SECRET)
    try:
        # A browser scenario in flight has typed the secret into its page (its profile may hold it on disk).
        tree = _wait_for(first, _start_work(first, sleeper, site))
        left = first.private_dirs()
        assert left
        first.proc.kill()
        first.proc.wait()
        # Kept from before: owned processes die with the server within 3 s (parent-death signal), but for a sandbox
        # caught in bubblewrap's window (its pid 1 arms that signal after forking the program): the next start
        # ends what is left in the dead server's pids cgroups.
        raced = [i for i in tree if i.pid in _gone_within(tree, 3)]
        assert all(_in_rea_cgroup(i.pid) for i in raced), [_cmdline(i.pid)[:200] for i in raced]
    finally:
        first.close()
    tmp = tmp_path / "tmp"
    assert set(left) <= set(os.listdir(tmp))
    # The browser's profile is marked as one that can hold secrets: the sweep removes it before the rest.
    marks = [
        msgspec.json.decode((tmp / name / leftovers.OWNER_FILE).read_bytes(), type=leftovers.PrivateMark)
        for name in left
        if (tmp / name / leftovers.OWNER_FILE).exists()
    ]
    assert any(m.holds_secrets for m in marks) and not all(m.holds_secrets for m in marks)
    # An export killed mid-write: its staging file, noted by a process that then died of SIGKILL.
    exports = tmp_path / "exports"
    exports.mkdir()
    staging = exports / ".rea-export-killed.json.tmp"
    script = (
        "import os, signal, sys\nfrom rea.process import leftovers\n"
        "with leftovers.staging_noted(sys.argv[1], '.rea-export-'):\n"
        "    open(sys.argv[1], 'w').write('{partial')\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(staging)], env=server_env(TMPDIR=str(tmp)))
    assert killed.returncode == -signal.SIGKILL and staging.exists()
    # Not this start's to remove: a live owner's directory, another user's, and one with no owner marker.
    live = tmp / "rea-live-owner"
    live.mkdir()
    leftovers.mark(str(live))
    stranger = tmp / "rea-stranger"
    stranger.mkdir()
    (stranger / leftovers.OWNER_FILE).write_bytes((tmp / left[0] / leftovers.OWNER_FILE).read_bytes())
    if os.getuid() == 0:
        os.chown(stranger, 65534, 65534)
        os.chown(stranger / leftovers.OWNER_FILE, 65534, 65534)
    unmarked = tmp / "rea-unmarked"
    unmarked.mkdir()
    second = RawServer(tmp_path)
    try:
        assert _gone_within(raced, 3) == [], "the next start left the killed server's sandboxes running"
        remaining = set(os.listdir(tmp))
        assert not set(left) & remaining, "the killed server's private directories are still there"
        assert not staging.exists(), "the killed export's staging file is still there"
        assert not [n for n in remaining if n.startswith(leftovers.NOTE_PREFIX)]
        kept = {"rea-live-owner", "rea-unmarked"} | ({"rea-stranger"} if os.getuid() == 0 else set())
        assert kept <= remaining
        holding = [str(p) for p in tmp.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
        assert holding == [], "the secret is still on disk"
    finally:
        second.close()
