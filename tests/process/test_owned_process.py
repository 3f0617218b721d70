"""The kernel's owned-process mechanism, driven with a tiny fake worker and plain programs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.process import OwnedProcess
from rea.process import ProcessSpec
from rea.process import SandboxPolicy
from rea.process import WorkerChannel
from rea.process import procfs
from rea.process import sandbox
from tests import toolchains
from tests.waiting import gone
from tests.waiting import wait_for

FAKE = str(Path(__file__).with_name("fake_worker.py"))


def channel(**env: str) -> WorkerChannel:
    spec = ProcessSpec(
        argv=(sys.executable, FAKE), resource="fake-worker", owner="fake", env={"PYTHONDONTWRITEBYTECODE": "1", **env}
    )
    return WorkerChannel(spec, label="fake", grace_s=0.5)


def alive(pid: int) -> bool:
    info = procfs.read(pid)
    return info is not None and info.state != "Z"


def kill_escaped(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_request_gets_its_reply_in_a_private_home() -> None:
    ch = channel(RTDB_BASE="{private}/cache/rtdb")
    reply = ch.request("echo", {"x": 1}, CallContext(), deadline_s=30).result()
    proc = ch.proc
    assert proc is not None
    assert reply["echo"] == {"x": 1} and reply["pid"] == proc.pid
    assert reply["home"].startswith(proc.private_dir) and reply["tmp"].startswith(proc.private_dir)
    assert reply["cwd"] == proc.private_dir and reply["cache"] == proc.private_dir + "/cache/rtdb"
    private = proc.private_dir
    assert ch.close().remaining == ()
    assert not os.path.exists(private) and not alive(reply["pid"])


def test_sigkill_mid_request_is_typed_and_the_next_request_restarts() -> None:
    ch = channel()
    first = ch.request("echo", {}, CallContext(), deadline_s=30).result()["pid"]
    private = ch.proc.private_dir if ch.proc else ""
    with pytest.raises(ReaError) as info:
        ch.request("die", {"signal": int(signal.SIGKILL)}, CallContext(), deadline_s=30, phase="dying")
    err = info.value
    assert err.code == "provider_unavailable"
    assert err.details["signal"] == "SIGKILL" and err.details["phase"] == "dying"
    assert "Traceback" not in err.message
    assert not os.path.exists(private) and not alive(first)
    second = ch.request("echo", {}, CallContext(), deadline_s=30).result()["pid"]
    assert second != first and ch.generation == 2
    assert ch.close().remaining == ()


def test_a_worker_that_died_idle_is_reported_once_then_replaced() -> None:
    ch = channel()
    pid = ch.request("echo", {}, CallContext(), deadline_s=30).result()["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: gone(pid), f"the killed worker {pid} exited")
    with pytest.raises(ReaError) as info:
        ch.request("echo", {}, CallContext(), deadline_s=30)
    assert info.value.code == "provider_unavailable" and info.value.details["signal"] == "SIGKILL"
    assert ch.request("echo", {}, CallContext(), deadline_s=30).result()["pid"] != pid
    ch.close()


def test_a_stopped_worker_hits_the_deadline_and_is_cleaned_up() -> None:
    ch = channel()
    pid = ch.request("echo", {}, CallContext(), deadline_s=30).result()["pid"]
    private = ch.proc.private_dir if ch.proc else ""
    os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(ReaError) as info:
        ch.request("echo", {}, CallContext(), deadline_s=1.0, phase="answering")
    assert info.value.code == "provider_timeout"
    assert info.value.details["timeout_ms"] == 1000
    assert time.monotonic() - started < 15
    assert not alive(pid) and not os.path.exists(private)
    assert ch.close().remaining == ()


def test_a_grandchild_that_left_the_session_is_reported_not_signalled() -> None:
    ch = channel()
    grandchild = ch.request("escape", {}, CallContext(), deadline_s=30).result()["grandchild"]
    try:
        # The worker answers before its grandchild has left the session: wait until it has.
        wait_for(lambda: os.getsid(grandchild) == grandchild, f"the grandchild {grandchild} left the session")
        outcome = ch.close()
        assert "descendant-process" in outcome.remaining
        assert str(grandchild) in outcome.reason
        assert alive(grandchild), "rea must never signal a process that left its session"
    finally:
        kill_escaped([grandchild])


def test_session_members_outside_the_group_and_deaf_to_sigterm_are_killed() -> None:
    ch = channel()
    child = ch.request("child", {}, CallContext(), deadline_s=30).result()["child"]
    assert ch.close().remaining == ()
    # Killed by close; its new parent reaps it when it is scheduled, which a loaded machine may delay.
    wait_for(lambda: not alive(child), f"the session member {child} was killed", timeout_s=30)


def test_a_recycled_pid_is_never_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = OwnedProcess.start(ProcessSpec(argv=("sleep", "30"), resource="sleeper", owner="test"))
    pid = proc.pid
    # Someone else reaps the leader: from now on its pid may name any process.
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    sent: list[Any] = []
    monkeypatch.setattr(os, "killpg", lambda *a: sent.append(("killpg", a)))
    monkeypatch.setattr(os, "kill", lambda *a: sent.append(("kill", a)))
    assert proc.send_signal(signal.SIGTERM)["delivered"] is False
    outcome = proc.terminate(0.1)
    assert sent == []
    assert outcome.remaining == ()
    assert proc.observe("after")["status"] == "unavailable"


def test_the_lineage_snapshot_has_the_contract_shape() -> None:
    ch = channel()
    ch.request("child", {}, CallContext(), deadline_s=30)
    snaps = ch.lineage()
    started, live = snaps[0], snaps[-1]
    assert started["event"] == "started" and live["event"] == "snapshot"
    for snap in (started, live):
        assert snap["status"] == "verified"
        assert set(snap) >= {"provider_id", "resource", "observed_at", "launcher_pid", "ppid", "pgid", "descendants"}
        assert snap["launcher_pid"] == os.getpid() == snap["ppid"] and snap["pgid"] == snap["pid"]
        assert snap["observed_at"].endswith("Z")
    assert len(live["descendants"]) == 1
    ch.close()
    closed = ch.lineage()[-1]
    assert closed["event"] == "closed" and closed["status"] == "verified"


def test_private_in_an_argument_names_the_private_directory() -> None:
    proc = OwnedProcess.start(
        ProcessSpec(
            argv=(sys.executable, "-c", "import sys; print(sys.argv[1])", "--profile={private}/profile"),
            resource="argv",
            owner="t",
            stdin="null",
        )
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()
    assert line == f"--profile={proc.private_dir}/profile"
    proc.wait_exit(30)
    assert proc.terminate().remaining == () and not os.path.exists(proc.private_dir)


def test_engine_exceptions_never_reach_the_caller_as_text() -> None:
    ch = channel()
    with pytest.raises(ReaError) as info:
        ch.request("fail", {}, CallContext(), deadline_s=30)
    assert info.value.code == "execution_failure"
    assert "ValueError" not in info.value.message and "internal detail" not in info.value.message
    # Kept for diagnosis, not sent: a thread drains the worker's stderr, so the traceback may land just after.
    wait_for(lambda: "ValueError" in ch.stderr_tail(), "the traceback kept in the worker's stderr tail")
    with pytest.raises(ReaError) as info:
        ch.request("fail", {"typed": True}, CallContext(), deadline_s=30)
    assert info.value.code == "unsupported_target" and info.value.details == {"why": "fake"}
    ch.close()


def test_an_allocation_an_engine_reports_in_its_own_words_under_the_cap_is_resource_constraint() -> None:
    # A thread pool under RLIMIT_AS fails with RuntimeError("can't start new thread"), not MemoryError.
    capped = WorkerChannel(
        ProcessSpec(
            argv=(sys.executable, FAKE),
            resource="fake-worker",
            owner="fake",
            env={"PYTHONDONTWRITEBYTECODE": "1"},
            address_space_bytes=512 << 20,
            memory_setting="REA_FAKE_MEMORY_LIMIT_MB",
        ),
        label="fake",
        grace_s=0.5,
    )
    try:
        with pytest.raises(ReaError) as info:
            capped.request("threads", {}, CallContext(), deadline_s=60)
        assert info.value.code == "resource_constraint"
        assert info.value.details["setting"] == "REA_FAKE_MEMORY_LIMIT_MB"
        assert "512 MiB" in info.value.message
        # The spent worker is replaced: the next request is answered.
        assert capped.request("echo", {"n": 1}, CallContext(), deadline_s=30).result()["echo"] == {"n": 1}
    finally:
        capped.close()
    # Without a cap the same words are the engine's own failure, not the cap's.
    ch = channel()
    try:
        with pytest.raises(ReaError) as info:
            ch.request("fail", {}, CallContext(), deadline_s=30)
        assert info.value.code == "execution_failure"
    finally:
        ch.close()


def test_an_oversized_frame_is_a_protocol_violation() -> None:
    ch = channel()
    with pytest.raises(ReaError) as info:
        ch.request("garbage", {}, CallContext(), deadline_s=30)
    assert info.value.code == "provider_unavailable" and "protocol" in info.value.message
    assert ch.proc is None
    big = ch.request("big", {"size": 3_000_000}, CallContext(), deadline_s=30)
    assert len(big.result()) == 3_000_000 and big.limitations == ["big"]
    ch.close()


def test_cancellation_and_progress_reach_the_worker_and_the_caller() -> None:
    ch = channel()
    updates: list[str] = []
    signal_ = CancelSignal()
    ctx = CallContext(signal_, lambda _n, _t, message: updates.append(message))
    timer = threading.Timer(0.8, signal_.cancel)
    timer.start()
    with pytest.raises(ReaError) as info:
        ch.request("sleep", {"steps": 100, "step_s": 0.05}, ctx, deadline_s=30, phase="sleeping", announce=True)
    assert info.value.code == "cancelled"
    assert any("step" in u for u in updates) and updates[0].startswith("fake: sleeping")
    assert ch.proc is None
    ch.close()


# This process's own resource name: another test run on the machine cycling at the same time has other folders.
CYCLE = f"cycle{os.getpid()}"


def _rea_dirs() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"rea-{CYCLE}-")}


def test_a_thousand_start_and_close_cycles_leave_nothing() -> None:
    before = _rea_dirs()
    started = time.monotonic()
    pids = []
    for _ in range(1000):
        proc = OwnedProcess.start(ProcessSpec(argv=("cat",), resource=CYCLE, owner="test"))
        pids.append(proc.pid)
        assert proc.terminate(1.0).remaining == ()
    seconds = time.monotonic() - started
    assert _rea_dirs() == before
    assert not [p for p in pids if alive(p)]
    print(f"\n1000 owned-process cycles: {seconds:.1f} s, {seconds:.2f} ms per cycle; nothing left")


# A server's exit handler races threads still running: a warm-up that starts an engine's worker, a start midway.
EXIT_RACE = """
import os, sys, threading
from rea.errors import ReaError
from rea.process import OwnedProcess, ProcessSpec, owned

