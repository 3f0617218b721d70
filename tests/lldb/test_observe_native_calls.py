"""observe_native_calls under LLDB: argument registers of a known chain, crashes, Evidence addresses, hosts."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.waiting import still_running


def _args(event: dict[str, Any], count: int) -> list[int]:
    return [int(a["value"], 16) for a in event["arguments"][:count]]


def test_call_chain_arguments_return_values_and_lineage(rea_session: Session, chain_program: Path) -> None:
    result = result_of(
        rea_session,
        "observe_native_calls",
        {"executable": str(chain_program), "functions": ["mul3", "add"], "return_values": True, "argument_count": 3},
    )
    events = result["events"]
    assert [e["function"] for e in events] == ["mul3", "add"]
    # argc is 1: mul3(2, 7, 5) calls add(14, 5), and both return 19.
    assert _args(events[0], 3) == [2, 7, 5]
    assert _args(events[1], 2) == [14, 5]
    assert [int(e["return_value"], 16) for e in events] == [19, 19]
    assert [f["function"] for f in events[1]["backtrace"][:3]] == ["add", "mul3", "main"]
    assert events[0]["arguments"][0]["register"] == "rdi" and result["abi"] == "System V AMD64"
    assert result["stop_reason"] == "exited" and result["exit"]["exit_code"] == 0
    assert result["output"]["stdout"]["text"] == "r=19\n"
    assert result["coverage"] == {
        "complete": True,
        "events_recorded": 2,
        "events_dropped": 0,
        "limits_hit": [],
        "breakpoints_set": 2,
        "unresolved": [],
        "phase_reached": "finished",
    }
    if shutil.which("bwrap"):
        assert result["isolation"]["sandbox"] == "bubblewrap"
    lineage = result_of(rea_session, "binary_session", {})["analysis_run"]["process_lineage"]
    assert lineage["state"] == "snapshots"
    snaps = {s["event"]: s for s in lineage["snapshots"] if s["resource"] == "lldb-worker"}
    launched = snaps["debuggee_launched"]
    # The debugger's worker is rea's child in its own group; lldb-server and the debuggee are its descendants.
    assert launched["status"] == "verified" and launched["ppid"] == launched["launcher_pid"] == os.getpid()
    assert launched["pgid"] == launched["pid"] and len(launched["descendants"]) >= 2
    assert snaps["closed"]["status"] == "verified"
    assert still_running([launched["pid"], *launched["descendants"]]) == []


def test_a_crash_keeps_the_partial_observation(rea_session: Session, chain_program: Path) -> None:
    with pytest.raises(ReaError) as info:
        call_tool(
            rea_session,
            "observe_native_calls",
            {"executable": str(chain_program), "arguments": ["a", "b"], "functions": ["add", "mul3"]},
        )
    err = info.value
    assert err.code == "process_capture_failed" and err.details["reason"] == "target_crashed"
    assert err.details["cleanup"] == "complete" and err.details["resources"] == []
    partial = err.details["partial_observation"]
    # argc is 3: mul3(4, 7, 5) and add(28, 5) were recorded before the null write.
    assert [(e["function"], _args(e, 2)) for e in partial["events"]] == [("mul3", [4, 7]), ("add", [28, 5])]
    assert partial["stop_reason"] == "crashed" and partial["crash"]["signal"] == "SIGSEGV"
    assert partial["crash"]["function"] == "main" and partial["coverage"]["complete"] is False
    snaps = rea_session.process_lineage()["snapshots"]
    launched = next(s for s in snaps if s["event"] == "debuggee_launched")
    assert still_running([launched["pid"], *launched["descendants"]]) == []


def test_addresses_from_evidence_on_the_open_target(rea_session: Session, chain_program: Path) -> None:
    call_tool(rea_session, "open_binary", {"path": str(chain_program), "provider_id": "native"})
    located = call_tool(rea_session, "procedure_address", {"procedure": "add"}).evidence
    assert located is not None
    result = result_of(
        rea_session,
        "observe_native_calls",
        {
            "addresses": [{"kind": "retained-evidence", "evidence_id": located.evidence_id}],
            "argument_count": 2,
            "module_procedures": {"max_functions": 1},
            "max_events": 5,
        },
    )
    added = [e for e in result["events"] if e["breakpoint"]["kind"] == "address"]
    assert len(added) == 1 and _args(added[0], 2) == [14, 5]
    assert added[0]["file_address"] == located.normalized_result["address"]
    assert added[0]["breakpoint"]["evidence_id"] == located.evidence_id
    # Every procedure of the program, bounded to one: the limit is reported, never silent.
    assert "max_functions" in result["coverage"]["limits_hit"]


def test_bad_requests_are_typed(rea_session: Session, chain_program: Path, tmp_path: Path) -> None:
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "observe_native_calls", {"executable": str(chain_program)})
    assert info.value.code == "invalid_request"
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "observe_native_calls", {"executable": str(tmp_path / "missing"), "functions": ["x"]})
    assert info.value.code == "target_unavailable"
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "observe_native_calls", {"functions": ["main"]})
    assert info.value.code == "target_unavailable"


def test_foreign_hosts_are_unsupported_host(rea_session: Session, tmp_path: Path) -> None:
    gcc = toolchains.require("aarch64-linux-gnu-gcc")
    import subprocess

    src = tmp_path / "tiny.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run([gcc, "-o", str(tmp_path / "tiny"), str(src)], check=True, capture_output=True, timeout=120)
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "observe_native_calls", {"executable": str(tmp_path / "tiny"), "functions": ["main"]})
    assert info.value.code == "unsupported_target" and info.value.details["reason"] == "unsupported_host"


def test_availability_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from rea_plugins.lldb.provider import LldbProvider

    assert LldbProvider().availability().status == "available"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lldb" else real(name, *a))
    missing = LldbProvider().availability()
    assert missing.status == "unavailable" and missing.code == "runtime_missing"
    assert missing.remediation is not None and "pip install 'rea-reverse[lldb]'" in missing.remediation
