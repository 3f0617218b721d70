"""The worker an engine provider owns (angr, radare2): the helpers and the lifecycle checks both engines' tests run.

Each engine's tests call these with its provider id, the progress phase its analysis reports and its own bounds,
so cancellation, crashes, hostile input, close and the server's death are held to one standard for both.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.process import WorkerChannel
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.realcode import builds
from tests.waiting import wait_for


def op(session: Session, operation: str, **params: Any) -> Any:
    """The normalized result of one operation: through its tool when one is registered, else the provider."""
    if operation in session.registry.tools:
        return result_of(session, operation, params)
    return session.execute(operation, params, CallContext()).normalized


def open_with(session: Session, path: Path | str, provider_id: str) -> None:
    call_tool(session, "open_binary", {"path": str(path), "provider_id": provider_id})


def _stat_after_name(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent pid, ...); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def owned_alive(pid: int) -> bool:
    """Whether ``pid`` is still a child of this test process (zombies included)."""
    fields = _stat_after_name(pid)
    return fields is not None and int(fields[1]) == os.getpid()


def worker_pid(session: Session) -> int | None:
    client: Any = session._client
    return None if client is None else client.worker_pid


def started_pids(session: Session) -> list[int]:
    """The pids of every worker the session's client started."""
    client: Any = session._client
    return [o["pid"] for o in client.lineage() if o["event"] == "started"]


def cancel_on(phase: str) -> CallContext:
    """A context whose caller cancels as soon as the provider reports ``phase``."""

    def sink(_: float, _total: float | None, message: str) -> None:
        if phase in message:
            ctx.signal.cancel()

    ctx = CallContext(sink=sink)
    return ctx


@contextmanager
def shared_session(registry: Registry, path: Path | str, provider_id: str) -> Iterator[Session]:
    """One session (so one worker) on ``path``; closing it reports complete cleanup and leaves no worker."""
    session = Session(registry)
    open_with(session, path, provider_id)
    try:
        yield session
    finally:
        pid = worker_pid(session)
        closed = result_of(session, "close_binary", {})
        assert closed["cleanup"] == "complete" and closed["closed"] is True
        assert pid is None or not owned_alive(pid)


@contextmanager
def timed_out(
    registry: Registry, path: Path | str, provider_id: str, operation: str, **params: Any
) -> Iterator[tuple[Session, ReaError]]:
    """Runs ``operation`` in a fresh session under the deadline of 1 ms the caller set: it ends in a
    ``provider_timeout``, with no worker left. Yields the session, still open, and the error."""
    session = Session(registry)
    open_with(session, path, provider_id)
    try:
        with pytest.raises(ReaError) as info:
            op(session, operation, **params)
        assert info.value.code == "provider_timeout"
        assert worker_pid(session) is None
        yield session, info.value
    finally:
        assert session.close() == []


def check_cancellation_kills_the_worker(registry: Registry, provider_id: str, phase: str) -> None:
    """A call cancelled while the engine reports ``phase`` kills the worker; the next query starts a fresh one.

    A real program's analysis takes seconds, so the cancel lands while it is still running: on a small fixture the
    analysis could finish between the progress report and the cancel, and the call would rightly succeed. The
    caller turns the analysis cache off, since a cached analysis would skip the phase the test cancels in.
    """
    session = Session(registry)
    open_with(session, builds.cmark_gfm("x86_64-elf").binary, provider_id)
    try:
        op(session, "list_documents")  # starts the worker and loads the binary; no analysis yet
        first = worker_pid(session)
        assert first is not None and owned_alive(first)
        with pytest.raises(ReaError) as info:
            session.execute("list_procedures", {}, cancel_on(phase))
        assert info.value.code == "cancelled"
        assert not owned_alive(first) and worker_pid(session) is None
        # The binding stays; the next query starts a fresh worker.
        assert session.binding is not None and session.binding.provider.id == provider_id
        assert op(session, "list_documents")
        second = worker_pid(session)
        assert second is not None and second != first
    finally:
        session.close()


def check_worker_crash_is_reported_then_recovered(session: Session, provider_id: str) -> None:
    op(session, "list_documents")
    pid = worker_pid(session)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # this test's own child: the worker the session started
    with pytest.raises(ReaError) as info:
        op(session, "procedure_info", procedure="main")
    err = info.value
    assert err.code == "provider_unavailable" and err.retryable
    assert (err.details["exit_status"], err.details["signal"], err.details["pid"]) == (-9, "SIGKILL", pid)
    assert not owned_alive(pid)
    assert session.binding is not None and session.binding.provider.id == provider_id
    assert op(session, "procedure_info", procedure="main")["name"] == "main"
    client = session._client
    assert client is not None
    lineage = client.lineage()
    started = [o["pid"] for o in lineage if o["event"] == "started" and o["status"] == "verified"]
    assert pid in started and worker_pid(session) in started
    crashed = [o for o in lineage if o["event"] == "crashed" and o["pid"] == pid]
    assert crashed and crashed[0]["signal"] == "SIGKILL"


