"""Parsing in parallel (a worker process beside the server's own parsing) gives the serial graph byte for byte."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jssupport import analyze

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.evidence import encode
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.javascript import inputs
from rea_plugins.javascript import parallel
from rea_plugins.javascript import syntax


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Parse every input in parallel, in batches of two scripts; the list counts the scripts the worker got."""
    monkeypatch.setenv("REA_JAVASCRIPT_PARSE_WORKERS", "1")
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_FILES", 2)
    monkeypatch.setattr(parallel, "_cpus", lambda: 2)
    sent: list[int] = []
    extract = parallel._Parallel.extract

    def counted(self: Any, channel: Any, batch: range) -> Any:
        sent.append(len(batch))
        return extract(self, channel, batch)

    monkeypatch.setattr(parallel._Parallel, "extract", counted)
    return sent


def _serial(session: Session, path: Path, **extra: Any) -> Evidence:
    os.environ["REA_JAVASCRIPT_PARSE_WORKERS"] = "0"
    try:
        return analyze(session, path, **extra)
    finally:
        os.environ["REA_JAVASCRIPT_PARSE_WORKERS"] = "1"


def _same(a: Evidence, b: Evidence) -> None:
    assert a.evidence_id == b.evidence_id
    assert encode(a) == encode(b)


def _ended(session: Session) -> list[str]:
    """The events of the parse workers the session saw; every one was ended and none is left running."""
    events = [o["event"] for o in session.lineage]
    for o in session.lineage:
        pid = o.get("pid")
        if o["event"] != "started" and isinstance(pid, int):
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    return events


def test_the_graph_is_the_serial_one(rea_session: Session, app_v1: Path, broken_app: Path, workers: list[int]) -> None:
    cases: list[tuple[Path, dict[str, Any]]] = [
        (app_v1, {}),
        (broken_app, {}),
        (app_v1, {"limits": {"max_modules": 3}}),
        (app_v1, {"limits": {"max_bytes_per_file": 200}}),
    ]
    for path, extra in cases:
        sent = len(workers)
        _same(analyze(rea_session, path, **extra), _serial(rea_session, path, **extra))
        assert len(workers) > sent  # the worker parsed some of it
    assert _ended(rea_session)[:2] == ["started", "closed"]


def test_an_archive_is_parsed_in_parallel_too(
    rea_session: Session, app_v1: Path, tmp_path: Path, workers: list[int]
) -> None:
    import appfixtures

    packed = appfixtures.pack_asar(app_v1, tmp_path / "app.asar")
    _same(analyze(rea_session, packed), _serial(rea_session, packed))
    assert workers


def test_scripts_that_changed_are_accounted_in_order(tmp_path: Path, workers: list[int]) -> None:
    from rea.target import identify
    from rea_plugins.javascript import analyze as build_graph

    for name in "abcdef":
        (tmp_path / f"{name}.js").write_text(f"export const {name} = 1;\n")
    ctx = CallContext()
    limits = msgspec.structs.replace(inputs.DEFAULT_LIMITS, max_bytes_per_file=64)

    def built(worker_count: str) -> Any:
        os.environ["REA_JAVASCRIPT_PARSE_WORKERS"] = worker_count
        collected = inputs.collect_directory(identify(str(tmp_path), ctx, allow_directory=True), limits, ctx)
        (tmp_path / "b.js").rename(tmp_path / "b.moved")
        (tmp_path / "e.js").write_text("export const e = 3; // " + "x" * 64 + "\n")
        try:
            return build_graph.build(collected, limits, ctx)
        finally:
            (tmp_path / "b.moved").rename(tmp_path / "b.js")
            (tmp_path / "e.js").write_text("export const e = 1;\n")

    serial, concurrent = built("0"), built("1")
    assert workers
    assert msgspec.json.encode(concurrent) == msgspec.json.encode(serial)
    assert {s.path: s.reason for s in concurrent.coverage.skipped} == {
        "b.js": "unreadable",
        "e.js": "grew beyond max_bytes_per_file while reading",
    }


def test_a_worker_that_cannot_start_costs_only_time(
    rea_session: Session, app_v1: Path, workers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "WORKER_MODULE", "rea_plugins.javascript.no_such_worker")
    _same(analyze(rea_session, app_v1), _serial(rea_session, app_v1))
    assert "crashed" in _ended(rea_session), rea_session.lineage


def test_a_worker_past_its_deadline_costs_only_time(
    rea_session: Session, app_v1: Path, workers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "DEADLINE_S", 0.0)
    monkeypatch.setattr(parallel, "DEADLINE_BYTES_PER_S", 1 << 40)
    _same(analyze(rea_session, app_v1), _serial(rea_session, app_v1))
    assert "timed_out" in _ended(rea_session)


def test_cancellation_ends_the_worker(rea_session: Session, app_v1: Path, workers: list[int]) -> None:
    signal = CancelSignal()
    seen: list[str] = []

    def sink(_n: Any, _total: Any, message: str) -> None:
        seen.append(message)
        if len(seen) == 1:
            signal.cancel()

    with pytest.raises(ReaError) as err:
        call_tool(
            rea_session, "analyze_javascript_application", {"input_path": str(app_v1)}, CallContext(signal, sink=sink)
        )
    assert err.value.code == "cancelled"
    assert seen[0].startswith("parsing")
    assert len(rea_session.ledger) == 0
    events = _ended(rea_session)
    assert events[0] == "started" and events[-1] in ("cancelled", "closed", "crashed"), events


def test_small_inputs_stay_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    one = inputs.InputFile(path="a.js", data=b"", integrity="not-declared", source="/nowhere/a.js", size=1 << 20)
    scripts: list[tuple[inputs.InputFile, syntax.Language]] = [(one, "javascript")] * 3
    monkeypatch.setattr(parallel, "_cpus", lambda: 2)
    monkeypatch.setenv("REA_JAVASCRIPT_PARSE_WORKERS", "1")
    assert parallel.workers_for(scripts) == 0  # 3 MiB: a worker's start is not repaid
    assert parallel.workers_for(scripts * 2) == 1
    monkeypatch.setattr(parallel, "_cpus", lambda: 1)
    assert parallel.workers_for(scripts * 2) == 0  # no free processor
    monkeypatch.setattr(parallel, "_cpus", lambda: 2)
    monkeypatch.setenv("REA_JAVASCRIPT_PARSE_WORKERS", "0")
    assert parallel.workers_for(scripts * 2) == 0
    monkeypatch.setenv("REA_JAVASCRIPT_PARSE_WORKERS", "01")
    with pytest.raises(ReaError) as err:
        parallel.workers_for(scripts * 2)
    assert err.value.code == "configuration_invalid"
