"""The worker rea owns: cancellation, deadlines, crashes and hostile input never leak or hang it."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from tests.angr.angr_support import op, open_angr, owned_alive, worker_pid


def _cancel_on(phase: str) -> CallContext:
    """A context whose caller cancels as soon as the provider reports ``phase``."""
    ctx = CallContext()

    def sink(_: float, message: str) -> None:
        if phase in message:
            ctx.signal.cancel()

    ctx._sink = sink
    return ctx


def test_cancellation_mid_cfg_kills_the_worker(angr_session: Session) -> None:
    op(angr_session, "list_documents")  # starts the worker and loads the binary; no CFG yet
    first = worker_pid(angr_session)
    assert first is not None and owned_alive(first)
    with pytest.raises(ReaError) as info:
        angr_session.execute("list_procedures", {}, _cancel_on("building CFG"))
    assert info.value.code == "cancelled"
    assert not owned_alive(first) and worker_pid(angr_session) is None
    # The binding stays; the next query starts a fresh worker.
    assert angr_session.binding is not None and angr_session.binding.provider.id == "angr"
    assert op(angr_session, "list_procedures")["total"] > 0
    second = worker_pid(angr_session)
    assert second is not None and second != first


def test_worker_crash_is_reported_then_recovered(angr_session: Session) -> None:
    op(angr_session, "list_documents")
    pid = worker_pid(angr_session)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # this test's own child: the worker the session started
    with pytest.raises(ReaError) as info:
        op(angr_session, "procedure_info", procedure="main")
    err = info.value
    assert err.code == "provider_unavailable" and err.retryable
    assert (err.details["exit_status"], err.details["signal"], err.details["pid"]) == (-9, "SIGKILL", pid)
    assert not owned_alive(pid)
    assert angr_session.binding is not None and angr_session.binding.provider.id == "angr"
    assert op(angr_session, "procedure_info", procedure="main")["name"] == "main"


def test_lineage_records_every_worker_and_its_reaping(angr_session: Session) -> None:
    client = angr_session._client
    assert client is not None
    events = [(o["event"], o["status"]) for o in client.lineage()]
    assert events.count(("started", "verified")) >= 3
    assert ("reaped", "verified") in events


def test_deadline_returns_provider_timeout(rea_registry: Registry, angr_programs: dict[str, Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_ANGR_CFG_TIMEOUT_MS", "1")
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    try:
        with pytest.raises(ReaError) as info:
            op(session, "list_procedures")
        assert info.value.code == "provider_timeout"
        assert info.value.details["timeout_ms"] == 1 and info.value.details["phase"] == "building CFG"
        assert worker_pid(session) is None
        started = [o["pid"] for o in session._client.lineage() if o["event"] == "started"]  # type: ignore[union-attr]
        assert started and not any(owned_alive(p) for p in started)
    finally:
        assert session.close() == []


def test_load_deadline_covers_worker_startup(rea_registry: Registry, angr_programs: dict[str, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_ANGR_LOAD_TIMEOUT_MS", "1")
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    try:
        with pytest.raises(ReaError) as info:
            op(session, "list_documents")
        assert (info.value.code, info.value.details["timeout_ms"]) == ("provider_timeout", 1)
        assert worker_pid(session) is None
    finally:
        assert session.close() == []


def _corruptions(original: bytes) -> dict[str, bytes]:
    rng = random.Random(5)
    garbled = bytearray(original)
    for i in range(64, 64 + 56 * 13):  # the program headers
        garbled[i] = rng.randrange(256)
    return {"truncated": original[:64], "garbled-program-headers": bytes(garbled)}


def test_corrupted_binaries_give_typed_errors_and_no_leaked_worker(
        rea_registry: Registry, angr_programs: dict[str, Path], tmp_path: Path) -> None:
    session = Session(rea_registry)
    pids = []
    try:
        for name, data in _corruptions(angr_programs["nopie"].read_bytes()).items():
            path = tmp_path / name
            path.write_bytes(data)
            open_angr(session, path)
            with pytest.raises(ReaError) as info:
                for operation in ("list_documents", "list_procedures", "procedure_pseudo_code"):
                    op(session, operation, procedure="main")
            assert info.value.code in {"unsupported_target", "execution_failure", "invalid_request"}, name
            pid = worker_pid(session)
            if pid is not None:
                pids.append(pid)
    finally:
        assert session.close() == []
    assert pids and not any(owned_alive(p) for p in pids)


def test_closed_client_refuses_queries(rea_registry: Registry, angr_programs: dict[str, Path]) -> None:
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    client = session._client
    assert client is not None
    assert session.close() == []
    with pytest.raises(ReaError) as info:
        client.execute("list_documents", {}, CallContext())
    assert info.value.code == "target_unavailable"