def _corruptions(original: bytes) -> dict[str, bytes]:
    rng = random.Random(5)
    garbled = bytearray(original)
    for i in range(64, 64 + 56 * 13):  # the program headers
        garbled[i] = rng.randrange(256)
    return {"truncated": original[:64], "garbled-program-headers": bytes(garbled)}


def check_corrupted_binaries_give_typed_errors(
    registry: Registry,
    original: Path,
    tmp_path: Path,
    provider_id: str,
    outcome: Callable[[str, ReaError | None], None] = lambda _name, _error: None,
) -> None:
    """A truncated and a garbled copy of ``original`` answer or fail with a typed error, and leave no worker.

    ``outcome`` sees each copy's name and its error (None when the engine made sense of it).
    """
    session = Session(registry)
    pids = []
    try:
        for name, data in _corruptions(original.read_bytes()).items():
            path = tmp_path / name
            path.write_bytes(data)
            open_with(session, path, provider_id)
            error = None
            try:
                op(session, "list_documents")
                op(session, "list_procedures")
                op(session, "procedure_pseudo_code", procedure="main")
            except ReaError as exc:
                assert exc.code in {"unsupported_target", "execution_failure", "invalid_request"}, (name, exc)
                error = exc
            outcome(name, error)
            pid = worker_pid(session)
            if pid is not None:
                pids.append(pid)
    finally:
        assert session.close() == []
    assert pids and not any(owned_alive(p) for p in pids)


def check_client_close_during_a_query_reaps_the_worker(
    registry: Registry, path: Path | str, provider_id: str, phase: str, wait_s: float
) -> None:
    """The client's own close (the kernel drains first; this is what runs when draining gives up) while a query
    is held at ``phase`` reaps the worker, and the query ends cancelled or refused."""
    session = Session(registry)
    open_with(session, path, provider_id)
    # Load first: the query's fresh context then reports ``phase`` as its first (never rate-bounded) update.
    op(session, "list_documents")
    started, closed = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def sink(_: float, _total: float | None, message: str) -> None:
        # Runs on the query's thread: hold the query at ``phase`` until close has run.
        if phase in message and not started.is_set():
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
        assert started.wait(wait_s), f"the query never reached {phase}"
        pid = worker_pid(session)
        assert pid is not None
        client = session._client
        assert client is not None
        assert client.close().remaining == ()
        assert not owned_alive(pid)
    finally:
        closed.set()
        worker.join(wait_s)
        assert session.close() == []
    assert not worker.is_alive()
    err = outcome[0]
    assert isinstance(err, ReaError) and err.code in {"target_unavailable", "cancelled"}
    assert not owned_alive(pid)


ORPHAN_SCRIPT = """
import os, sys
from rea import registry
from rea.context import CallContext
from rea.session import Session
session = Session(registry.load())
session.open(sys.argv[1], sys.argv[2], CallContext())
session.execute("list_documents", {}, CallContext())
print(session._client.worker_pid, flush=True)
os._exit(0)  # the server dies without closing anything
"""


def _exited(pid: int) -> bool:
    fields = _stat_after_name(pid)
    return fields is None or fields[0] in ("Z", "X")


def check_worker_exits_when_the_server_dies(path: Path | str, provider_id: str, timeout_s: float) -> None:
    out = subprocess.run(
        [sys.executable, "-c", ORPHAN_SCRIPT, str(path), provider_id],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    ).stdout
    pid = int(out.split()[-1])
    # The worker watches its parent once a second; this bound only guards against a hang.
    wait_for(lambda: _exited(pid), f"the orphaned {provider_id} worker {pid} exited")


def check_worker_answers_ping_and_refuses_queries_before_a_load(channel: WorkerChannel) -> None:
    try:
        assert channel.request("ping", {}, CallContext(), deadline_s=60).result() == {"pid": channel.pid}
        # Before a target is loaded every analysis request fails with a typed error, not a crash.
        with pytest.raises(ReaError) as info:
            channel.request("procedure_info", {"procedure": "main"}, CallContext(), deadline_s=60)
        assert info.value.code == "execution_failure"
    finally:
        assert channel.close().remaining == ()
