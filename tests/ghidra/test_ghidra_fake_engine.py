"""The ghidra client against the fake engine: lazy start, startup deadline and failures, cancel, close/reopen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.fake_engines import query_while_the_fake_starts
from tests.fixtures.native import native_fixtures as nf
from tests.ghidra.conftest import fake_processes


def _open(session: Session, path: str) -> dict[str, Any]:
    out = result_of(session, "open_binary", {"path": path, "provider_id": "ghidra"})
    assert out["analysis_provider_binding"]["provider"]["id"] == "ghidra"
    return dict(out)


def test_open_binds_only_and_the_first_query_starts_the_worker(
    session: Session, program: str, fake_env: pytest.MonkeyPatch
) -> None:
    _open(session, program)
    assert fake_processes() == []
    assert result_of(session, "binary_session")["analysis_run"]["process_lineage"] == {"state": "not_observed"}
    procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    assert {"main", "greet", "compute_checksum"} <= {p["name"] for p in procs}
    assert len(fake_processes()) == 1
    main = next(p for p in procs if p["name"] == "main")
    callees = {c["name"] for c in result_of(session, "procedure_callees", {"procedure": "main"})["callees"]}
    assert {edge[1] for edge in nf.PROGRAM_CALL_EDGES} <= callees
    code = result_of(session, "procedure_pseudo_code", {"procedure": main["address"]})
    assert code["decompiler"] == "ghidra" and code["language"] == "c" and "main" in code["text"]
    snaps = result_of(session, "binary_session")["analysis_run"]["process_lineage"]["snapshots"]
    worker = [s for s in snaps if s["resource"] == "ghidra-worker"]
    assert worker and worker[-1]["status"] == "verified" and worker[-1]["pgid"] == worker[-1]["pid"]
    assert result_of(session, "close_binary")["cleanup"] == "complete"
    assert fake_processes() == []


def test_startup_deadline_is_a_typed_error_naming_the_setting(
    session: Session, program: str, fake_env: pytest.MonkeyPatch
) -> None:
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "silent")
    fake_env.setenv("REA_GHIDRA_STARTUP_TIMEOUT_MS", "1500")
    _open(session, program)
    with pytest.raises(ReaError) as err:
        result_of(session, "binary_overview")
    e = err.value
    assert e.code == "provider_timeout"
    assert "1500 ms" in e.message and "startup" in e.message
    assert "REA_GHIDRA_STARTUP_TIMEOUT_MS" in e.remediation and "close_binary" in e.remediation
    assert e.details["setting"] == "REA_GHIDRA_STARTUP_TIMEOUT_MS" and e.details["timeout_ms"] == 1500
    assert e.details["phase"] == "startup"
    # The hung worker (and its JVM) went with the failed startup.
    assert fake_processes() == []
    assert result_of(session, "close_binary")["cleanup"] == "complete"


def test_worker_exit_during_startup_reports_the_status(
    session: Session, program: str, fake_env: pytest.MonkeyPatch
) -> None:
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "exit:73")
    _open(session, program)
    with pytest.raises(ReaError) as err:
        result_of(session, "list_procedures")
    e = err.value
    assert e.code == "provider_unavailable"
    assert "exited during startup" in e.message and "status 73" in e.message
    assert e.details["exit_status"] == 73 and e.details["phase"] == "startup"
    assert "rea doctor" in e.remediation
    assert "Traceback" not in e.message


def test_a_retried_query_after_a_failed_startup_starts_a_fresh_worker(
    session: Session, program: str, fake_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "exit-once:3")
    fake_env.setenv("REA_GHIDRA_TEST_MARKER", str(tmp_path / "exited"))
    _open(session, program)
    with pytest.raises(ReaError) as err:
        result_of(session, "list_segments")
    assert err.value.details["exit_status"] == 3
    assert result_of(session, "list_segments")["segments"]
    # Still the provider the caller chose.
    assert result_of(session, "binary_session")["analysis_provider_binding"]["provider"]["id"] == "ghidra"


def test_cancel_during_startup_then_close_reopen_and_retry(
    session: Session, program: str, fake_env: pytest.MonkeyPatch
) -> None:
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "slow:30")
    _open(session, program)
    signal = CancelSignal()
    thread, seen = query_while_the_fake_starts(
        lambda: call_tool(session, "list_procedures", {}, CallContext(signal)), fake_processes
    )
    assert fake_processes(), "the first query did not start the worker"
    signal.cancel()
    thread.join(30)
    assert isinstance(seen[0], ReaError) and seen[0].code == "cancelled"
    assert fake_processes() == []
    closed = result_of(session, "close_binary")
    assert closed["cleanup"] == "complete"
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "slow:1")
    _open(session, program)
    assert result_of(session, "list_procedures", {"limit": 5})["total"] > 5


def test_close_during_startup_drains_the_query_and_stops_the_worker(
    session: Session, program: str, fake_env: pytest.MonkeyPatch
) -> None:
    fake_env.setenv("REA_GHIDRA_TEST_MODE", "silent")
    _open(session, program)
    thread, seen = query_while_the_fake_starts(lambda: result_of(session, "binary_overview"), fake_processes)
    assert result_of(session, "close_binary")["cleanup"] == "complete"
    thread.join(30)
    assert isinstance(seen[0], ReaError) and seen[0].code in ("cancelled", "target_unavailable")
    assert fake_processes() == []


def test_the_fake_is_selected_only_by_its_test_setting(
    session: Session, program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REA_GHIDRA_TEST_WORKER", raising=False)
    monkeypatch.delenv("GHIDRA_INSTALL_DIR", raising=False)
    with pytest.raises(ReaError) as err:
        _open(session, program)
    assert err.value.code == "provider_unavailable"
    assert "GHIDRA_INSTALL_DIR is not set" in err.value.message


def test_recorded_model_matches_the_fixture(recorded_model: Path) -> None:
    import msgspec

    from rea.operations.records import Snapshot

    snap = msgspec.json.decode(recorded_model.read_bytes(), type=Snapshot)
    names = {p.name for p in snap.inventory.procedures}
    assert set(nf.PROGRAM_FUNCTIONS) <= names


def test_a_target_rewritten_after_open_never_starts_ghidra(
    session: Session, program: str, fake_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 42 item 3: the worker would import the new bytes under the SHA-256 the target was opened with."""
    copy = tmp_path / "program"
    copy.write_bytes(Path(program).read_bytes())
    _open(session, str(copy))
    with open(copy, "r+b") as fh:
        fh.seek(0x40)
        byte = fh.read(1)
        fh.seek(0x40)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ReaError) as info:
        result_of(session, "list_procedures", {"limit": 10})
    assert info.value.code == "artifact_changed" and "open_binary" in info.value.remediation
    assert fake_processes() == []
