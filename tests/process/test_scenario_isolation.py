"""What a capture_process_scenario program can reach and leave behind (issue 24 items 3, 12, 14, 15)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.process import procfs
from rea.process import sandbox
from rea.process.confine import network_namespace_failure
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.waiting import wait_for

PROGRAMS = {
    # Connects to 127.0.0.1:argv[1]; prints the outcome and exits 0 only when connected.
    "connect": r"""
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[1])); a.sin_addr.s_addr = htonl(0x7f000001);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("refused %s\n", strerror(errno));
        return 1;
    }
    printf("connected\n");
    return 0;
}
""",
    # Double-forks a setsid daemon that writes its pid to daemon.pid, then "outlived" a second later.
    "daemon": r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            FILE *f = fopen("daemon.pid.tmp", "w"); fprintf(f, "%d\n", (int)getpid()); fclose(f);
            rename("daemon.pid.tmp", "daemon.pid");
            sleep(1);
            f = fopen("outlived", "w"); if (f) fclose(f);
            sleep(30);
            return 0;
        }
        return 0;
    }
    for (int i = 0; i < 200 && access("daemon.pid", F_OK) != 0; i++) usleep(10000);
    return 0;
}
""",
    # For each argument: "uid" prints the uid, "shm:NAME" creates /dev/shm/NAME, "fork:N" forks N sleepers,
    # "find:PATH:TEXT" says whether PATH holds TEXT, anything else says whether that file is readable.
    "peek": r"""
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (strcmp(arg, "uid") == 0) { printf("uid %d\n", (int)getuid()); continue; }
        if (strncmp(arg, "shm:", 4) == 0) {
            char path[512]; snprintf(path, sizeof path, "/dev/shm/%s", arg + 4);
            int fd = open(path, O_CREAT | O_WRONLY, 0600);
            printf("shm %s\n", fd >= 0 ? "created" : "denied"); if (fd >= 0) close(fd); continue;
        }
        if (strncmp(arg, "fork:", 5) == 0) {
            int want = atoi(arg + 5), made = 0; pid_t kids[4096];
            for (int k = 0; k < want && k < 4096; k++) {
                pid_t p = fork();
                if (p == 0) { sleep(5); _exit(0); }
                if (p < 0) break;
                kids[made++] = p;
            }
            printf("forked %d\n", made); fflush(stdout);
            for (int k = 0; k < made; k++) kill(kids[k], SIGKILL);
            while (wait(NULL) > 0) {}
            continue;
        }
        if (strncmp(arg, "find:", 5) == 0) {
            char *path = arg + 5, *text = strchr(path, ':'); *text++ = 0;
            static char buf[1 << 16];
            int fd = open(path, O_RDONLY), found = 0;
            ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1, len = (ssize_t)strlen(text);
            for (ssize_t k = 0; n > 0 && k + len <= n; k++) if (memcmp(buf + k, text, len) == 0) found = 1;
            printf("%s %s\n", found ? "found" : n < 0 ? "unreadable" : "absent", path); continue;
        }
        int fd = open(arg, O_RDONLY);
        printf("%s %s\n", fd >= 0 ? "readable" : "denied", arg);
        if (fd >= 0) close(fd);
    }
    fflush(stdout);
    return 0;
}
""",
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return toolchains.compile_programs(PROGRAMS, tmp_path_factory.mktemp("isolation-programs"))


@pytest.fixture
def bwrap() -> str:
    return toolchains.require("bwrap")


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """bubblewrap unavailable to the provider: a PATH without bwrap."""
    bare = tmp_path / "bin-without-bwrap"
    bare.mkdir()
    sandbox.bwrap_failure.cache_clear()
    monkeypatch.setenv("PATH", str(bare))
    yield
    monkeypatch.undo()
    sandbox.bwrap_failure.cache_clear()


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    try:
        yield server, server.getsockname()[1]
    finally:
        server.close()


def _accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            return count
        conn.close()
        count += 1


