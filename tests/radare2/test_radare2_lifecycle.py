"""The worker rea owns for radare2: cancellation, deadlines, crashes, hostile input, close and reopen."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from tests.radare2.conftest import require_radare2
from tests.radare2.r2_support import cancel_on, op, open_r2, owned_alive, worker_pid
from tests.realcode import builds
from tests.waiting import wait_for


@pytest.fixture
def elf(native_fixtures: Any) -> str:
    require_radare2()
    return str(native_fixtures.get("elf-x64").path)


def _started(session: Session) -> list[int]:
    client: Any = session._client
    return [o["pid"] for o in client.lineage() if o["event"] == "started"]


def test_cancellation_mid_analysis_kills_the_worker(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real program's analysis takes seconds, so the cancel lands while radare2 is still in aaa: on a small fixture
    # the analysis could finish between the progress report and the cancel, and the call would rightly succeed.
    require_radare2()
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached analysis would skip the phase the test cancels in
    session = Session(rea_registry)
    open_r2(session, str(builds.cmark_gfm("x86_64-elf").binary))
    try:
        op(session, "list_documents")  # starts the worker and loads the binary; no analysis yet
        first = worker_pid(session)
        assert first is not None and owned_alive(first)
        with pytest.raises(ReaError) as info:
            session.execute("list_procedures", {}, cancel_on("analysis (aaa)"))
        assert info.value.code == "cancelled"
        assert not owned_alive(first) and worker_pid(session) is None
        # The binding stays; the next query starts a fresh worker.
        assert session.binding is not None and session.binding.provider.id == "radare2"
        assert op(session, "list_documents")
        second = worker_pid(session)
        assert second is not None and second != first
    finally:
        session.close()


def test_worker_crash_is_reported_then_recovered(r2_session: Session) -> None:
    op(r2_session, "list_documents")
    pid = worker_pid(r2_session)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # this test's own child: the worker the session started
    with pytest.raises(ReaError) as info:
        op(r2_session, "procedure_info", procedure="main")
    err = info.value
    assert err.code == "provider_unavailable" and err.retryable
    assert (err.details["exit_status"], err.details["signal"], err.details["pid"]) == (-9, "SIGKILL", pid)
    assert not owned_alive(pid)
    assert r2_session.binding is not None and r2_session.binding.provider.id == "radare2"
    assert op(r2_session, "procedure_info", procedure="main")["name"] == "main"
    client: Any = r2_session._client
    lineage = client.lineage()
    started = [o["pid"] for o in lineage if o["event"] == "started" and o["status"] == "verified"]
    assert pid in started and worker_pid(r2_session) in started
    crashed = [o for o in lineage if o["event"] == "crashed" and o["pid"] == pid]
    assert crashed and crashed[0]["signal"] == "SIGKILL"


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
    session = Session(rea_registry)
    open_r2(session, elf)
    try:
        with pytest.raises(ReaError) as info:
            op(session, operation)
        assert info.value.code == "provider_timeout"
        assert info.value.details["timeout_ms"] == 1 and info.value.details["phase"] == phase
        assert "REA_RADARE2_" in info.value.remediation
        assert worker_pid(session) is None
        started = _started(session)
        assert started and not any(owned_alive(p) for p in started)
    finally:
        assert session.close() == []


def test_query_deadline_costs_one_request(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_RADARE2_QUERY_TIMEOUT_MS", "1")
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")  # a cached answer would need no query to time out
    # Pseudo code of a 50 KB function (cmark-gfm's case folding) takes radare2 far longer than 1 ms; a small
    # function's can come back within the first millisecond.
    build = builds.cmark_gfm("x86_64-elf")
    address, _ = build.symbols()["cmark_utf8proc_case_fold"]
    session = Session(rea_registry)
    open_r2(session, str(build.binary))
    try:
        with pytest.raises(ReaError) as info:
            op(session, "procedure_pseudo_code", procedure=hex(address))
        assert (info.value.code, info.value.details["phase"]) == ("provider_timeout", "procedure_pseudo_code")
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
    rea_registry: Registry, elf: str, tmp_path: Path
) -> None:
    session = Session(rea_registry)
    pids = []
    try:
        for name, data in _corruptions(Path(elf).read_bytes()).items():
            path = tmp_path / name
            path.write_bytes(data)
            open_r2(session, str(path))
            try:
                op(session, "list_documents")
                op(session, "list_procedures")
                op(session, "procedure_pseudo_code", procedure="main")
            except ReaError as exc:
                assert exc.code in {"unsupported_target", "execution_failure", "invalid_request"}, (name, exc)
            pid = worker_pid(session)
            if pid is not None:
                pids.append(pid)
    finally:
        assert session.close() == []
    assert pids and not any(owned_alive(p) for p in pids)


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
    session = Session(rea_registry)
    open_r2(session, elf)
    op(session, "list_documents")
    started, closed = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def sink(_: float, _total: float | None, message: str) -> None:
        # Runs on the query's thread: hold the query at the start of the analysis until close has run.
        if "analysis (aaa)" in message and not started.is_set():
            started.set()
            closed.wait(60)

    def query() -> None:
        try:
            session.execute("list_procedures", {}, CallContext(sink=sink))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=query)
    thread.start()
    try:
        assert started.wait(60), "the query never reached the analysis"
        pid = worker_pid(session)
        assert pid is not None
        client: Any = session._client
        assert client.close().remaining == ()
        assert not owned_alive(pid)
    finally:
        closed.set()
        thread.join(60)
        assert session.close() == []
    assert not thread.is_alive()
    err = outcome[0]
    assert isinstance(err, ReaError) and err.code in {"target_unavailable", "cancelled"}


ORPHAN_SCRIPT = """
import os, sys
from rea import registry
from rea.context import CallContext
from rea.session import Session
session = Session(registry.load())
session.open(sys.argv[1], "radare2", CallContext())
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


def test_worker_exits_when_the_server_dies(elf: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", ORPHAN_SCRIPT, elf], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    pid = int(out.split()[-1])
    # The worker watches its parent once a second; this bound only guards against a hang.
    wait_for(lambda: _exited(pid), f"the orphaned radare2 worker {pid} exited")
