"""Confinement that works with or without bubblewrap: a pids cgroup, RLIMIT_NPROC, a network namespace.

Run as ``python -I -S confine.py [--cgroup DIR] [--nproc N] [--no-network] [--give SRC STAGE]... [--user UID]
-- ARGV...`` (standard library only): it joins the cgroup, sets the limit, leaves the host network, stages the
idmapped binds and becomes the unprivileged user, then becomes ARGV; any step that
fails ends it with status 126 before ARGV runs (fail closed). The server side creates the cgroup (which
also finds every process the program started, a double-forked ``setsid`` daemon included), lists its
members and removes it.
"""

from __future__ import annotations

# Only modules built into the interpreter at the top: the shim runs before every confined program, and each import
# costs it startup time.
import itertools
import os
import sys

TYPE_CHECKING = False  # typing's own flag would cost the shim the typing import; mypy reads this one the same way
if TYPE_CHECKING:
    import ctypes

CONFINE = os.path.abspath(__file__)
PIDS_V1 = "/sys/fs/cgroup/pids"
UNIFIED = "/sys/fs/cgroup"
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
# A cgroup of ours still empty this long after creation was never joined or has ended: the sweep removes it.
_STALE_S = 60.0
# How long a sweep waits for the processes it killed in a dead server's cgroup to exit before removing it.
_KILLED_EXIT_S = 2.0
_CREATED: dict[str, float] = {}
_SEQ = itertools.count(1)  # next() is atomic: threads that create cgroups at once get distinct names
_NETNS: list[str | None] = []
_JOIN: list[str | None] = []


def command(
    argv: list[str],
    *,
    cgroup: str | None = None,
    nproc: int = 0,
    no_network: bool = False,
    give: tuple[tuple[str, str], ...] = (),
    user: int | None = None,
) -> list[str]:
    """``argv`` behind the shim that applies the given confinement (``argv`` unchanged when there is none).

    ``give`` with ``user`` (a root server only): each (source, stage) is mounted at stage, in a mount namespace of
    the shim's own, idmapped so that root's files there are ``user``'s (and what ``user`` writes is root's on disk);
    then the shim becomes ``user`` and runs ``argv`` (bubblewrap, binding the stages)."""
    if cgroup is None and not nproc and not no_network and user is None:
        return argv
    opts = [
        *(["--cgroup", cgroup] if cgroup else []),
        *(["--nproc", str(nproc)] if nproc else []),
        *(["--no-network"] if no_network else []),
        *(arg for src, stage in give for arg in ("--give", src, stage)),
        *(["--user", str(user)] if user is not None else []),
    ]
    return [sys.executable, "-I", "-S", CONFINE, *opts, "--", *argv]


def _cgroup_parent() -> str | None:
    if os.path.isdir(PIDS_V1):
        return os.path.join(PIDS_V1, "rea")
    if os.path.exists(os.path.join(UNIFIED, "cgroup.controllers")):
        try:
            with open("/proc/self/cgroup") as fh:
                own = next((line.split(":", 2)[2].strip() for line in fh if line.startswith("0::")), None)
        except OSError:
            return None
        if own is not None:
            return os.path.join(UNIFIED, own.lstrip("/"), "rea")
    return None


def pids_cgroup(limit: int) -> tuple[str | None, str]:
    """A fresh pids cgroup bounded to ``limit`` processes: (its path, "") or (None, why there is none)."""
    if not _JOIN:
        # Creating a cgroup is not enough (cgroup v2 wants write access up to a common ancestor): a child must join.
        _JOIN.append(_probe_join(limit))
    if _JOIN[0] is not None:
        return None, _JOIN[0]
    return _create(limit)


