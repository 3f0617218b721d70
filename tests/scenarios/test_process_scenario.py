"""capture_process_scenario and compare_process_captures over programs compiled now."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.errors import ReaError
from rea.process import OwnedProcess
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.waiting import still_running


def _family_pids(capture: dict[str, Any]) -> list[int]:
    return [m["pid"] for m in capture["process_family"]["members"]]


def _repl(programs: dict[str, Path], workdir: Path, numbers: list[str], sandbox: str) -> dict[str, Any]:
    checkpoints = [{"id": f"prompt{i}", "output_contains": "calc> "} for i in range(len(numbers) + 1)]
    events: list[dict[str, Any]] = [
        {"action": "input", "text": f"{n}\n", "checkpoint": f"prompt{i}"} for i, n in enumerate(numbers)
    ]
    events.append({"action": "input", "text": "quit\n", "checkpoint": f"prompt{len(numbers)}"})
    return {
        "executable": str(programs["repl"]),
        "working_directory": str(workdir),
        "terminal": {"columns": 100},
        "checkpoints": checkpoints,
        "events": events,
        "timeout_ms": 20_000,
        "sandbox": sandbox,
    }


def test_interactive_program_through_a_pty(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, sandboxed: str
) -> None:
    capture = result_of(rea_session, "capture_process_scenario", _repl(programs, tmp_path, ["2 3", "40 2"], sandboxed))
    transcript = capture["output"]["terminal"]["text"]
    assert transcript.startswith("tty=1\r\ncalc> ")
    # The terminal echoes what was typed, then the program answers.
    assert "calc> 2 3\r\nsum 5\r\ncalc> 40 2\r\nsum 42\r\ncalc> quit\r\nbye\r\n" in transcript
    assert capture["lifecycle"]["end_reason"] == "exited"
    assert capture["lifecycle"]["exit"] == {"observed": True, "exit_code": 7, "signal": None}
    assert [i["delivered"] for i in capture["interactions"]] == [True, True, True]
    assert all(c["reached"] for c in capture["checkpoints"])
    created = capture["filesystem"]["created"]
    assert [(f["path"], f["sha256"]) for f in created] == [("session.log", hashlib.sha256(b"5\n42\n").hexdigest())]
    assert capture["isolation"]["sandbox"] == "bubblewrap"
    assert str(tmp_path) in capture["isolation"]["policy"]["writable_roots"]
    assert capture["cleanup"] == {"cleanup": "complete", "resources": []}


@pytest.mark.parametrize("sandbox", ["required", "none"])
def test_a_forked_child_is_in_the_lineage_and_does_not_outlive_the_capture(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, sandbox: str
) -> None:
    if sandbox == "required":
        from tests import toolchains

        toolchains.require("bwrap")
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {"executable": str(programs["forker"]), "working_directory": str(tmp_path), "sandbox": sandbox},
    )
    assert capture["lifecycle"]["exit"]["exit_code"] == 0
    family = capture["process_family"]
    forkers = [m for m in family["members"] if m["comm"] == "forker"]
    assert len(forkers) == 2  # the program and its child
    lineage = result_of(rea_session, "binary_session", {})["analysis_run"]["process_lineage"]
    snaps = [s for s in lineage["snapshots"] if s["resource"] == "process-scenario"]
    assert snaps[0]["event"] == "started" and snaps[-1]["event"] == "closed"
    seen = [s for s in snaps if s["event"] == "descendant_seen"]
    assert seen and all(s["status"] == "verified" for s in seen)
    child = max(forkers, key=lambda m: m["pid"])
    assert child["pid"] in set().union(*(s["descendants"] for s in seen))
    if sandbox == "none":
        # Orphaned in rea's session when its parent exited: reported, then terminated with the session.
        assert [m["pid"] for m in family["outlived_leader"]] == [child["pid"]]
        isolation = capture["isolation"]
        assert (isolation["sandbox"], isolation["reason"]) == ("none", "no sandbox requested")
        assert isolation["policy"]["reachable"]  # what the unsandboxed program could reach, said plainly
    assert still_running(_family_pids(capture)) == []
    assert capture["cleanup"]["cleanup"] == "complete"


def test_a_hung_program_is_stopped_at_the_timeout(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, sandboxed: str
) -> None:
    with pytest.raises(ReaError) as info:
        call_tool(
            rea_session,
            "capture_process_scenario",
            {
                "executable": str(programs["hang"]),
                "working_directory": str(tmp_path),
                "timeout_ms": 600,
                "limits": {"termination_grace_ms": 300},
                "sandbox": sandboxed,
            },
        )
    err = info.value
    assert err.code == "provider_timeout" and err.details["cleanup"] == "complete"
    partial = err.details["partial_observation"]
    assert partial["output"]["stdout"]["text"] == "hanging\n"
    # SIGTERM is ignored, so SIGKILL follows; both attempts are kept with their delivery results.
    signals = partial["lifecycle"]["signals"]
    assert [(s["signal"], s["reason"], s["delivered"]) for s in signals] == [
        ("SIGTERM", "finalization", True),
        ("SIGKILL", "finalization", True),
    ]
    assert partial["lifecycle"]["exit"]["observed"] is True and partial["lifecycle"]["end_reason"] == "timeout"
    assert still_running(_family_pids(partial)) == []
    assert not Path(partial["lifecycle"]["private_directory"]).exists()


def test_an_unobserved_exit_keeps_every_signal_attempt(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rea_plugins.process.driver as driver

    # Signals that never arrive: finalization cannot observe an exit (the session is still cleaned up after).
    monkeypatch.setattr(driver, "KILL_WAIT_S", 0.2)
    monkeypatch.setattr(
        OwnedProcess,
        "send_signal",
        lambda self, sig: {
            "signal": "SIGTERM" if sig == 15 else "SIGKILL",
            "delivered": False,
            "reason": "withheld by the test",
        },
    )
    with pytest.raises(ReaError) as info:
        call_tool(
            rea_session,
            "capture_process_scenario",
            {
                "executable": str(programs["hang"]),
                "working_directory": str(tmp_path),
                "idle_timeout_ms": 300,
                "limits": {"termination_grace_ms": 100},
                "sandbox": "none",
            },
        )
    err = info.value
    assert err.code == "process_capture_failed" and err.details["reason"] == "exit_not_observed"
    life = err.details["partial_observation"]["lifecycle"]
    assert life["elapsed_ms"] is None and life["exit"]["exit_code"] is None and life["exit"]["observed"] is False
    assert [(s["signal"], s["delivered"]) for s in life["signals"]] == [("SIGTERM", False), ("SIGKILL", False)]
    assert err.details["cleanup"] == "complete"
    assert still_running(_family_pids(err.details["partial_observation"])) == []


def test_a_signal_at_a_checkpoint_reaches_the_sandboxed_program(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, sandboxed: str
) -> None:
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {
            "executable": str(programs["waiter"]),
            "working_directory": str(tmp_path),
            "sandbox": sandboxed,
            "checkpoints": [{"id": "ready", "output_contains": "ready\n"}],
            "events": [{"action": "signal", "signal": "SIGUSR1", "checkpoint": "ready"}],
        },
    )
    assert capture["output"]["stdout"]["text"] == "ready\ngot 10\n"
    assert capture["lifecycle"]["exit"]["exit_code"] == 3
    sent = capture["lifecycle"]["signals"]
    assert len(sent) == 1 and sent[0]["reason"] == "event" and sent[0]["delivered"] is True


def test_compare_captures_normalises_pids_and_finds_changes(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path
) -> None:
    runs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        runs.append(
            call_tool(
                rea_session,
                "capture_process_scenario",
                {"executable": str(programs["forker"]), "working_directory": str(folder), "sandbox": "none"},
            ).evidence
        )
    same = result_of(
        rea_session,
        "compare_process_captures",
        {"left_evidence_id": runs[0].evidence_id, "right_evidence_id": runs[1].evidence_id},
    )
    # Each run printed its own child's pid; normalised, the output is the same.
    assert (
        runs[0].normalized_result["output"]["stdout"]["text"] != runs[1].normalized_result["output"]["stdout"]["text"]
    )
    assert same["verdict"] == "same", same["dimensions"]
    sessions = []
    for numbers in (["2 3"], ["2 4"]):
        folder = tmp_path / f"repl-{numbers[0].replace(' ', '-')}"
        folder.mkdir()
        sessions.append(
            call_tool(rea_session, "capture_process_scenario", _repl(programs, folder, numbers, "none")).evidence
        )
    diff = result_of(
        rea_session,
        "compare_process_captures",
        {
            "left": msgspec.to_builtins(sessions[0]),  # inline Evidence
            "right": {"kind": "retained-evidence", "evidence_id": sessions[1].evidence_id},
        },
    )
    dims = diff["dimensions"]
    assert diff["verdict"] == "different"
    assert dims["output"]["status"] == "mismatch" and "+calc> 2 4" in dims["output"]["streams"]["terminal"]["diff"]
    assert dims["exit"]["status"] == "match" and dims["process_family"]["status"] == "match"
    assert dims["files"]["status"] == "mismatch" and dims["files"]["changed"][0]["path"] == "session.log"
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "compare_process_captures", {"left_evidence_id": sessions[0].evidence_id})
    assert info.value.code == "invalid_request"


def test_bad_scenarios_are_typed(rea_session: Session, programs: dict[str, Path], tmp_path: Path) -> None:
    cases = [
        ({"executable": str(programs["repl"]), "working_directory": str(tmp_path / "nope")}, "target_unavailable"),
        ({"executable": str(tmp_path / "nope"), "working_directory": str(tmp_path)}, "target_unavailable"),
        (
            {
                "executable": str(programs["repl"]),
                "working_directory": str(tmp_path),
                "events": [{"action": "input", "text": "x", "checkpoint": "missing"}],
            },
            "invalid_request",
        ),
        (
            {
                "executable": str(programs["repl"]),
                "working_directory": str(tmp_path),
                "events": [{"action": "signal", "signal": "SIGNOPE"}],
            },
            "invalid_request",
        ),
    ]
    for args, code in cases:
        with pytest.raises(ReaError) as info:
            call_tool(rea_session, "capture_process_scenario", args)
        assert info.value.code == code, args
