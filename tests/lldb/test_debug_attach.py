"""debug_attach by pid: refused by default with the setting named; with REA_DEBUG_ATTACH=same-user, a server
attaches to a program the test started outside it, reads its state, stops it at a function and detaches, and the
program runs on. The test touches no process but the ones it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.process import procfs
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.lldb.conftest import require_lldb

# Counts in a global and appends a line per tick to the file it is given: the test sees it run on.
TICKER_C = r"""
#include <stdio.h>
#include <unistd.h>
long ticks;
long tick(long step) { ticks += step; return ticks; }
int main(int argc, char **argv) {
    FILE *out = fopen(argv[1], "a");
    for (;;) { fprintf(out, "%ld\n", tick(3)); fflush(out); usleep(20000); }
}
"""

SERVER = r"""
import json, sys
from rea import registry
from rea.session import Session
from rea.testing import result_of
s = Session(registry.load())
pid, ticks = int(sys.argv[1]), sys.argv[2]
out = {"attached": result_of(s, "debug_attach", {"pid": pid})}
sid = out["attached"]["session"]
out["state"] = result_of(s, "debug_state", {"session": sid})
out["ticks"] = result_of(s, "debug_read_memory", {"session": sid, "address": ticks, "length": 8})["memory"]
result_of(s, "debug_breakpoint", {"session": sid, "procedure": "tick"})
out["hit"] = result_of(s, "debug_continue", {"session": sid})["stop"]
out["ended"] = result_of(s, "debug_end", {"session": sid})
# Again, left stopped at a breakpoint when the MCP session closes: the close detaches too.
again = result_of(s, "debug_attach", {"pid": pid})["session"]
result_of(s, "debug_breakpoint", {"session": again, "procedure": "tick"})
out["again"] = result_of(s, "debug_continue", {"session": again})["stop"]
out["lineage"] = result_of(s, "binary_session", {})["analysis_run"]["process_lineage"]["snapshots"]
s.close()
print(json.dumps(out), flush=True)
"""


@pytest.fixture(scope="session")
def ticker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_lldb()
    return toolchains.compile_c(TICKER_C, tmp_path_factory.mktemp("lldb-attach"), "ticker", "-O0", "-g")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _running(pid: int) -> bool:
    info = procfs.read(pid)
    return info is not None and info.state not in ("Z", "X", "t", "T")


def test_attach_is_refused_by_default_and_names_the_setting(
    rea_session: Session, ticker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REA_DEBUG_ATTACH", raising=False)
    program = subprocess.Popen([str(ticker), str(tmp_path / "ticks")])
    try:
        with pytest.raises(ReaError) as info:
            call_tool(rea_session, "debug_attach", {"pid": program.pid})
        assert info.value.code == "access_denied" and info.value.details["setting"] == "REA_DEBUG_ATTACH"
        assert "REA_DEBUG_ATTACH=same-user" in (info.value.remediation or "")
        # Allowed, a process the server itself started (here: a child of the test, which is the server) is still
        # rea's own and refused, as is the server.
        monkeypatch.setenv("REA_DEBUG_ATTACH", "same-user")
        for pid in (program.pid, os.getpid()):
            with pytest.raises(ReaError) as own:
                call_tool(rea_session, "debug_attach", {"pid": pid})
            assert own.value.details["reason"] == "rea_process"
        assert _running(program.pid)
    finally:
        program.kill()
        program.wait(timeout=10)


def test_a_same_user_process_is_attached_read_stopped_and_detached(ticker: Path, tmp_path: Path) -> None:
    nm = toolchains.require("nm")
    listing = subprocess.run([nm, str(ticker)], check=True, capture_output=True, text=True).stdout
    ticks_address = next(line.split()[0] for line in listing.splitlines() if line.endswith(" ticks"))
    log = tmp_path / "ticks"
    # The operator's program: started by the test, beside the server (not under it).
    program = subprocess.Popen([str(ticker), str(log)])
    try:
        deadline = time.monotonic() + 10
        while (not log.exists() or _lines(log) < 3) and time.monotonic() < deadline:
            time.sleep(0.02)
        script = tmp_path / "server.py"
        script.write_text(SERVER)
        env = {**os.environ, "REA_DEBUG_ATTACH": "same-user"}
        ran = subprocess.run(
            [sys.executable, str(script), str(program.pid), f"0x{int(ticks_address, 16):x}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        out = json.loads(ran.stdout.splitlines()[-1])
        attached = out["attached"]
        assert attached["pid"] == program.pid and attached["stop"]["state"] == "stopped"
        assert attached["isolation"]["sandbox"] == "none" and "REA_DEBUG_ATTACH" in attached["isolation"]["reason"]
        assert out["state"]["registers"]["rip"] and out["state"]["threads"]
        # The global is read at its static address (the slide applied): three per tick, so far.
        ticks = int.from_bytes(bytes.fromhex(out["ticks"]["hex"]), "little")
        assert ticks >= 9 and ticks % 3 == 0
        hit = out["hit"]
        assert hit["reason"] == "breakpoint" and hit["procedure"] == "tick" and int(hit["arguments"]["rdi"], 16) == 3
        assert out["ended"]["ended"] and out["ended"]["stop"]["state"] == "detached"
        assert out["again"]["procedure"] == "tick"
        # The server's workers are gone; the program is untraced and runs on, past the removed breakpoints (one
        # left in its code would kill it with SIGTRAP at the next tick).
        snaps = [s for s in out["lineage"] if s["event"] == "debugger_attached"]
        assert len(snaps) == 2 and all(program.pid not in s["descendants"] for s in snaps)
        assert all(procfs.read(s["pid"]) is None for s in snaps)
        before = _lines(log)
        time.sleep(0.3)
        assert _running(program.pid) and program.poll() is None and _lines(log) > before
        status = Path(f"/proc/{program.pid}/status").read_text()
        assert "TracerPid:\t0" in status
    finally:
        program.kill()
        program.wait(timeout=10)