def _probe_join(limit: int) -> str | None:
    import subprocess

    path, why = _create(limit)
    if path is None:
        return why
    try:
        proc = subprocess.run(
            command([sys.executable, "-I", "-S", "-c", "pass"], cgroup=path), capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the pids cgroup probe did not run: {exc}"
    finally:
        release(path)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"cannot join a pids cgroup: {last[0][:200]}"
    return None


def _create(limit: int) -> tuple[str | None, str]:
    import contextlib
    import time

    parent = _cgroup_parent()
    if parent is None:
        return None, "no pids cgroup controller is mounted"
    _sweep(parent)
    path = os.path.join(parent, f"{os.getpid()}-{next(_SEQ)}-{time.monotonic_ns() % 10**9}")
    # Known as fresh before it exists: another thread's sweep that lists it between mkdir and here would otherwise
    # take it for an old, empty cgroup of ours and remove it before the program joins.
    _CREATED[path] = time.monotonic()
    try:
        os.makedirs(path, exist_ok=False)
    except OSError as exc:
        _CREATED.pop(path, None)
        return None, f"cannot create a pids cgroup: {exc.strerror or exc}"
    try:
        with open(os.path.join(path, "pids.max"), "w") as fh:
            fh.write(str(limit))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        _CREATED.pop(path, None)
        return None, f"the cgroup has no pids controller: {exc.strerror or exc}"
    return path, ""


def sweep() -> list[int]:
    """What dead servers left in their pids cgroups: the processes still there killed, the cgroups removed (those
    emptied in time; the next sweep takes the rest). The pids killed."""
    parent = _cgroup_parent()
    return _sweep(parent) if parent is not None else []


def _sweep(parent: str) -> list[int]:
    """Remove empty cgroups a dead server left, after killing what still runs in them, and our own that are empty and
    old (never joined, or ended). A cgroup names its server's pid: a live one's is never touched."""
    import contextlib
    import signal
    import time

    try:
        names = os.listdir(parent)
    except OSError:
        return []
    now = time.monotonic()
    killed: list[int] = []
    orphaned: list[str] = []
    for name in names:
        path = os.path.join(parent, name)
        owner = name.split("-", 1)[0]
        if not owner.isdigit() or not os.path.isdir(path):
            continue
        if int(owner) == os.getpid():
            if now - _CREATED.get(path, 0.0) < _STALE_S:
                continue
        elif os.path.exists(f"/proc/{owner}"):
            continue
        else:
            # A sandbox whose parent-death signal never came (bubblewrap arms its pid 1's after forking the program:
            # a server killed in between leaves the sandbox running). The cgroup is the record of what it started.
            for pid in members(path):
                if contains(path, pid):  # still that process, not a pid reused since
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
            orphaned.append(path)
            continue
        with contextlib.suppress(OSError):
            os.rmdir(path)  # EBUSY while it has members: then it is not stale
            _CREATED.pop(path, None)
    deadline = time.monotonic() + (_KILLED_EXIT_S if killed else 0.0)
    for path in orphaned:
        while True:
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:  # the killed are still exiting (or it is not ours to remove): the next sweep tries again
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.02)
    return killed


def members(path: str) -> list[int]:
    """Pids in the cgroup now (zombies are not listed)."""
    try:
        with open(os.path.join(path, "cgroup.procs")) as fh:
            return sorted({int(line) for line in fh if line.strip()})
    except (OSError, ValueError):
        return []


def contains(path: str, pid: int) -> bool:
    """Whether ``pid`` is in the cgroup ``path`` now (read from the process's side)."""
    rel = "/" + os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            return any(line.rstrip("\n").endswith(rel) for line in fh)
    except OSError:
        return False