spec = ProcessSpec(argv=("sleep", "60"), resource="exit-race", owner="test")
entered, gate, started = threading.Event(), threading.Event(), []
spawn = owned._SPAWNER.run

def held_spawn(job):
    entered.set()
    gate.wait()
    return spawn(job)

owned._SPAWNER.run = held_spawn
threading.Thread(target=lambda: started.append(OwnedProcess.start(spec)), daemon=True).start()
entered.wait()
threading.Timer(0.3, gate.set).start()
owned._terminate_all()  # waits for the start midway, then ends what it started
owned._SPAWNER.run = spawn
try:
    OwnedProcess.start(spec)
except ReaError as err:
    print(err.code, started[0].pid)
"""


def test_the_exit_handler_ends_a_start_midway_and_refuses_any_later_one(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    ran = subprocess.run([sys.executable, "-c", EXIT_RACE], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout, "a start after the exit handler began was not refused"
    code, pid = ran.stdout.split()
    assert code == "cancelled"
    assert gone(int(pid))
    assert [n for n in os.listdir(tmp_path) if n.startswith("rea-")] == []


# Under a cap an engine may turn a refused allocation into an error of its own ("libz3.so not found"): read as the
# cap once the peak is near it. The bound a worker inherits from rea's own limit is the one its error names.
AT_THE_CAP = """
import resource
from rea.process.channel import memory_exhausted
from rea.process.owned import ProcessSpec
from rea.process.memory import refused_allocation