def _zombie_children() -> list[int]:
    me = os.getpid()
    return [i.pid for i in procfs.scan().values() if i.ppid == me and i.state == "Z"]


def _alive(pid: int) -> bool:
    info = procfs.read(pid)
    return info is not None and info.state != "Z"


# -- item 3: network_access none without bubblewrap -------------------------------------------------------------


def test_no_network_holds_without_bubblewrap(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, no_bwrap: None, listener: tuple[socket.socket, int]
) -> None:
    failure = network_namespace_failure()
    server, port = listener
    args: dict[str, Any] = {
        "executable": str(programs["connect"]),
        "arguments": [str(port)],
        "working_directory": str(tmp_path),
        "sandbox": "preferred",
        "network_access": "none",
    }
    if failure is not None:
        # Where the host gives no network namespace either, "none" is refused, typed, never silently dropped.
        with pytest.raises(ReaError) as info:
            call_tool(rea_session, "capture_process_scenario", args)
        assert info.value.code == "provider_unavailable"
        assert info.value.details["reason"] == "network_isolation_unavailable" and info.value.remediation
        return
    capture = result_of(rea_session, "capture_process_scenario", args)
    assert capture["output"]["stdout"]["text"].startswith("refused")
    assert capture["lifecycle"]["exit"]["exit_code"] == 1
    assert _accepted(server) == 0
    isolation = capture["isolation"]
    assert isolation["sandbox"] == "none" and "bwrap" in isolation["reason"]
    assert isolation["policy"]["network"].startswith("none (own network namespace")
    # The control: the host network, when asked for, reaches the listener.
    host = result_of(rea_session, "capture_process_scenario", {**args, "network_access": "host"})
    assert host["output"]["stdout"]["text"] == "connected\n" and _accepted(server) == 1
    assert host["isolation"]["policy"]["network"].startswith("host")


# -- item 12: every child reaped, no daemon outlives the call -----------------------------------------------------


def test_short_sandboxed_programs_leave_no_zombie(rea_session: Session, tmp_path: Path, bwrap: str) -> None:
    sandbox.bwrap_failure()  # the host probe, once (it must not leave one either)
    before = set(_zombie_children())
    for _ in range(20):
        capture = result_of(
            rea_session, "capture_process_scenario", {"executable": "/bin/true", "working_directory": str(tmp_path)}
        )
        assert capture["lifecycle"]["exit"]["exit_code"] == 0 and capture["cleanup"]["cleanup"] == "complete"
    # Every child is reaped (rea reaps in the call; the wait only covers a reaper thread a loaded machine delays).
    wait_for(
        lambda: not set(_zombie_children()) - before, "no zombie child left by the sandboxed programs", timeout_s=10
    )


@pytest.mark.parametrize("cgroup", [True, False], ids=["pids-cgroup", "no-cgroup"])
def test_an_unsandboxed_setsid_daemon_is_found_and_ended(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, cgroup: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea.process import confine

    if not cgroup:
        # Found through its environment instead (HOME and TMPDIR name the capture's private directory).
        monkeypatch.setattr(confine, "_cgroup_parent", lambda: None)
        monkeypatch.setattr(confine, "_JOIN", [])
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {"executable": str(programs["daemon"]), "working_directory": str(tmp_path), "sandbox": "none"},
    )
    daemon = int((tmp_path / "daemon.pid").read_text())
    found = [m for m in capture["process_family"]["members"] if m["pid"] == daemon]
    processes = (capture["isolation"]["policy"] or {}).get("processes", {})
    if cgroup and processes.get("by", "pids cgroup") != "pids cgroup":
        pytest.skip(f"no writable pids cgroup here: {processes['reason']}")
    assert found and found[0]["in_session"] is False and found[0]["role"] == "program"
    ended = [s for s in capture["lifecycle"]["signals"] if daemon in s.get("pids", [])]
    assert ended and ended[0]["signal"] == "SIGKILL" and ended[0]["delivered"] is True
    assert ("pids cgroup" if cgroup else "environment") in ended[0]["reason"]
    assert not _alive(daemon) and daemon not in _zombie_children()
    assert capture["cleanup"] == {"cleanup": "complete", "resources": []}
    if cgroup:
        assert not Path(capture["isolation"]["cgroup"]).exists()


