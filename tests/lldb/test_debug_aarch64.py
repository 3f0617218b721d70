"""Debug sessions on an AArch64 program on an x86-64 host: LLDB drives it under qemu-user's gdb stub, with the
same static addresses, breakpoints by name, argument registers and steps as a native program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.lldb.conftest import require_lldb
from tests.lldb.conftest import symbol_address

SCALE_C = r"""
#include <stdio.h>
#include <stdlib.h>
long scale(long value, long factor, long offset) { return value * factor + offset; }
int main(int argc, char **argv) {
    long total = 0;
    for (long i = 1; i <= 2; i++) total += scale(i * 100, argc + 2, 5);
    printf("total=%ld %s\n", total, getenv("GREETING") ? getenv("GREETING") : "-");
    return 0;
}
"""


@pytest.fixture(scope="session")
def arm64_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_lldb()
    out = tmp_path_factory.mktemp("lldb-arm64")
    return toolchains.compile_c(SCALE_C, out, "scale", "-O0", "-g", "-fpie", "-pie", compiler="aarch64-linux-gnu-gcc")


def _call(session: Session, name: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = result_of(session, name, args)
    return out


def test_break_by_name_and_read_arguments_on_aarch64(rea_session: Session, arm64_program: Path) -> None:
    toolchains.require("qemu-aarch64")
    scale = symbol_address(arm64_program, "scale")
    result_of(rea_session, "open_binary", {"path": str(arm64_program)})
    launched = _call(rea_session, "debug_launch", {"arguments": ["x"], "environment": {"GREETING": "hello"}})
    sid = launched["session"]
    assert launched["emulator"] == "qemu-aarch64" and launched["isolation"]["sandbox"] == "bubblewrap"
    assert launched["stop"]["state"] == "stopped" and launched["stop"]["procedure"] == "main"
    assert int(launched["load_bias"], 16) != 0  # a PIE, placed by qemu: the slide is applied by rea

    bp = _call(rea_session, "debug_breakpoint", {"session": sid, "procedure": "scale"})["breakpoint"]
    assert bp["locations"][0]["address"] == hex(scale)
    first = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert first["reason"] == "breakpoint" and first["procedure"] == "scale" and first["address"] == hex(scale)
    # AAPCS64: x0, x1, x2 hold scale(100, argc + 2, 5) with argc 2.
    assert [int(first["arguments"][r], 16) for r in ("x0", "x1", "x2")] == [100, 4, 5]
    state = _call(rea_session, "debug_state", {"session": sid})
    assert state["backtrace"][1]["procedure"].startswith("main+0x") and "x30" in state["registers"]

    # One instruction stays in scale; out returns to main; the second call shows in procedure_info.
    stepped = _call(rea_session, "debug_step", {"session": sid, "kind": "instruction"})["stop"]
    assert stepped["procedure"].startswith("scale+0x")
    out = _call(rea_session, "debug_step", {"session": sid, "kind": "out"})["stop"]
    assert out["procedure"].startswith("main+0x")
    second = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert int(second["arguments"]["x0"], 16) == 200
    runtime = _call(rea_session, "procedure_info", {"procedure": hex(scale)})["runtime"]
    assert runtime["hits"] == 2 and int(runtime["last_arguments"]["x1"], 16) == 4

    _call(rea_session, "debug_breakpoint", {"session": sid, "action": "delete", "id": bp["id"]})
    ran = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert ran["state"] == "exited" and ran["exit"]["exit_code"] == 0
    stdout = _call(rea_session, "debug_state", {"session": sid})["output"]["stdout"]["text"]
    assert stdout == "total=1210 hello\n"  # (100 * 4 + 5) + (200 * 4 + 5)
    assert _call(rea_session, "debug_end", {"session": sid})["ended"]


def test_stop_at_entry_and_break_at_a_static_address(rea_session: Session, arm64_program: Path) -> None:
    toolchains.require("qemu-aarch64")
    scale = hex(symbol_address(arm64_program, "scale"))
    launched = _call(rea_session, "debug_launch", {"executable": str(arm64_program), "stop_at": "entry"})
    sid = launched["session"]
    assert launched["stop"]["reason"] == "entry"
    _call(rea_session, "debug_breakpoint", {"session": sid, "address": scale})
    stop = _call(rea_session, "debug_continue", {"session": sid})["stop"]
    assert stop["address"] == scale and int(stop["pc"], 16) != int(scale, 16) and stop["function"] == "scale"
    assert int(stop["arguments"]["x0"], 16) == 100
    _call(rea_session, "debug_end", {"session": sid})


def test_without_qemu_user_the_launch_says_what_to_install(
    rea_session: Session, arm64_program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no qemu-aarch64 on it
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "debug_launch", {"executable": str(arm64_program)})
    assert info.value.code == "capability_unavailable" and info.value.details["reason"] == "emulator_missing"
    assert "qemu-user" in (info.value.remediation or "")