print(refused_allocation(ValueError("libz3.so not found")))
peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmPeak")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (peak + (256 << 20), peak + (256 << 20)))
print(refused_allocation(ValueError("libz3.so not found")))
held = []
try:
    while True:
        held.append(bytearray(4 << 20))
except MemoryError:
    held.clear()
null_return = SystemError("error return without exception set")
print(refused_allocation(ValueError("libz3.so not found")), refused_allocation(null_return))
spec = ProcessSpec(argv=("x",), resource="w", address_space_bytes=1 << 40, memory_setting="REA_X_MEMORY_LIMIT_MB")
print(memory_exhausted(spec, "parse", "parsing").message)
"""


def test_an_engine_error_at_the_cap_is_the_cap_and_an_inherited_bound_is_named() -> None:
    ran = subprocess.run([sys.executable, "-c", AT_THE_CAP], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-2000:]
    uncapped, far, near, message = ran.stdout.splitlines()
    assert (uncapped, far, near) == ("False", "False", "True True")
    assert "1048576 MiB" not in message and "MiB address-space bound" in message


# -- sandbox ------------------------------------------------------------------------------------


@pytest.fixture
def bwrap() -> str:
    path = toolchains.require("bwrap")
    failure = sandbox.bwrap_failure()
    if failure is not None:
        toolchains.unavailable(failure)
    return path


def _run(argv: tuple[str, ...], policy: SandboxPolicy) -> tuple[int | None, OwnedProcess]:
    proc = OwnedProcess.start(
        ProcessSpec(argv=argv, resource="sandboxed", owner="test", sandbox=policy, stdout="null", stdin="null")
    )
    status = proc.wait_exit(30)
    return status, proc


def test_a_sandboxed_program_writes_only_its_writable_roots(bwrap: str, tmp_path: Path) -> None:
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    allowed.mkdir()
    denied.mkdir()
    script = f"touch {allowed}/ok; touch {denied}/no; touch /tmp/private-ok"
    status, proc = _run(("sh", "-c", script), SandboxPolicy(writable_roots=(str(allowed),)))
    assert proc.isolation.sandbox == "bubblewrap" and proc.isolation.policy is not None
    proc.terminate()
    assert (allowed / "ok").exists()
    assert not (denied / "no").exists()
    assert status == 0  # the private /tmp was writable
    assert not os.path.exists("/tmp/private-ok")


def test_a_program_kept_under_tmp_still_runs_in_the_private_tmp(bwrap: str, tmp_path: Path) -> None:
    # A fresh clone or tox env under /tmp holds the interpreter and the workers; the private /tmp must not hide them.
    program = tmp_path / "bin" / "hello"
    program.parent.mkdir()
    program.write_text('#!/bin/sh\necho sandboxed > "$1"\n')
    program.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    status, proc = _run((str(program), str(out / "said")), SandboxPolicy(writable_roots=(str(out),)))
    proc.terminate()
    assert status == 0 and (out / "said").read_text() == "sandboxed\n"
    assert proc.isolation.sandbox == "bubblewrap"


def test_loopback_only_when_allowed(bwrap: str) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
    try:
        denied, p1 = _run((sys.executable, "-c", probe), SandboxPolicy())
        allowed, p2 = _run((sys.executable, "-c", probe), SandboxPolicy(allow_loopback=True))
        p1.terminate()
        p2.terminate()
    finally:
        server.close()
    assert denied != 0 and allowed == 0


def test_a_required_sandbox_without_bwrap_is_typed_unless_none_is_accepted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sandbox.bwrap_failure.cache_clear()
    monkeypatch.setenv("PATH", str(tmp_path))
    try:
        with pytest.raises(ReaError) as info:
            OwnedProcess.start(
                ProcessSpec(argv=(sys.executable, "-c", "pass"), resource="s", owner="t", sandbox=SandboxPolicy())
            )
        assert info.value.code == "provider_unavailable"
        assert "bubblewrap" in info.value.remediation
        proc = OwnedProcess.start(
            ProcessSpec(
                argv=(sys.executable, "-c", "pass"), resource="s", owner="t", sandbox=SandboxPolicy(accept_none=True)
            )
        )
        assert proc.isolation.sandbox == "none" and "bwrap" in proc.isolation.reason
        proc.wait_exit(30)
        assert proc.terminate().remaining == ()
    finally:
        monkeypatch.undo()
        sandbox.bwrap_failure.cache_clear()


def test_plugins_start_processes_only_through_the_kernel() -> None:
    root = Path(__file__).resolve().parents[2] / "rea_plugins"
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        for needle in (
            "subprocess.Popen",
            "subprocess.run(",
            "subprocess.call(",
            "subprocess.check_output(",
            "os.fork(",
            "os.spawn",
            "os.posix_spawn",
            "os.exec",
        ):
            if needle in text:
                offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []
