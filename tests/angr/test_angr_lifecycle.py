"""The worker rea owns: cancellation, deadlines, crashes and hostile input never leak or hang it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from tests.angr.angr_support import op, open_angr, owned_alive, worker_pid
from tests.realcode import builds
from tests.waiting import wait_for


def _cancel_on(phase: str) -> CallContext:
    """A context whose caller cancels as soon as the provider reports ``phase``."""
    ctx = CallContext()

    def sink(_: float, _total: float | None, message: str) -> None:
        if phase in message:
            ctx.signal.cancel()

    ctx._sink = sink
    return ctx


def test_cancellation_mid_cfg_kills_the_worker(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real program's CFG takes angr seconds, so the cancel lands while it is still building: on a small fixture
    # the CFG could finish between the progress report and the cancel, and the call would rightly succeed.
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached CFG would skip the phase the test cancels in
    session = Session(rea_registry)
    open_angr(session, builds.cmark_gfm("x86_64-elf").binary)
    try:
        op(session, "list_documents")  # starts the worker and loads the binary; no CFG yet
        first = worker_pid(session)
        assert first is not None and owned_alive(first)
        with pytest.raises(ReaError) as info:
            session.execute("list_procedures", {}, _cancel_on("building CFG"))
        assert info.value.code == "cancelled"
        assert not owned_alive(first) and worker_pid(session) is None
        # The binding stays; the next query starts a fresh worker.
        assert session.binding is not None and session.binding.provider.id == "angr"
        assert op(session, "list_documents")
        second = worker_pid(session)
        assert second is not None and second != first
    finally:
        session.close()


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
    client = angr_session._client
    assert client is not None
    lineage = client.lineage()
    started = [o["pid"] for o in lineage if o["event"] == "started" and o["status"] == "verified"]
    assert pid in started and worker_pid(angr_session) in started
    reaped = [o for o in lineage if o["event"] == "crashed" and o["pid"] == pid]
    assert reaped and reaped[0]["signal"] == "SIGKILL"


def test_deadline_returns_provider_timeout(
    rea_registry: Registry, angr_programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_load_deadline_covers_worker_startup(
    rea_registry: Registry, angr_programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
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
    rea_registry: Registry, angr_programs: dict[str, Path], tmp_path: Path
) -> None:
    session = Session(rea_registry)
    pids = []
    try:
        for name, data in _corruptions(angr_programs["nopie"].read_bytes()).items():
            path = tmp_path / name
            path.write_bytes(data)
            open_angr(session, path)
            try:
                op(session, "list_documents")
                op(session, "list_procedures")
                op(session, "procedure_pseudo_code", procedure="main")
            except ReaError as exc:
                assert exc.code in {"unsupported_target", "execution_failure", "invalid_request"}, name
                if name == "truncated":
                    assert (exc.code, exc.details["reason"]) == ("unsupported_target", "unparseable")
            else:
                # angr may make sense of a mangled file; the header-only one never loads.
                assert name != "truncated"
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


def test_client_close_during_a_query_reaps_the_worker(rea_registry: Registry, angr_programs: dict[str, Path]) -> None:
    session = Session(rea_registry)
    open_angr(session, angr_programs["nopie"])
    # Load first: the query's fresh context then reports "building CFG" as its first (never rate-bounded) update.
    op(session, "list_documents")
    started, closed = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def sink(_: float, _total: float | None, message: str) -> None:
        # Runs on the query's thread: hold the query mid-CFG until close_binary has run.
        if "building CFG" in message and not started.is_set():
            started.set()
            closed.wait(60)

    def query() -> None:
        try:
            session.execute("list_procedures", {}, CallContext(sink=sink))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=query)
    worker.start()
    try:
        assert started.wait(120), "the query never reached CFG recovery"
        pid = worker_pid(session)
        assert pid is not None
        # The client's own close (the kernel drains first; this is what runs when draining gives up).
        client = session._client
        assert client is not None
        assert client.close().remaining == ()
        assert not owned_alive(pid)
    finally:
        closed.set()
        worker.join(120)
        assert session.close() == []
    assert not worker.is_alive()
    err = outcome[0]
    assert isinstance(err, ReaError) and err.code in {"target_unavailable", "cancelled"}
    assert not owned_alive(pid)


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
        started = [o["pid"] for o in session._client.lineage() if o["event"] == "started"]  # type: ignore[union-attr]
        assert started and not any(owned_alive(p) for p in started if p != worker_pid(session))
    finally:
        assert session.close() == []


ORPHAN_SCRIPT = """
import os, sys
from rea import registry
from rea.context import CallContext
from rea.session import Session
session = Session(registry.load())
session.open(sys.argv[1], "angr", CallContext())
session.execute("list_documents", {}, CallContext())
print(session._client.worker_pid, flush=True)
os._exit(0)  # the server dies without closing anything
"""


def _exited(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X")


def test_worker_exits_when_the_server_dies(angr_programs: dict[str, Path]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", ORPHAN_SCRIPT, str(angr_programs["nopie"])],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    pid = int(out.split()[-1])
    # The worker watches its parent once a second; this bound only guards against a hang.
    wait_for(lambda: _exited(pid), f"the orphaned angr worker {pid} exited")