def test_a_sandboxed_setsid_daemon_dies_with_the_sandbox(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, bwrap: str
) -> None:
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {"executable": str(programs["daemon"]), "working_directory": str(tmp_path)},
    )
    assert capture["isolation"]["sandbox"] == "bubblewrap" and (tmp_path / "daemon.pid").exists()
    assert capture["cleanup"]["cleanup"] == "complete"
    time.sleep(1.5)  # the daemon would write "outlived" one second after it started
    assert not (tmp_path / "outlived").exists()


# -- item 14: the default sandbox hides secrets, has its own /dev/shm and uid, bounds processes ----------------


def test_the_default_sandbox_hides_secrets_and_bounds_processes(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "notes").write_text("secret")
    (home / ".ssh" / "id_ed25519").write_text("key")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    (work / "input").write_text("mine")
    shm = f"rea-isolation-{os.getpid()}"
    probes = [
        "/etc/shadow",
        "/etc/gshadow",
        "/root/.bashrc",
        str(home / "notes"),
        str(home / ".ssh" / "id_ed25519"),
        str(work / "input"),
        "uid",
        f"shm:{shm}",
        "fork:200",
    ]
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {
            "executable": str(programs["peek"]),
            "arguments": probes,
            "working_directory": str(work),
            "limits": {"max_tasks": 40},
        },
    )
    lines = capture["output"]["stdout"]["text"].splitlines()
    for path in probes[:5]:
        if os.path.exists(path):
            assert f"denied {path}" in lines, lines
    assert f"readable {work / 'input'}" in lines
    assert "shm created" in lines and not os.path.exists(f"/dev/shm/{shm}")
    policy = capture["isolation"]["policy"]
    # Neither the home nor /etc/shadow is given at all (issue 42: the sandbox binds what the program needs).
    given = {b["path"] for b in capture["isolation"]["binds"]}
    assert not {"/etc/shadow", "/etc", "/", str(home)} & given
    assert "private /tmp and /dev/shm" in policy["filesystem"]
    if "user namespace" in policy["user"]:
        assert f"uid {sandbox.SANDBOX_UID}" in lines
    processes = policy["processes"]
    forked = int(next(line for line in lines if line.startswith("forked")).split()[1])
    if processes["by"] == "none":
        pytest.skip(f"no process bound on this host: {processes['reason']}")
    assert processes["max"] == 42 and forked < 42
    assert capture["cleanup"]["cleanup"] == "complete"


# -- item 15: what an unsandboxed program reaches is said plainly ---------------------------------------------


def test_an_unsandboxed_capture_says_what_the_program_could_reach(
    rea_session: Session, programs: dict[str, Path], tmp_path: Path, bwrap: str
) -> None:
    environ = f"/proc/{os.getpid()}/environ"
    # What the kernel shows there is the environment the server started with (a secret given at launch).
    marker = Path(environ).read_bytes().split(b"\0")[0].decode()
    if not marker or ":" in marker:
        pytest.skip("the test process started with no usable environment entry")
    args = {
        "executable": str(programs["peek"]),
        "arguments": [f"find:{environ}:{marker}"],
        "working_directory": str(tmp_path),
    }
    bare = result_of(rea_session, "capture_process_scenario", {**args, "sandbox": "none"})
    # The record is true: this program did read the server's environment, and the record names it.
    assert bare["output"]["stdout"]["text"] == f"found {environ}\n"
    reachable = (bare["isolation"]["policy"] or {}).get("reachable", [])
    assert any(environ in line for line in reachable)
    assert any("ptrace" in line for line in reachable)
    boxed = result_of(rea_session, "capture_process_scenario", args)
    assert boxed["output"]["stdout"]["text"] != f"found {environ}\n"
    assert "reachable" not in boxed["isolation"]["policy"]


