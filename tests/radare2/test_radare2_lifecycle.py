"""The worker rea owns for radare2: cancellation, deadlines, crashes, hostile input, close and reopen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
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
from tests.radare2.conftest import require_radare2
from tests.radare2.r2_support import open_r2
from tests.realcode import builds


@pytest.fixture
def elf(native_fixtures: Any) -> str:
    require_radare2()
    return str(native_fixtures.get("elf-x64").path)


def test_cancellation_mid_analysis_kills_the_worker(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    require_radare2()
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached analysis would skip the phase the test cancels in
    check_cancellation_kills_the_worker(rea_registry, "radare2", "analysis (aaa)")


def test_worker_crash_is_reported_then_recovered(r2_session: Session) -> None:
    check_worker_crash_is_reported_then_recovered(r2_session, "radare2")


@pytest.mark.parametrize(
    ("setting", "operation", "phase"),
    [
        ("REA_RADARE2_LOAD_TIMEOUT_MS", "list_documents", "starting the worker and loading the binary"),
        ("REA_RADARE2_ANALYSIS_TIMEOUT_MS", "list_procedures", "analysis (aaa)"),
    ],
)
def test_deadlines_return_provider_timeout(
    rea_registry: Registry, elf: str, monkeypatch: pytest.MonkeyPatch, setting: str, operation: str, phase: str
) -> None:
    monkeypatch.setenv(setting, "1")
    with timed_out(rea_registry, elf, "radare2", operation) as (session, error):
        assert error.details["timeout_ms"] == 1 and error.details["phase"] == phase
        assert "REA_RADARE2_" in error.remediation
        started = started_pids(session)
        assert started and not any(owned_alive(p) for p in started)


def test_query_deadline_costs_one_request(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_RADARE2_QUERY_TIMEOUT_MS", "1")
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached answer would need no query to time out
    # Pseudo code of a 50 KB function (cmark-gfm's case folding) takes radare2 far longer than 1 ms; a small
    # function's can come back within the first millisecond.
    build = builds.cmark_gfm("x86_64-elf")
    address, _ = build.symbols()["cmark_utf8proc_case_fold"]
    with timed_out(rea_registry, build.binary, "radare2", "procedure_pseudo_code", procedure=hex(address)) as (
        _,
        error,
    ):
        assert error.details["phase"] == "procedure_pseudo_code"


def test_corrupted_binaries_give_typed_errors_and_no_leaked_worker(
    rea_registry: Registry, elf: str, tmp_path: Path
) -> None:
    check_corrupted_binaries_give_typed_errors(rea_registry, Path(elf), tmp_path, "radare2")


def test_close_and_reopen(rea_registry: Registry, elf: str) -> None:
    session = Session(rea_registry)
    open_r2(session, elf)
    client: Any = session._client
    assert op(session, "procedure_address", procedure="main")["name"] == "main"
    first = worker_pid(session)
    assert session.close() == []
    assert first is not None and not owned_alive(first)
    with pytest.raises(ReaError) as info:
        client.execute("list_documents", {}, CallContext())
    assert info.value.code == "target_unavailable"
    open_r2(session, elf)
    try:
        assert op(session, "procedure_address", procedure="main")["name"] == "main"
        assert worker_pid(session) not in (None, first)
    finally:
        assert session.close() == []


def test_client_close_during_a_query_reaps_the_worker(rea_registry: Registry, elf: str) -> None:
    check_client_close_during_a_query_reaps_the_worker(rea_registry, elf, "radare2", "analysis (aaa)", wait_s=60)


def test_worker_exits_when_the_server_dies(elf: str) -> None:
    check_worker_exits_when_the_server_dies(elf, "radare2", timeout_s=120)
