"""Isolation for code rea runs but did not write (scenario targets, debuggees, browsers): bubblewrap.

The policy: the whole filesystem read-only except the declared writable roots and the process's private
directory, a private /tmp, no network unless loopback is allowed, no new privileges, all capabilities
dropped, and the sandbox dies with the server. Every capture records which isolation applied.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
import time
from typing import Any

import msgspec

from rea.errors import ReaError
from rea.process import confine, procfs

BWRAP_PACKAGE = "bubblewrap"
# Read-only is not secret-free: these are hidden (empty tmpfs, or /dev/null over a file) unless a root re-binds them.
HIDDEN_DIRS = ("/root", "/etc/ssh", "/var/lib/cloud")
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
# Credential folders and files under a home, hidden again even where a writable or readable root re-binds the home.
CREDENTIALS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".netrc",
    ".pgpass",
    ".git-credentials",
)
SANDBOX_UID = 65534
# Tasks (processes and their threads) alive at once in one sandbox when the policy sets none: a browser needs
# a few hundred threads.
DEFAULT_MAX_TASKS = 1024


class SandboxPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What a sandboxed process may touch."""

    writable_roots: tuple[str, ...] = ()
    # Paths visible read-only even where the sandbox hides the host's (its private /tmp): e.g. the program's folder.
    readable_roots: tuple[str, ...] = ()
    # Loopback needs the host's network namespace, so other addresses are not blocked either.
    allow_loopback: bool = False
    # False: a host without bubblewrap is a typed error. True: run unsandboxed and record why.
    accept_none: bool = False
    # Tasks (processes and threads) alive at once: a pids cgroup where rea can make one, else RLIMIT_NPROC.
    max_tasks: int = DEFAULT_MAX_TASKS


class Isolation(msgspec.Struct, frozen=True, kw_only=True):
    """The isolation that applied to one process, as captures record it."""

    sandbox: str  # "bubblewrap" or "none"
    reason: str = ""
    policy: dict[str, Any] | None = None
    # The pids cgroup the process runs in (its owner lists and releases what is left there), if any.
    cgroup: str | None = None


def _probe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a short probe in a session of its own, and reap what it leaves to the server (its subreaper)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reap_session_zombies(proc.pid, settle_s=2.0)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def reap_session_zombies(sid: int, settle_s: float = 0.0) -> list[int]:
    """Reap the server's exited children of session ``sid`` (bubblewrap's pid 1 is orphaned to the server, its
    subreaper), waiting up to ``settle_s`` for those still exiting; never the session's leader."""
    me = os.getpid()
    reaped: list[int] = []
    deadline = time.monotonic() + settle_s
    while True:
        exiting = False
        for info in procfs.scan().values():
            if info.ppid != me or info.sid != sid or info.pid == sid:
                continue
            if info.state != "Z":
                exiting = True
                continue
            with contextlib.suppress(ChildProcessError, OSError):
                if os.waitpid(info.pid, os.WNOHANG)[0] == info.pid:
                    reaped.append(info.pid)
        if not exiting or time.monotonic() >= deadline:
            return reaped
        time.sleep(0.01)


