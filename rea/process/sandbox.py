"""Isolation for code rea runs but did not write (scenario targets, debuggees, browsers): bubblewrap.

The policy: the program sees only what it is given (``given``): the system's library and runtime trees and the
part of /etc that loading and lookups read, read-only; its own file (or the folders a caller names); the writable
roots and its private directory (its home); a fresh /tmp, /var/tmp and /dev/shm. Nothing else of the host is
there, so neither a root-only file elsewhere, nor rea's cache key, annotations or another process's browser
profile, wherever they are configured. No network unless loopback is allowed, no new privileges, all
capabilities dropped, and the sandbox dies with the server. Every capture records what the program was given.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import glob
import importlib.util
import os
import pwd
import shutil
import site
import subprocess
import sys
import tempfile
import time
from typing import Literal

import msgspec

from rea import config
from rea.errors import ReaError
from rea.process import confine
from rea.process import procfs

BWRAP_PACKAGE = "bubblewrap"
# Where a dynamically linked program loads from. A top-level link (/bin -> usr/bin on a merged-/usr host) is made
# the same link inside, so paths resolve as on the host.
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# From /etc and /var only what loading, user and name lookup, time, locale, terminals, TLS roots, fonts and the
# browser's own configuration read: never shadow files, SSH, sudo, private TLS keys or a database's settings.
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/default/locale",
    "/etc/terminfo",
    "/etc/inputrc",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/crypto-policies",
    "/etc/fonts",
    "/etc/xdg",
    "/etc/chromium",
    "/etc/chromium.d",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/lsb-release",
    "/etc/python3*",
    "/var/cache/fontconfig",
)
# Hidden again where a given root holds them (a working directory of / or /etc, a home given whole).
HIDDEN_DIRS = ("/root", "/etc/ssh", "/var/lib/cloud")
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
# Credential folders and files under a home, hidden again where a writable or readable root holds the home.
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
    # Host paths given read-only besides the system's and the program's own file: e.g. the program's folder.
    readable_roots: tuple[str, ...] = ()
    # Loopback needs the host's network namespace, so other addresses are not blocked either.
    allow_loopback: bool = False
    # False: a host without bubblewrap is a typed error. True: run unsandboxed and record why.
    accept_none: bool = False
    # Tasks (processes and threads) alive at once: a pids cgroup where rea can make one, else RLIMIT_NPROC.
    max_tasks: int = DEFAULT_MAX_TASKS


# read-only, read-write: that host path (``source`` when it is bound from elsewhere); empty: a fresh empty folder;
# hidden: emptied (a folder) or /dev/null (a file) inside a given root; link: a symbolic link to ``source``;
# devices: a minimal /dev (null, zero, random, tty); processes: /proc of the sandbox's own processes.
Access = Literal["read-only", "read-write", "empty", "hidden", "link", "devices", "processes"]


class Bind(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One path the sandboxed program was given."""

    path: str
    access: Access
    source: str | None = None