def test_without_a_pids_cgroup_the_record_says_what_is_unbounded(
    rea_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea.process import confine

    monkeypatch.setattr(confine, "_cgroup_parent", lambda: None)
    monkeypatch.setattr(confine, "_JOIN", [])
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {"executable": "/bin/true", "working_directory": str(tmp_path), "sandbox": "none"},
    )
    policy = capture["isolation"]["policy"]
    assert capture["isolation"]["cgroup"] is None
    assert policy["processes"]["by"] in ("none", "RLIMIT_NPROC") and "no pids cgroup" in policy["processes"]["reason"]
    assert any("outlive the call unseen" in line for line in policy["reachable"])


def test_an_owned_sandboxed_process_releases_its_pids_cgroup(tmp_path: Path, bwrap: str) -> None:
    from rea.process import OwnedProcess
    from rea.process import ProcessSpec
    from rea.process import SandboxPolicy

    proc = OwnedProcess.start(
        ProcessSpec(
            argv=("/bin/sleep", "5"),
            resource="cgroup-test",
            owner="test",
            stdin="null",
            stdout="null",
            sandbox=SandboxPolicy(max_tasks=8),
        )
    )
    cgroup = proc.isolation.cgroup
    if cgroup is None:
        proc.terminate(0.2)
        pytest.skip(f"no pids cgroup here: {proc.isolation.policy}")
    assert proc.isolation.policy is not None and proc.isolation.policy.processes.max == 10
    assert Path(cgroup, "pids.max").read_text().strip() == "10"
    assert proc.terminate(0.2).remaining == ()
    assert not Path(cgroup).exists()


def test_a_sweep_by_another_thread_never_takes_a_cgroup_just_made(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two programs started at once (a browser and a worker): one thread's sweep may list the other's cgroup between
    # its mkdir and its first write. Replay that interleaving exactly: a sweep right after every mkdir.
    from rea.process import confine

    path, why = confine.pids_cgroup(8)
    if path is None:
        pytest.skip(f"no pids cgroup here: {why}")
    assert confine.release(path)
    made = os.makedirs

    def made_then_swept(name: str, *args: Any, **kwargs: Any) -> None:
        made(name, *args, **kwargs)
        confine._sweep(os.path.dirname(name))

    monkeypatch.setattr(os, "makedirs", made_then_swept)
    path, why = confine.pids_cgroup(8)
    monkeypatch.undo()
    assert path is not None, why
    try:
        assert Path(path, "pids.max").read_text().strip() == "8"
    finally:
        assert confine.release(path)


def test_the_sweep_ends_what_a_dead_server_left_in_its_pids_cgroup() -> None:
    # A sandbox whose parent-death signal never came (bubblewrap's pid 1 arms it after forking the program) keeps
    # running in the dead server's cgroup: the next start's sweep kills it there and removes the cgroup.
    from rea.process import confine

    parent = confine._cgroup_parent()
    probe, why = confine.pids_cgroup(8)
    if probe is None or parent is None:
        pytest.skip(f"no pids cgroup here: {why}")
    assert confine.release(probe)
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    path = os.path.join(parent, f"{dead.pid}-1-{time.monotonic_ns() % 10**9}")
    os.makedirs(path)
    left = subprocess.Popen(["/bin/sleep", "60"])
    try:
        Path(path, "cgroup.procs").write_text(str(left.pid))
        assert confine.contains(path, left.pid)
        assert left.pid in confine.sweep()
        assert left.wait(10) == -9
        assert not os.path.exists(path)
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
        with contextlib.suppress(OSError):
            os.rmdir(path)


def test_the_confine_shim_keeps_a_hard_process_limit_it_cannot_raise() -> None:
    import resource
    import sys

    from rea.process import confine

    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    probe = "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC)[0])"
    done = subprocess.run(
        confine.command([sys.executable, "-I", "-S", "-c", probe], nproc=10**9),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == (10**9 if hard == resource.RLIM_INFINITY else min(10**9, hard))
