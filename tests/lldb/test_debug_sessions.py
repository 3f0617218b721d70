"""Debug sessions under LLDB on a PIE compiled in the session: break by name, notebook name and static address,
read arguments, step over and out, read a struct through a declared type, watch a global, end with no process
left, and the ends no call asks for (the MCP session closing, an idle timeout)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.lldb.conftest import require_lldb
from tests.lldb.conftest import symbol_address
from tests.waiting import still_running

POINT_C = r"""
#include <stdio.h>
struct point { int x; int y; const char *label; };
int hits;
int helper(int a, int b) { hits++; return a * 10 + b; }
int move(struct point *p, int dx) { p->x += dx; p->y -= dx; return helper(p->x, p->y); }
int main(void) {
    struct point p = {3, 4, "origin"};
    int total = 0;
    for (int i = 0; i < 3; i++) total += move(&p, i + 1);
    printf("total=%d hits=%d\n", total, hits);
    return 0;
}
"""


@pytest.fixture(scope="session")
def point_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_lldb()
    return toolchains.compile_c(POINT_C, tmp_path_factory.mktemp("lldb-debug"), "point", "-O0", "-g", "-fpie", "-pie")


def _launched_pids(session: Session) -> list[int]:
    lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]
    snaps = [
        s for s in lineage["snapshots"] if s["event"] == "debuggee_launched" and s["resource"] == "lldb-debug-worker"
    ]
    assert snaps and snaps[-1]["status"] == "verified" and len(snaps[-1]["descendants"]) >= 2
    return [snaps[-1]["pid"], *snaps[-1]["descendants"]]


def _call(session: Session, name: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = result_of(session, name, args)
    return out


def test_break_read_step_watch_and_end(rea_session: Session, point_program: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(point_program)})
    result_of(rea_session, "declare_c_types", {"declarations": "struct point { int x; int y; const char *label; };"})
    launched = _call(rea_session, "debug_launch", {})
    sid = launched["session"]
    assert launched["stop"]["state"] == "stopped" and launched["stop"]["procedure"] == "main"
    bias = int(launched["load_bias"], 16)
    assert bias != 0  # a PIE: loaded away from its link address

    # Break at move by name: its first argument is &p, read through the declared struct.
    bp = _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "move"})["breakpoint"]
    assert bp["locations"][0]["address"] == hex(symbol_address(point_program, "move"))
    stop = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert stop["reason"] == "breakpoint" and stop["procedure"] == "move" and stop["breakpoint"] == bp["id"]
    state = _call(rea_session, "debug_state", {"session": sid})
    assert int(state["registers"]["rsi"], 16) == 1
    assert state["backtrace"][0]["procedure"] == "move" and state["backtrace"][1]["procedure"].startswith("main+0x")
    assert int(state["backtrace"][1]["pc"], 16) - int(state["backtrace"][1]["address"], 16) == bias
    point = _call(
        rea_session, "debug_read_memory", {"session": sid, "address": state["registers"]["rdi"], "type": "struct point"}
    )["memory"]
    values = {v["name"]: v["value"] for v in point["values"]}
    assert values["x"] == 3 and values["y"] == 4 and point["length"] == 16
    label = _call(rea_session, "debug_read_memory", {"session": sid, "address": values["label"], "length": 7})
    assert bytes.fromhex(label["memory"]["hex"]) == b"origin\0"

    # One instruction keeps it in move; stepping over its (single) line returns to main, helper's call included.
    stepped = _call(rea_session, "debug_step", {"session": sid, "kind": "instruction"})["stop"]
    assert stepped["state"] == "stopped" and stepped["reason"] == "step" and stepped["procedure"].startswith("move+")
    over = _call(rea_session, "debug_step", {"session": sid, "kind": "over"})["stop"]
    assert over["reason"] == "step" and over["procedure"].startswith("main+")
    # Into helper by its breakpoint (the second call: move(&p, 2) calls helper(6, 1)), and out again.
    _call(rea_session, "debug_breakpoint", {"session": sid, "action": "delete", "id": bp["id"]})
    helper_bp = _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "helper"})["breakpoint"]
    at_helper = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert at_helper["procedure"] == "helper"
    regs = _call(rea_session, "debug_state", {"session": sid})["registers"]
    assert (int(regs["rdi"], 16), int(regs["rsi"], 16)) == (6, 1)
    out = _call(rea_session, "debug_step", {"session": sid, "kind": "out"})["stop"]
    assert out["reason"] == "step" and out["procedure"].startswith("move+")

    # Watch the global: the next write (the third call's hits++) stops in helper; read it by its static address.
    listed = _call(rea_session, "debug_breakpoint", {"session": sid, "action": "list"})["breakpoints"]
    assert [(b["id"], b["kind"], b["hit_count"]) for b in listed] == [(helper_bp["id"], "name", 1)]
    _call(rea_session, "debug_breakpoint", {"session": sid, "action": "delete", "id": helper_bp["id"]})
    watch = _call(rea_session, "debug_breakpoint", {"session": sid, "watch": {"variable": "hits"}})["breakpoint"]
    assert watch["spec"]["address"] == hex(symbol_address(point_program, "hits"))
    watched = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert watched["reason"] == "watchpoint" and watched["procedure"].startswith("helper+")
    hits = _call(rea_session, "debug_read_memory", {"session": sid, "address": watch["spec"]["address"], "length": 4})
    assert int.from_bytes(bytes.fromhex(hits["memory"]["hex"]), "little") == 3

    pids = _launched_pids(rea_session)
    assert still_running(pids) == pids
    ended = _call(rea_session, "debug_end", {"session": sid})
    assert ended["ended"] and ended["stop"]["state"] == "exited"
    assert still_running(pids) == []
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "debug_state", {"session": sid})
    assert info.value.details["reason"] == "debug_end"


def test_static_addresses_and_notebook_names_on_a_pie(rea_session: Session, point_program: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(point_program)})
    helper = symbol_address(point_program, "helper")
    result_of(rea_session, "set_address_name", {"address": hex(helper), "name": "tens_plus"})
    sid = _call(rea_session, "debug_launch", {"stop_at": "entry"})["session"]
    bp = _call(rea_session, "debug_breakpoint", {"session": sid, "address": hex(helper)})["breakpoint"]
    continued = call_tool(rea_session, "debug_continue", {"session": sid}).evidence
    assert continued is not None
    stop = msgspec.to_builtins(continued.normalized_result)["stop"]
    assert stop["address"] == hex(helper) and stop["breakpoint"] == bp["id"]
    # The stop is Evidence located at the static procedure it hit.
    assert continued.locations == [{"address": hex(helper), "procedure": "tens_plus"}]
    assert stop["procedure"] == "tens_plus" and int(stop["pc"], 16) != helper
    _call(rea_session, "debug_breakpoint", {"session": sid, "action": "delete", "id": bp["id"]})
    by_name = _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "tens_plus", "ignore_count": 1})
    assert by_name["breakpoint"]["locations"][0]["address"] == hex(helper)
    again = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    # The first of the two remaining calls is skipped by the hit count.
    regs = _call(rea_session, "debug_state", {"session": sid})["registers"]
    assert again["procedure"] == "tens_plus" and int(regs["rdi"], 16) == 9  # helper(9, -2), not helper(6, 1)
    _call(rea_session, "debug_write_memory", {"session": sid, "register": "rdi", "value": 7})
    ran = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert ran["state"] == "exited" and ran["exit"]["exit_code"] == 0
    output = _call(rea_session, "debug_state", {"session": sid})["output"]["stdout"]["text"]
    assert output.startswith("total=") and "hits=3" in output
    _call(rea_session, "debug_end", {"session": sid})


def test_sessions_end_with_the_mcp_session_and_when_idle(rea_registry: Registry, point_program: Path) -> None:
    session = Session(rea_registry)
    first = _call(session, "debug_launch", {"executable": str(point_program)})["session"]
    second = _call(session, "debug_launch", {"executable": str(point_program), "idle_timeout_s": 10})["session"]
    assert first != second
    lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]["snapshots"]
    pids = [p for s in lineage if s["event"] == "debuggee_launched" for p in [s["pid"], *s["descendants"]]]
    assert len(still_running(pids)) == len(pids) >= 6
    time.sleep(12.5)
    with pytest.raises(ReaError) as info:
        call_tool(session, "debug_state", {"session": second})
    assert info.value.details["reason"] == "idle_timeout"
    assert _call(session, "debug_state", {"session": first})["stop"]["state"] == "stopped"
    session.close()
    deadline = time.monotonic() + 10
    while still_running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(pids) == []


CRASHING_SERVER = r"""
import json, sys, time
from rea import registry
from rea.session import Session
from rea.testing import result_of
s = Session(registry.load())
result_of(s, "debug_launch", {"executable": sys.argv[1]})
lineage = result_of(s, "binary_session", {})["analysis_run"]["process_lineage"]["snapshots"]
pids = [p for x in lineage if x["event"] == "debuggee_launched" for p in [x["pid"], *x["descendants"]]]
print(json.dumps(pids), flush=True)
time.sleep(120)
"""


def test_nothing_is_left_after_the_server_is_killed(point_program: Path, tmp_path: Path) -> None:
    import json
    import signal
    import sys

    script = tmp_path / "server.py"
    script.write_text(CRASHING_SERVER)
    server = subprocess.Popen(
        [sys.executable, str(script), str(point_program)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        pids = json.loads(server.stdout.readline())
        assert len(still_running(pids)) == len(pids) >= 3
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    deadline = time.monotonic() + 10
    while still_running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(pids) == []


def test_a_program_that_floods_and_never_stops_cannot_block_the_calls(rea_session: Session, tmp_path: Path) -> None:
    gcc = toolchains.require("gcc")
    require_lldb()
    (tmp_path / "flood.c").write_text('#include <stdio.h>\nint main(void) { for (;;) puts("flood"); }\n')
    subprocess.run([gcc, "-O0", "-o", str(tmp_path / "flood"), str(tmp_path / "flood.c")], check=True, timeout=120)
    started = time.monotonic()
    launched = _call(
        rea_session, "debug_launch", {"executable": str(tmp_path / "flood"), "stop_at": "run", "wait_ms": 300}
    )
    sid = launched["session"]
    # Still running after the wait, or stopped by the output file's size cap (SIGXFSZ): either way, an answer.
    assert launched["stop"]["state"] == "running" or launched["stop"].get("signal") == "SIGXFSZ"
    # Waiting again answers again, within its wait.
    before = time.monotonic()
    waited = _call(rea_session, "debug_continue", {"session": sid, "wait_ms": 1500})["stop"]
    # Or, continued from that stop, ended by the signal.
    ended = (waited.get("exit") or {}).get("description") or ""
    assert waited["state"] == "running" or waited.get("signal") == "SIGXFSZ" or "SIGXFSZ" in ended
    assert time.monotonic() - before < 15
    stopped = _call(rea_session, "debug_continue", {"session": sid, "interrupt": True})["stop"]
    assert stopped["state"] in ("stopped", "exited")
    output = _call(rea_session, "debug_state", {"session": sid, "max_frames": 2})["output"]["stdout"]
    assert output["bytes"] > 16 * 1024 and output["truncated"] and len(output["text"]) == 1024
    more = _call(rea_session, "debug_state", {"session": sid, "output_bytes": 8192})["output"]["stdout"]
    assert len(more["text"]) == 8192
    assert output["text"].count("flood") > 100
    _call(rea_session, "debug_end", {"session": sid})
    assert time.monotonic() - started < 60


def test_an_end_by_a_signal_passed_on_is_named(rea_session: Session, tmp_path: Path) -> None:
    gcc = toolchains.require("gcc")
    require_lldb()
    source = "#include <signal.h>\n#include <unistd.h>\nint main(void) { kill(getpid(), SIGUSR1); return 3; }\n"
    (tmp_path / "usr1.c").write_text(source)
    subprocess.run([gcc, "-O0", "-o", str(tmp_path / "usr1"), str(tmp_path / "usr1.c")], check=True, timeout=120)
    launched = _call(
        rea_session, "debug_launch", {"executable": str(tmp_path / "usr1"), "stop_at": "run", "wait_ms": 10_000}
    )
    assert launched["stop"].get("signal") == "SIGUSR1"
    ended = _call(rea_session, "debug_continue", {"session": launched["session"], "wait_ms": 10_000})["stop"]
    # LLDB gives the signal's number as the status; the answer says which signal that was.
    assert ended["state"] == "exited" and ended["exit"]["exit_code"] == signal.SIGUSR1
    assert "SIGUSR1" in ended["exit"]["description"]
    _call(rea_session, "debug_end", {"session": launched["session"]})


def test_a_source_line_breakpoint_with_a_condition(rea_session: Session, point_program: Path) -> None:
    sid = _call(rea_session, "debug_launch", {"executable": str(point_program)})["session"]
    bp = _call(rea_session, "debug_breakpoint", {"session": sid, "source_line": "point.c:6", "condition": "dx == 2"})
    assert bp["breakpoint"]["condition"] == "dx == 2" and bp["breakpoint"]["kind"] == "source_line"
    stop = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert stop["source"] == "point.c:6" and stop["procedure"].startswith("move")
    # Of the three calls only dx == 2 stops: helper ran once or twice by then (the line's location may follow
    # its call), and the next continue runs to the end.
    hits = hex(symbol_address(point_program, "hits"))
    read = _call(rea_session, "debug_read_memory", {"session": sid, "address": hits, "length": 4})["memory"]
    assert int.from_bytes(bytes.fromhex(read["hex"]), "little") in (1, 2)
    assert _call(rea_session, "debug_continue", {"session": sid})["stop"]["state"] == "exited"
    _call(rea_session, "debug_end", {"session": sid})


def test_a_forked_child_goes_with_the_session(rea_session: Session, tmp_path: Path) -> None:
    gcc = toolchains.require("gcc")
    require_lldb()
    source = (
        "#include <unistd.h>\n#include <stdio.h>\n"
        "int ready(int pid) { return pid; }\n"
        "int main(void) { int pid = fork(); if (pid == 0) { for (;;) sleep(1); } ready(pid); for (;;) sleep(1); }\n"
    )
    (tmp_path / "forks.c").write_text(source)
    subprocess.run([gcc, "-O0", "-o", str(tmp_path / "forks"), str(tmp_path / "forks.c")], check=True, timeout=120)
    sid = _call(rea_session, "debug_launch", {"executable": str(tmp_path / "forks")})["session"]
    _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "ready"})
    stop = _call(rea_session, "debug_continue", {"session": sid, "wait_ms": 10_000})["stop"]
    assert stop["procedure"] == "ready"
    # The worker's descendants now include the child the program forked (not debugged: LLDB follows the parent).
    proc = rea_session.state["lldb.debug_sessions"].sessions[sid].channel.proc
    pids = [proc.pid, *proc.observe("forked")["descendants"]]
    assert len(still_running(pids)) == len(pids)
    assert sum(1 for pid in pids if Path(f"/proc/{pid}/comm").read_text().strip() == "forks") == 2
    _call(rea_session, "debug_end", {"session": sid})
    deadline = time.monotonic() + 10
    while still_running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(pids) == []


def test_detach_and_attach_again(rea_session: Session, tmp_path: Path) -> None:
    gcc = toolchains.require("gcc")
    require_lldb()
    source = (
        "#include <unistd.h>\nint ticks;\nvoid tick(void) { ticks++; }\n"
        "int main(void) { for (;;) { tick(); usleep(10000); } }\n"
    )
    (tmp_path / "ticker.c").write_text(source)
    subprocess.run([gcc, "-O0", "-o", str(tmp_path / "ticker"), str(tmp_path / "ticker.c")], check=True, timeout=120)
    sid = _call(rea_session, "debug_launch", {"executable": str(tmp_path / "ticker")})["session"]
    detached = _call(rea_session, "debug_end", {"session": sid, "detach": True})
    assert detached["stop"]["state"] == "detached" and not detached.get("ended")
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "debug_continue", {"session": sid})
    assert info.value.details["reason"] == "program_detached"
    time.sleep(0.3)  # it runs on: tick is called every 10 ms
    attached = _call(rea_session, "debug_attach", {"session": sid})["stop"]
    assert attached["state"] == "stopped"
    ticks = hex(symbol_address(tmp_path / "ticker", "ticks"))
    read = _call(rea_session, "debug_read_memory", {"session": sid, "address": ticks, "length": 4})["memory"]
    assert int.from_bytes(bytes.fromhex(read["hex"]), "little") >= 5
    _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "tick"})
    assert _call(rea_session, "debug_continue", {"session": sid})["stop"]["procedure"] == "tick"
    with pytest.raises(ReaError) as again:
        call_tool(rea_session, "debug_attach", {"session": sid})
    assert again.value.details["reason"] == "not_detached"
    pids = _launched_pids(rea_session)
    _call(rea_session, "debug_end", {"session": sid})
    assert still_running(pids) == []


def test_procedure_info_shows_what_the_debugger_saw(rea_session: Session, point_program: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(point_program)})
    sid = _call(rea_session, "debug_launch", {})["session"]
    _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "helper"})
    first = call_tool(rea_session, "debug_continue", {"session": sid}).evidence
    assert first is not None
    # A stop at the entry carries the calling convention's argument registers: helper(4, 3), then helper(6, 1).
    stop = msgspec.to_builtins(first.normalized_result)["stop"]
    arguments = stop["arguments"]
    assert stop["function"] == "helper" and (int(arguments["rdi"], 16), int(arguments["rsi"], 16)) == (4, 3)
    # Looking at the same stop again is no second hit.
    _call(rea_session, "debug_state", {"session": sid})
    second = call_tool(rea_session, "debug_continue", {"session": sid}).evidence
    assert second is not None
    # By address: another test of this file names helper in the notebook, which outlives the MCP session.
    info = _call(rea_session, "procedure_info", {"procedure": hex(symbol_address(point_program, "helper"))})
    runtime = info["runtime"]
    assert runtime["hits"] == 2 and runtime["debug_session"] == sid
    assert runtime["evidence_id"] == second.evidence_id
    assert (int(runtime["last_arguments"]["rdi"], 16), int(runtime["last_arguments"]["rsi"], 16)) == (6, 1)
    assert set(runtime["last_arguments"]) == {"rdi", "rsi", "rdx", "rcx", "r8", "r9"}
    # main was stopped at once (the launch); move never: no runtime field, the answer stays as it was.
    assert _call(rea_session, "procedure_info", {"procedure": "main"})["runtime"]["hits"] == 1
    assert "runtime" not in _call(rea_session, "procedure_info", {"procedure": "move"})
    _call(rea_session, "debug_end", {"session": sid})
