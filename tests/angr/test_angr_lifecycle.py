"""The worker rea owns: cancellation, deadlines, crashes and hostile input never leak or hang it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from tests.angr.angr_support import open_angr
from tests.engine_lifecycle import check_cancellation_kills_the_worker
from tests.engine_lifecycle import check_client_close_during_a_query_reaps_the_worker
from tests.engine_lifecycle import check_corrupted_binaries_give_typed_errors
from tests.engine_lifecycle import check_worker_crash_is_reported_then_recovered
from tests.engine_lifecycle import check_worker_exits_when_the_server_dies
from tests.engine_lifecycle import op
from tests.engine_lifecycle import owned_alive
from tests.engine_lifecycle import started_pids
from tests.engine_lifecycle import timed_out
from tests.engine_lifecycle import worker_pid


def test_cancellation_mid_cfg_kills_the_worker(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached CFG would skip the phase the test cancels in
    check_cancellation_kills_the_worker(rea_registry, "angr", "building CFG")


def test_worker_crash_is_reported_then_recovered(angr_session: Session) -> None:
    check_worker_crash_is_reported_then_recovered(angr_session, "angr")


def test_deadline_returns_provider_timeout(
    rea_registry: Registry, angr_programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_ANGR_CFG_TIMEOUT_MS", "1")
    with timed_out(rea_registry, angr_programs["nopie"], "angr", "list_procedures") as (session, error):
        assert error.details["timeout_ms"] == 1 and error.details["phase"] == "building CFG"
        started = started_pids(session)
        assert started and not any(owned_alive(p) for p in started)


def test_load_deadline_covers_worker_startup(
    rea_registry: Registry, angr_programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_ANGR_LOAD_TIMEOUT_MS", "1")
    with timed_out(rea_registry, angr_programs["nopie"], "angr", "list_documents") as (_, error):
        assert error.details["timeout_ms"] == 1


def _truncated_never_loads(name: str, error: ReaError | None) -> None:
    if error is None:
        # angr may make sense of a mangled file; the header-only one never loads.
        assert name != "truncated"
    elif name == "truncated":
        assert (error.code, error.details["reason"]) == ("unsupported_target", "unparseable")


def test_corrupted_binaries_give_typed_errors_and_no_leaked_worker(
    rea_registry: Registry, angr_programs: dict[str, Path], tmp_path: Path
) -> None:
    check_corrupted_binaries_give_typed_errors(
        rea_registry, angr_programs["nopie"], tmp_path, "angr", _truncated_never_loads
    )


def test_closed_client_refuses_queries(rea_registry: Registry, angr_programs: dict[str, Path]) -> None:
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    client = session._client
    assert client is not None
    assert session.close() == []
    with pytest.raises(ReaError) as info:
        client.execute("list_documents", {}, CallContext())
    assert info.value.code == "target_unavailable"


def test_client_close_during_a_query_reaps_the_worker(rea_registry: Registry, angr_programs: dict[str, Path]) -> None:
    check_client_close_during_a_query_reaps_the_worker(
        rea_registry, angr_programs["nopie"], "angr", "building CFG", wait_s=120
    )


def test_address_space_cap_ends_in_a_typed_error(
    rea_registry: Registry, angr_programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_ANGR_MEMORY_LIMIT_MB", "256")  # below what angr needs for a CFG
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    try:
        with pytest.raises(ReaError) as info:
            op(session, "list_procedures")
        assert info.value.code in {"provider_unavailable", "resource_constraint"}
        if info.value.code == "provider_unavailable":
            assert info.value.details["address_space_mb"] == 256
        started = started_pids(session)
        assert started and not any(owned_alive(p) for p in started if p != worker_pid(session))
    finally:
        assert session.close() == []


def test_worker_exits_when_the_server_dies(angr_programs: dict[str, Path]) -> None:
    check_worker_exits_when_the_server_dies(angr_programs["nopie"], "angr", timeout_s=300)
