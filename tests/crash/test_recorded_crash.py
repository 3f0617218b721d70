"""inspect_recorded_crash on the core of a program crashed on purpose, checked against its source: the crashing
line's procedure (by the DWARF line table, addr2line), the call chain, the signal and the faulting address."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import crashfixtures
import msgspec
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.mcp.harness import call_structured
from tests.mcp.harness import connect


def _crashed(result: dict[str, Any]) -> dict[str, Any]:
    (thread,) = [t for t in result["threads"]["items"] if t["crashed"]]
    return dict(thread)


def _source_line(program: Path, static_address: str) -> tuple[str, int]:
    """The function and source line the compiler's line table gives for a link address."""
    addr2line = toolchains.require("objdump").replace("objdump", "addr2line")
    out = subprocess.run(
        [addr2line, "-f", "-e", str(program), static_address], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\n")
    return out[0], int(out[1].rsplit(":", 1)[1].split()[0])


def _check_crash(result: dict[str, Any], program: Path) -> None:
    assert result["signal"]["name"] == "SIGSEGV"
    assert result["threads"]["total"] == 2
    thread = _crashed(result)
    location = thread["location"]
    assert location["mapping"] == str(program.resolve())
    # The procedure the provider names at the PC is the one whose line the source marks as the crash.
    function, line = _source_line(program, location["static_address"])
    assert (function, line) == ("store_through_null", crashfixtures.CRASH_LINE)
    assert location["procedure"]["name"] == function
    assert "ptr [" in location["instruction"]  # the store through the pointer
    chain = [f["location"].get("procedure", {}).get("name") for f in thread["backtrace"]["frames"]]
    assert chain[:3] == crashfixtures.CALL_CHAIN
    # Past main the walk leaves frame-pointer code (libc) or ends: either way it says which.
    assert thread["backtrace"]["status"] in ("complete", "partial")


def test_core_through_the_sdk_client(crash_build: dict[str, Path]) -> None:
    program, core = crash_build["program"], crash_build["core"]

    async def main() -> dict[str, Any]:
        async with connect() as client:
            record = await call_structured(
                client, "inspect_recorded_crash", {"path": str(core), "executable_path": str(program)}
            )
            return dict(record["normalized_result"])

    result = anyio.run(main)
    _check_crash(result, program)
    if result["signal"].get("code_name"):  # the kernel's core records the fault (gdb's names its own stop)
        assert result["signal"]["code_name"] == "SEGV_MAPERR" and result["signal"]["fault_address"] == "0x0"
    registers = _crashed(result)["registers"]
    assert registers["rip"] == _crashed(result)["pc"] and "rbp" in registers
    paths = {m["path"] for m in result["mappings"]["items"]}
    assert str(program.resolve()) in paths and any("libc" in p for p in paths)


def test_open_binary_names_the_procedures(crash_build: dict[str, Path], rea_session: Session) -> None:
    call_tool(rea_session, "open_binary", {"path": str(crash_build["program"])})
    out = call_tool(rea_session, "inspect_recorded_crash", {"path": str(crash_build["core"]), "registers": False})
    assert out.evidence is not None
    result = msgspec.to_builtins(out.evidence.normalized_result)
    _check_crash(result, crash_build["program"])
    assert "registers" not in _crashed(result)  # omitted on request


def test_debugger_core_reads_the_same(crash_build: dict[str, Path], rea_session: Session, tmp_path: Path) -> None:
    core = crashfixtures.debugger_core(toolchains.require("gdb"), crash_build["program"], tmp_path)
    out = call_tool(
        rea_session, "inspect_recorded_crash", {"path": str(core), "executable_path": str(crash_build["program"])}
    )
    assert out.evidence is not None
    _check_crash(msgspec.to_builtins(out.evidence.normalized_result), crash_build["program"])


def test_wrong_executable_and_not_a_core(crash_build: dict[str, Path], rea_session: Session) -> None:
    with pytest.raises(ReaError) as wrong:
        call_tool(
            rea_session,
            "inspect_recorded_crash",
            {"path": str(crash_build["core"]), "executable_path": toolchains.require("gcc")},
        )
    assert wrong.value.code == "invalid_request"
    with pytest.raises(ReaError) as not_core:
        call_tool(rea_session, "inspect_recorded_crash", {"path": str(crash_build["program"])})
    assert not_core.value.code == "unsupported_target"