@functools.cache
def bwrap_failure() -> str | None:
    """Why bubblewrap cannot run here (None when it can): missing, or refused by the host's namespaces."""
    path = shutil.which("bwrap")
    if path is None:
        return f"bwrap is not installed (Debian package {BWRAP_PACKAGE})"
    try:
        proc = _probe([path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"bwrap cannot create a sandbox on this host: {last[0][:200]}"
    return None


@functools.cache
def _user_namespace() -> bool:
    """Whether bubblewrap can run the program as an unprivileged uid in a user namespace here."""
    path = shutil.which("bwrap")
    try:
        return (
            path is not None
            and _probe(
                [
                    path,
                    "--unshare-all",
                    "--unshare-user",
                    "--uid",
                    str(SANDBOX_UID),
                    "--gid",
                    str(SANDBOX_UID),
                    "--die-with-parent",
                    "--ro-bind",
                    "/",
                    "/",
                    "--",
                    "true",
                ]
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _homes() -> list[str]:
    """The invoking user's home ($HOME and the password database's), resolved; never "/"."""
    found = [os.environ.get("HOME", "")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return sorted({os.path.realpath(h) for h in found if h and os.path.realpath(h) != "/"})


def _bound_processes(limit: int) -> tuple[str | None, int, dict[str, Any]]:
    """(cgroup, RLIMIT_NPROC, record): a pids cgroup where rea can make one, else RLIMIT_NPROC where it binds."""
    cgroup, why = confine.pids_cgroup(limit)
    if cgroup is not None:
        return cgroup, 0, {"max": limit, "by": "pids cgroup", "counts": "processes and threads"}
    if os.getuid() == 0:
        return None, 0, {"max": None, "by": "none", "reason": f"{why}; RLIMIT_NPROC does not bind uid 0"}
    # RLIMIT_NPROC counts every process of the uid: the bound is the ones running now plus the limit.
    mine = sum(1 for i in procfs.scan().values() if _uid(i.pid) == os.getuid())
    return (
        None,
        mine + limit,
        {
            "max": limit,
            "by": "RLIMIT_NPROC",
            "rlimit": mine + limit,
            "counts": "processes and threads",
            "reason": f"{why}; RLIMIT_NPROC counts every process of uid {os.getuid()}",
        },
    )


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def reachable_unsandboxed(network_isolated: bool, cgroup: bool = True) -> list[str]:
    """What a program run without a sandbox can reach, said plainly for the capture's isolation record."""
    uid, me = os.getuid(), os.getpid()
    who = "root: every process, file and device of the host" if uid == 0 else f"uid {uid}"
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as fh:
            scope = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        scope = 0
    # Yama limits attaching only (not /proc/<pid>/environ); root's CAP_SYS_PTRACE passes scope 1.
    ptrace = "ptrace" if scope == 0 or (uid == 0 and scope == 1) else f"no ptrace (Yama ptrace_scope {scope})"
    out = [
        f"runs as the server's uid ({who})",
        f"the server's environment (/proc/{me}/environ: the variables it started with), signals and {ptrace} "
        f"to pid {me}",
        "the whole filesystem with the server's permissions (home, credentials, /tmp)",
        f"every process of the same uid (signals, {ptrace}, /proc)",
    ]
    out.append("no network (own network namespace)" if network_isolated else "the host's network (any address)")
    if not cgroup:
        out.append(
            "no pids cgroup: a process it detaches (setsid after a double fork) is found only while its "
            "environment names the private directory; one that changes it can outlive the call unseen"
        )
    return out


def wrap(argv: list[str], policy: SandboxPolicy, private_dir: str, cwd: str) -> tuple[list[str], Isolation]:
    """The command line that runs ``argv`` under ``policy``, and the isolation record to keep."""
    failure = bwrap_failure()
    if failure is not None:
        if not policy.accept_none:
            raise ReaError(
                "provider_unavailable",
                f"a sandbox was required but {failure}",
                remediation=f"Install {BWRAP_PACKAGE} (apt-get install {BWRAP_PACKAGE}), or accept "
                "running without a sandbox where the tool allows it.",
                details={"reason": "sandbox_unavailable", "sandbox": "bubblewrap"},
            )
        return unsandboxed(argv, policy, failure)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    # No --new-session: the owned process already has a session of its own (no terminal of the server's to
    # inject into), and keeping the program in it lets rea prove it owns the program and signal it.
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    userns = _user_namespace()
    if userns:
        cmd += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    if policy.allow_loopback:
        cmd.append("--share-net")
    cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    homes = _homes()
    hidden_dirs = [d for d in dict.fromkeys([*homes, *HIDDEN_DIRS]) if os.path.isdir(d)]
    for folder in hidden_dirs:
        cmd += ["--tmpfs", folder]
    hidden_files = [f for f in HIDDEN_FILES if os.path.isfile(f)]
    for file in hidden_files:
        cmd += ["--ro-bind", "/dev/null", file]
    readable = [os.path.realpath(r) for r in policy.readable_roots]
    for root in _hidden_runtime(argv[0], ["/tmp", *hidden_dirs]):
        cmd += ["--ro-bind", root, root]
    for root in readable:
        cmd += ["--ro-bind", root, root]
    roots = [os.path.realpath(r) for r in policy.writable_roots]
    for root in [os.path.realpath(private_dir), *roots]:
        cmd += ["--bind", root, root]
    # A root re-binds a home (a working directory there): its credentials stay hidden.
    credentials = []
    for home in dict.fromkeys([*homes, "/root"]):
        for name in CREDENTIALS:
            path = os.path.join(home, name)
            if any(path.startswith(r + "/") for r in [*readable, *roots]):
                if os.path.isdir(path):
                    cmd += ["--tmpfs", path]
                    credentials.append(path)
                elif os.path.isfile(path):
                    cmd += ["--ro-bind", "/dev/null", path]
                    credentials.append(path)
    cgroup, nproc, processes = _bound_processes(policy.max_tasks + 2)  # bubblewrap's own two
    cmd += ["--chdir", cwd, "--", *argv]
    record = {
        "filesystem": "read-only except writable_roots and the private directory; private /tmp and /dev/shm",
        "writable_roots": roots,
        **({"readable_roots": readable} if readable else {}),
        "hidden": [*hidden_dirs, *hidden_files, *credentials],
        "network": "host (loopback allowed; other addresses are not blocked)"
        if policy.allow_loopback
        else "none (own network namespace)",
        "user": f"uid {SANDBOX_UID} in a user namespace (uid {os.getuid()} on the host, no capabilities)"
        if userns
        else f"uid {os.getuid()} (no user namespace on this host)",
        "privileges": "no new privileges, all capabilities dropped",
        "processes": processes,
        "lifetime": "dies with the rea server; its pid namespace ends every process it started",
    }
    return confine.command(cmd, cgroup=cgroup, nproc=nproc), Isolation(
        sandbox="bubblewrap", policy=record, cgroup=cgroup
    )


def unsandboxed(argv: list[str], policy: SandboxPolicy, failure: str) -> tuple[list[str], Isolation]:
    """Without bubblewrap: the network and process bounds still apply where the host allows; else typed errors."""
    no_network = not policy.allow_loopback
    if no_network:
        netns = confine.network_namespace_failure()
        if netns is not None:
            raise ReaError(
                "provider_unavailable",
                f"no network was asked for, but there is no sandbox ({failure}) and {netns}",
                remediation=f"Install {BWRAP_PACKAGE} (apt-get install {BWRAP_PACKAGE}), allow "
                "unprivileged user namespaces, or allow the host network where the tool "
                "offers it.",
                details={"reason": "network_isolation_unavailable", "sandbox": "none"},
            )
    cgroup, nproc, processes = _bound_processes(policy.max_tasks)
    record = {
        "network": "none (own network namespace, without bubblewrap)" if no_network else "host (any address)",
        "processes": processes,
        "reachable": reachable_unsandboxed(no_network, cgroup is not None),
    }
    return (
        confine.command(argv, cgroup=cgroup, nproc=nproc, no_network=no_network),
        Isolation(sandbox="none", reason=failure, policy=record, cgroup=cgroup),
    )


def _hidden_runtime(program: str, hidden: list[str]) -> list[str]:
    """Host paths under ``hidden`` folders that the program or rea's own interpreter needs (bound back read-only)."""
    # A checkout or virtualenv under /tmp (a fresh clone, a tox env there) is still the code rea runs.
    located = os.path.realpath(shutil.which(program) or program)
    candidates = [os.path.dirname(located), sys.prefix, sys.base_prefix, *sys.path]
    kept: list[str] = []
    for path in sorted({os.path.realpath(c) for c in candidates if c}):
        if (
            path in hidden
            or not any(path.startswith(h + "/") for h in hidden)
            or not os.path.isdir(path)
            or any(path.startswith(k + "/") for k in kept)
        ):
            continue
        kept.append(path)
    return kept