class ProcessBound(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How many processes a sandboxed program may run, and what enforces it."""

    # None where nothing bounds it (uid 0 without a pids cgroup).
    max: int | None
    by: Literal["pids cgroup", "RLIMIT_NPROC", "none"]
    # Under RLIMIT_NPROC: the limit set, the uid's running processes counted in.
    rlimit: int | None = None
    counts: str | None = None
    reason: str | None = None


class Policy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What confined one process, said plainly: bubblewrap's binds, network, user and lifetime, or, without a
    sandbox, what the program can reach."""

    filesystem: str | None = None
    writable_roots: list[str] | None = None
    readable_roots: list[str] | None = None
    network: str
    user: str | None = None
    privileges: str | None = None
    processes: ProcessBound
    lifetime: str | None = None
    reachable: list[str] | None = None


class Isolation(msgspec.Struct, frozen=True, kw_only=True):
    """The isolation that applied to one process, as captures record it."""

    sandbox: str  # "bubblewrap" or "none"
    reason: str = ""
    policy: Policy | None = None
    # The pids cgroup the process runs in (its owner lists and releases what is left there), if any.
    cgroup: str | None = None
    # Under bubblewrap, everything of the filesystem the program was given, in mount order.
    binds: tuple[Bind, ...] = ()


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


def _bound_processes(limit: int) -> tuple[str | None, int, ProcessBound]:
    """(cgroup, RLIMIT_NPROC, record): a pids cgroup where rea can make one, else RLIMIT_NPROC where it binds."""
    cgroup, why = confine.pids_cgroup(limit)
    if cgroup is not None:
        return cgroup, 0, ProcessBound(max=limit, by="pids cgroup", counts="processes and threads")
    if os.getuid() == 0:
        return None, 0, ProcessBound(max=None, by="none", reason=f"{why}; RLIMIT_NPROC does not bind uid 0")
    # RLIMIT_NPROC counts every process of the uid: the bound is the ones running now plus the limit.
    mine = sum(1 for i in procfs.scan().values() if _uid(i.pid) == os.getuid())
    return (
        None,
        mine + limit,
        ProcessBound(
            max=limit,
            by="RLIMIT_NPROC",
            rlimit=mine + limit,
            counts="processes and threads",
            reason=f"{why}; RLIMIT_NPROC counts every process of uid {os.getuid()}",
        ),
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
    cwd = os.path.realpath(cwd)
    binds = given(argv[0], policy, private_dir, cwd)
    # bubblewrap maps the sandbox's uid to its caller's: under a root server the program would pass owner checks on
    # root's files. So the shim stages the given folders idmapped (root's files there appear as the sandbox
    # user's) and starts bubblewrap as that user: on the host the program is uid 65534 too.
    give: tuple[tuple[str, str], ...] = ()
    run_as: int | None = None
    unprivileged_why = ""
    staged: dict[str, str] = {}
    if userns and os.getuid() == 0:
        sources = [b for b in binds if b.access in ("read-only", "read-write") and not _is_system(b.path)]
        why = _idmap_failure([b.source or b.path for b in sources])
        if why is None:
            staged = {b.path: f"{confine.STAGE}/{i}" for i, b in enumerate(sources)}
            give = tuple((b.source or b.path, staged[b.path]) for b in sources)
            run_as = SANDBOX_UID
        else:
            unprivileged_why = why
    for bind in binds:
        cmd += _mount_args(bind, staged.get(bind.path))
    cgroup, nproc, processes = _bound_processes(policy.max_tasks + 2)  # bubblewrap's own two
    cmd += ["--chdir", cwd, "--", *argv]
    roots = [os.path.realpath(r) for r in policy.writable_roots]
    readable = [os.path.realpath(r) for r in policy.readable_roots]
    if not userns:
        user = f"uid {os.getuid()} (no user namespace on this host)"
    elif run_as is not None:
        user = (
            f"uid {SANDBOX_UID} in a user namespace and on the host (no capabilities); its given folders are "
            f"idmapped: root's files there are its own, and what it writes there is root's on disk"
        )
    elif os.getuid() == 0:
        # The binds (nothing of the host that was not given) are then what confine it.
        user = (
            f"uid {SANDBOX_UID} in a user namespace, mapped to host uid 0 (no capabilities; {unprivileged_why}): "
            "owner checks pass on root's files among its binds"
        )
    else:
        user = f"uid {SANDBOX_UID} in a user namespace (uid {os.getuid()} on the host, no capabilities)"
    record = Policy(
        filesystem="only the binds: the system's library and runtime trees and part of /etc read-only, the "
        "program, the writable roots and the private directory (its home); private /tmp and /dev/shm",
        writable_roots=roots,
        readable_roots=readable or None,
        network="host (loopback allowed; other addresses are not blocked)"
        if policy.allow_loopback
        else "none (own network namespace)",
        user=user,
        privileges="no new privileges, all capabilities dropped",
        processes=processes,
        lifetime="dies with the rea server; its pid namespace ends every process it started",
    )
    return confine.command(cmd, cgroup=cgroup, nproc=nproc, give=give, user=run_as), Isolation(
        sandbox="bubblewrap", policy=record, cgroup=cgroup, binds=_recorded(binds)
    )


def _recorded(binds: list[Bind]) -> tuple[Bind, ...]:
    """The binds as the capture keeps them: rea's folders hidden one by one in a temporary directory given as a
    root (a busy /tmp holds many) are said once, by their pattern."""
    temp = os.path.realpath(tempfile.gettempdir())
    kept: list[Bind] = []
    for bind in binds:
        name = os.path.basename(bind.path)
        if bind.access == "hidden" and os.path.dirname(bind.path) == temp and name.startswith(("rea-", ".rea-")):
            bind = Bind(path=os.path.join(temp, name.split("-", 1)[0] + "-*"), access="hidden")
            if bind in kept:
                continue
        kept.append(bind)
    return tuple(kept)


def given(program: str, policy: SandboxPolicy, private_dir: str, cwd: str) -> list[Bind]:
    """What the sandbox gives ``program``, in mount order (a path after every path that contains it).

    Nothing else of the host is there: not /root, /home, /srv, /var, nor the rest of /etc. A given root that holds
    rea's own state (the analysis cache and its key, the annotations, the temporary directory where private
    directories and browser profiles live), a home, or credentials gets those hidden again inside it.
    """
    mounts: dict[str, tuple[int, Bind]] = {}

    def add(order: int, path: str, access: Access, source: str | None = None) -> None:
        # The same path given twice: the later kind wins (a root given as /tmp replaces the empty /tmp).
        if path not in mounts or mounts[path][0] <= order:
            mounts[path] = (order, Bind(path=path, access=access, source=source))

    system: list[str] = []
    links: list[str] = []
    for tree in SYSTEM_TREES:
        if os.path.islink(tree):
            add(0, tree, "link", os.readlink(tree))
            links.append(tree)
        elif os.path.isdir(tree):
            add(0, tree, "read-only")
            system.append(tree)
    for name in SYSTEM_FILES:
        for path in sorted(glob.glob(name)):
            add(0, path, "read-only")
            system.append(path)
    add(0, "/dev", "devices")
    add(0, "/proc", "processes")
    for empty in ("/tmp", "/dev/shm", "/var/tmp"):
        add(0, empty, "empty")
    writable = list(
        dict.fromkeys([os.path.realpath(private_dir), *(os.path.realpath(r) for r in policy.writable_roots)])
    )
    for root in writable:
        add(2, root, "read-write")
    readable: list[str] = []
    # A read-only root inside a writable one would take the writing away: it is visible there already.
    for root in [*(os.path.realpath(r) for r in policy.readable_roots), *_runtime(program)]:
        if not _within(root, [*writable, *system, *readable]):
            add(1, root, "read-only")
            readable.append(root)
    located = os.path.abspath(shutil.which(program) or program)
    real = os.path.realpath(located)
    given_now = [*writable, *system, *readable]
    # /bin/sh on a merged-/usr host: the same link inside leads to the same file.
    if not _within(located, given_now) and not (_within(real, given_now) and _within(located, links)):
        add(1, located, "read-only", real if real != located else None)
        readable.append(located)
    if not _within(cwd, [*writable, *system, *readable]):
        add(1, cwd, "read-only")
        readable.append(cwd)
    roots = [r for r in [*writable, *readable] if r != os.path.realpath(private_dir)]
    for path in _secrets(roots, private_dir):
        add(3, path, "hidden")
    ordered = sorted(mounts.values(), key=lambda m: (0 if m[1].path == "/" else m[1].path.count("/"), m[0]))
    return [bind for _, bind in ordered]


def _within(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _secrets(roots: list[str], private_dir: str) -> list[str]:
    """Paths strictly inside a given root that stay hidden: rea's state, homes, credentials, shadow files."""
    homes = _homes()
    state = [*homes, *HIDDEN_DIRS, *HIDDEN_FILES]
    state += [os.path.join(home, name) for home in dict.fromkeys([*homes, "/root"]) for name in CREDENTIALS]
    for where in (config.cache_dir, config.annotations_dir):
        with contextlib.suppress(ReaError, ValueError):  # an invalid setting: that store is not used at all
            state.append(where())
    private = os.path.realpath(private_dir)
    temp = os.path.realpath(tempfile.gettempdir())
    if temp in roots:
        # The temporary directory given as a root: every private directory (a browser's profile) and staging
        # file of rea's there is hidden, the rest stays the program's.
        with contextlib.suppress(OSError), os.scandir(temp) as entries:
            state += [e.path for e in entries if e.name.startswith(("rea-", ".rea-")) and e.path != private]
    else:
        state.append(temp)  # hidden whole where a root holds it; the private directory is bound back inside
    found = []
    for path in dict.fromkeys(os.path.realpath(p) for p in state):
        if path != private and os.path.lexists(path) and any(path.startswith(r.rstrip("/") + "/") for r in roots):
            found.append(path)
    return found


def _is_system(path: str) -> bool:
    return _within(path, list(SYSTEM_TREES)) or any(fnmatch.fnmatchcase(path, p) for p in SYSTEM_FILES)


_IDMAP: dict[int | str, str | None] = {}


def _idmap_failure(paths: list[str]) -> str | None:
    """Why the given paths cannot be staged idmapped for an unprivileged bubblewrap (None when they can): probed
    by the shim itself, once per file system, or once per folder that holds other mounts (each must allow it)."""
    for path in paths:
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        try:
            key: int | str = folder if _holds_mounts(folder) else os.stat(folder).st_dev
        except OSError as exc:
            return f"cannot stat {folder}: {exc.strerror}"
        if key not in _IDMAP:
            _IDMAP[key] = _probe_idmap(folder)
        if _IDMAP[key] is not None:
            return _IDMAP[key]
    return None


def _holds_mounts(folder: str) -> bool:
    prefix = folder.rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo") as fh:
            # The fifth field is the mount point (spaces escaped as \040, which no prefix test here depends on).
            return any(line.split()[4].startswith(prefix) for line in fh if len(line.split()) > 4)
    except OSError:
        return True  # unknown: probe this folder itself


def _probe_idmap(folder: str) -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed"
    stage = f"{confine.STAGE}/0"
    inner = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    inner += ["--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--ro-bind", stage, "/tmp", "--"]
    try:
        proc = _probe(confine.command([*inner, "true"], give=((folder, stage),), user=SANDBOX_UID))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the unprivileged sandbox probe did not run: {exc}"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"no unprivileged sandbox for {folder}: {last[0][:200]}"
    return None


def _mount_args(bind: Bind, stage: str | None = None) -> list[str]:
    if bind.access == "link":
        assert bind.source is not None
        return ["--symlink", bind.source, bind.path]
    if bind.access == "devices":
        return ["--dev", bind.path]
    if bind.access == "processes":
        return ["--proc", bind.path]
    if bind.access == "empty":
        return ["--tmpfs", bind.path]
    if bind.access == "hidden":
        return ["--tmpfs", bind.path] if os.path.isdir(bind.path) else ["--ro-bind", "/dev/null", bind.path]
    flag = "--bind" if bind.access == "read-write" else "--ro-bind"
    return [flag, stage or bind.source or bind.path, bind.path]


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
    record = Policy(
        network="none (own network namespace, without bubblewrap)" if no_network else "host (any address)",
        processes=processes,
        reachable=reachable_unsandboxed(no_network, cgroup is not None),
    )
    return (
        confine.command(argv, cgroup=cgroup, nproc=nproc, no_network=no_network),
        Isolation(sandbox="none", reason=failure, policy=record, cgroup=cgroup),
    )


def _runtime(program: str) -> list[str]:
    """rea's interpreter, its libraries and rea's code, when the program is that interpreter (a Python worker)."""
    if os.path.realpath(shutil.which(program) or program) != os.path.realpath(sys.executable):
        return []
    candidates = [sys.prefix, sys.base_prefix, *sys.path]
    for name in ("rea", "rea_plugins"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:
                candidates += list(spec.submodule_search_locations)
    if site.ENABLE_USER_SITE:
        candidates.append(site.getusersitepackages())
    kept: list[str] = []
    for path in sorted({os.path.realpath(c) for c in candidates if c}):
        if os.path.exists(path) and not _within(path, kept):
            kept.append(path)
    return kept