def release(path: str) -> bool:
    """Remove the cgroup; False while processes remain in it."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    _CREATED.pop(path, None)
    return True


def network_namespace_failure() -> str | None:
    """Why the shim cannot give a program a network namespace of its own here (None when it can); probed once."""
    if not _NETNS:
        _NETNS.append(_probe_network())
    return _NETNS[0]


def _probe_network() -> str | None:
    import subprocess

    try:
        proc = subprocess.run(
            command([sys.executable, "-I", "-S", "-c", "pass"], no_network=True),
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the network namespace probe did not run: {exc}"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"no network namespace: {last[0][:200]}"
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _leave_network() -> None:
    import contextlib
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() == 0 and libc.unshare(_CLONE_NEWNET) == 0:
        return
    # Unprivileged: a user namespace first, mapping only our own ids (the program keeps its uid on the host).
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    with contextlib.suppress(OSError):
        _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


# Where the shim stages idmapped binds: a tmpfs over /dev/shm in its own mount namespace (the host's is untouched,
# and bubblewrap gives the program a /dev/shm of its own). Every user may pass through it.
STAGE = "/dev/shm"
_CLONE_NEWNS = 0x00020000
_MS_REC, _MS_PRIVATE, _MS_NOSUID, _MS_NODEV = 0x4000, 0x40000, 0x2, 0x4
# Syscall numbers of the mount API, the same on x86-64 and arm64 (and every architecture since Linux 5.1).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC, _MOVE_MOUNT_F_EMPTY_PATH = 1, 0o2000000, 0x4
_MOUNT_ATTR_IDMAP = 0x00100000


def mapping_namespace(uid: int) -> int:
    """A descriptor of a user namespace whose uid and gid 0 are ``uid`` on the host (an idmapped mount's map)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only holds the namespace open while the parent maps it
        ok = libc.unshare(_CLONE_NEWUSER) == 0
        os.write(ready_w, b"1" if ok else b"0")
        os.read(done_r, 1)
        os._exit(0)
    try:
        if os.read(ready_r, 1) != b"1":
            raise OSError("cannot create a user namespace for the idmapped binds")
        _write(f"/proc/{pid}/uid_map", f"0 {uid} 1")
        _write(f"/proc/{pid}/gid_map", f"0 {uid} 1")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(done_w, b"x")
        os.waitpid(pid, 0)
        for fd in (ready_r, ready_w, done_r, done_w):
            os.close(fd)


def idmapped_clone(source: str, userns: int) -> int:
    """A detached copy of the mount tree at ``source`` seen through ``userns``'s map (root only)."""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    fd = int(libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, os.fsencode(source), flags))
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"cannot clone {source}: {os.strerror(ctypes.get_errno())}")
    attr = ctypes.create_string_buffer(struct.pack("QQQQ", _MOUNT_ATTR_IDMAP, 0, 0, userns))
    if libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE, attr, 32) != 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise OSError(err, f"cannot idmap {source}: {os.strerror(err)}")
    return fd


def _give(pairs: list[tuple[str, str]], uid: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:
            raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")

    check(libc.unshare(_CLONE_NEWNS), "no mount namespace")
    check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "cannot make the mounts private")
    userns = mapping_namespace(uid)
    kinds = [os.path.isdir(src) for src, _ in pairs]
    try:
        clones = [idmapped_clone(src, userns) for src, _ in pairs]
    finally:
        os.close(userns)
    check(libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755"), "no stage")
    for fd, is_dir, (src, stage) in zip(clones, kinds, pairs, strict=True):
        if is_dir:
            os.mkdir(stage)
        else:
            os.close(os.open(stage, os.O_CREAT | os.O_WRONLY, 0o644))
        check(libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, os.fsencode(stage), _MOVE_MOUNT_F_EMPTY_PATH), src)
        os.close(fd)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _die_with(parent: int, libc: ctypes.CDLL) -> bool:
    """SIGKILL this process when ``parent`` ends; False when it already has (nobody would stop us then)."""
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: no import here, the stdlib may be out of reach by now
    return os.getppid() == parent


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.stderr.write(
            "usage: confine.py [--cgroup DIR] [--nproc N] [--no-network] [--give SRC STAGE]... [--user UID] "
            "-- ARGV...\n"
        )
        return 126
    cut = argv.index("--")
    opts, program = argv[:cut], argv[cut + 1 :]
    try:
        if "--cgroup" in opts:
            _write(os.path.join(opts[opts.index("--cgroup") + 1], "cgroup.procs"), "0")
        if "--nproc" in opts:
            import resource

            limit = int(opts[opts.index("--nproc") + 1])
            hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
            # A hard limit below ours is already a tighter bound (raising it needs a privilege we may lack).
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        if "--no-network" in opts:
            _leave_network()
        if "--user" in opts:
            gives = [(opts[i + 1], opts[i + 2]) for i, opt in enumerate(opts) if opt == "--give"]
            parent = os.getppid()
            import ctypes  # before the uid changes: the interpreter's library may not be readable by that uid

            libc = ctypes.CDLL(None, use_errno=True)
            _give(gives, int(opts[opts.index("--user") + 1]))
            # Changing the uid clears the parent-death signal the launch shim set: armed again, a server killed
            # while the program runs (or before this line) still takes it down, bubblewrap and browser included.
            if not _die_with(parent, libc):
                return 126
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"rea confine: not applied, the program was not started: {exc}\n")
        return 126
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"rea confine: cannot execute {program[0]}: {exc.strerror}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
