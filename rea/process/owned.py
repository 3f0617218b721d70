"""An owned process: started by rea in its own session, proven rea's before any signal, and cleaned up.

Ownership rules, kept here once for every plugin:

- the process starts in a new session and process group whose id is its pid, through a shim that makes
  it die with the server and applies the address-space cap before exec;
- a signal goes only to that group (or to members of that session) while the leader is unreaped: an
  unreaped leader keeps its pid, so the id cannot name a stranger;
- a descendant that left the session (``setsid``) is reported, never signalled;
- it gets a private directory (its HOME, TMPDIR, XDG and engine-cache root), removed at termination.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import IO
from typing import Any
from typing import Literal
from typing import TypeVar

import msgspec

from rea.errors import ReaError
from rea.errors import cancelled
from rea.process import confine
from rea.process import leftovers
from rea.process import procfs
from rea.process.memory import effective_address_space
from rea.process.sandbox import Isolation
from rea.process.sandbox import SandboxPolicy
from rea.process.sandbox import wrap
from rea.providers import CloseOutcome
from rea.records import JSONObject

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
# Variables a process inherits by default; everything else is explicit.
DEFAULT_INHERIT: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
STDERR_TAIL_BYTES = 16 * 1024
KILL_WAIT_S = 5.0
POLL_S = 0.02

T = TypeVar("T")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def status_details(returncode: int | None) -> JSONObject:
    """``exit_status`` (and ``signal`` when a signal ended it) for errors and lineage."""
    if returncode is None:
        return {"exit_status": None}
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return {"exit_status": returncode, "signal": name}
    return {"exit_status": returncode}


class ProcessSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How to start one owned process."""

    # The text "{private}" in an argument is replaced by the private directory (e.g. a browser's profile flag).
    argv: tuple[str, ...]
    # The owned resource kind named in lineage and in ``cleanup_incomplete`` (e.g. "angr-worker").
    resource: str
    # The provider or driver that owns it (lineage).
    owner: str = ""
    # Explicit variables; the text "{private}" in a value is replaced by the private directory.
    env: dict[str, str] = {}
    inherit_env: tuple[str, ...] = DEFAULT_INHERIT
    # Working directory; default: the private directory.
    cwd: str | None = None
    # RLIMIT_AS of the process and everything it starts; 0: no cap.
    address_space_bytes: int = 0
    # The setting that sets that bound (named in a resource_constraint when the process exhausts it).
    memory_setting: str = ""
    stdin: Literal["pipe", "null"] = "pipe"
    stdout: Literal["pipe", "null"] = "pipe"
    # "tail": the last STDERR_TAIL_BYTES are kept for diagnostics.
    stderr: Literal["tail", "pipe", "null"] = "tail"
    # A pseudo-terminal as controlling terminal and stdin/stdout/stderr (the pipes above are ignored).
    terminal: bool = False
    terminal_size: tuple[int, int] = (24, 80)
    sandbox: SandboxPolicy | None = None
    # Its private directory can hold secrets (a browser profile's storage): removed before anything else at
    # shutdown, and first by the sweep after a kill.
    holds_secrets: bool = False


class _Spawner:
    """Starts every owned process from one thread that lives as long as the server.

    Linux sends the parent-death signal when the *thread* that forked a child exits; spawning from a
    short-lived worker thread would kill the child with it.
    """

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="rea-process-spawner", daemon=True)
                self._thread.start()
        box: list[Any] = []
        done = threading.Event()
        self._jobs.put((job, box, done))
        done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        result: T = value
        return result

    def _loop(self) -> None:
        while True:
            job, box, done = self._jobs.get()
            try:
                box.append((True, job()))
            except BaseException as exc:
                box.append((False, exc))
            done.set()


_SPAWNER = _Spawner()
_SUBREAPER: list[bool] = []


def _become_subreaper() -> None:
    """Orphans of owned processes come back to the server, so it can reap them (pid 1 may never do)."""
    if _SUBREAPER or not sys.platform.startswith("linux"):
        return
    _SUBREAPER.append(True)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


_LIVE: set[OwnedProcess] = set()
_LIVE_LOCK = threading.Lock()
# Set by the exit handler: a thread still running then (a background warm-up, an abandoned call) starts nothing,
# since nothing would be left to terminate it or remove its directory.
_exiting = False


def _executable_missing(program: str, path_env: str | None) -> str | None:
    if os.sep in program:
        return None if os.access(program, os.X_OK) and os.path.isfile(program) else f"{program} is not executable"
    return None if shutil.which(program, path=path_env) else f"{program} is not on PATH"


class OwnedProcess:
    """One process rea started and owns; see the module docstring for the rules."""

    def __init__(self, spec: ProcessSpec) -> None:
        self.spec = spec
        self.private_dir = tempfile.mkdtemp(prefix=f"rea-{spec.resource}-")
        # A start after a SIGKILL of this server can prove it gone.
        leftovers.mark(self.private_dir, holds_secrets=spec.holds_secrets)
        self.isolation = Isolation(sandbox="none", reason="no sandbox requested")
        self.stdin: IO[bytes] | None = None
        self.stdout: IO[bytes] | None = None
        self.stderr: IO[bytes] | None = None
        self.terminal_fd: int | None = None
        self.started_at = now_iso()
        self._popen: subprocess.Popen[bytes] | None = None
        self._returncode: int | None = None
        self._reaped = False
        self._lost = False  # reaped by someone else: never signal again
        self._seen: dict[tuple[int, int], procfs.ProcInfo] = {}
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._tail_lock = threading.Lock()
        self._outcome: CloseOutcome | None = None
        self._lock = threading.RLock()

    # -- start ---------------------------------------------------------------------------------

    @classmethod
    def start(cls, spec: ProcessSpec) -> OwnedProcess:
        """Start ``spec``; a missing executable or a failed start is a typed ``provider_unavailable``, and a start
        once the server is exiting is ``cancelled``."""
        with _LIVE_LOCK:
            if _exiting:
                raise cancelled(f"the server's exit (starting {spec.resource})")
            # Listed (and locked) before its directory exists and its process starts: the exit handler, which
            # takes this process's lock to terminate it, waits for a start in progress instead of missing it.
            proc = cls(spec)
            proc._lock.acquire()
            _LIVE.add(proc)
        try:
            proc._start()
        except BaseException:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
            shutil.rmtree(proc.private_dir, ignore_errors=True)
            raise
        finally:
            proc._lock.release()
        return proc

    def _environment(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in self.spec.inherit_env if k in os.environ}
        private = self.private_dir
        layout = {
            "HOME": "home",
            "TMPDIR": "tmp",
            "XDG_CACHE_HOME": "cache",
            "XDG_CONFIG_HOME": "config",
            "XDG_DATA_HOME": "data",
            "XDG_RUNTIME_DIR": "run",
        }
        for var, sub in layout.items():
            path = os.path.join(private, sub)
            os.makedirs(path, mode=0o700, exist_ok=True)
            env[var] = path
        env["TMP"] = env["TEMP"] = env["TMPDIR"]
        env.setdefault("PATH", os.defpath)
        for key, value in self.spec.env.items():
            env[key] = value.replace("{private}", private)
        return env

    def _start(self) -> None:
        _become_subreaper()
        spec = self.spec
        env = self._environment()
        missing = _executable_missing(spec.argv[0], env.get("PATH"))
        if missing is not None:
            raise ReaError(
                "provider_unavailable",
                f"cannot start {spec.resource}: {missing}",
                remediation="Install the engine or check its configured path (`rea doctor`).",
                details={"reason": "executable_missing", "resource": spec.resource, "executable": spec.argv[0]},
            )
        cwd = spec.cwd or self.private_dir
        argv = [arg.replace("{private}", self.private_dir) for arg in spec.argv]
        if spec.sandbox is not None:
            argv, self.isolation = wrap(argv, spec.sandbox, self.private_dir, cwd)
        command = [
            sys.executable,
            "-I",
            "-S",
            LAUNCH,
            str(os.getpid()),
            str(effective_address_space(spec.address_space_bytes)),
            "1" if spec.terminal else "0",
            "--",
            *argv,
        ]
        slave: int | None = None
        if spec.terminal:
            master, slave = os.openpty()
            _set_winsize(slave, spec.terminal_size)
            self.terminal_fd = master
            stdin = stdout = stderr = slave
        else:
            pipe_or_null = {"pipe": subprocess.PIPE, "tail": subprocess.PIPE, "null": subprocess.DEVNULL}
            stdin, stdout, stderr = pipe_or_null[spec.stdin], pipe_or_null[spec.stdout], pipe_or_null[spec.stderr]

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command,
                env=env,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
            )

        try:
            self._popen = _SPAWNER.run(spawn)
        except OSError as exc:
            if self.terminal_fd is not None:
                os.close(self.terminal_fd)
            raise ReaError(
                "provider_unavailable",
                f"cannot start {spec.resource}: {exc.strerror or exc}",
                remediation="Check the engine installation (`rea doctor`).",
                details={"reason": "spawn_failed", "resource": spec.resource},
            ) from None
        finally:
            if slave is not None:
                os.close(slave)
        popen = self._popen
        self.stdin, self.stdout = popen.stdin, popen.stdout
        if spec.stderr == "tail" and popen.stderr is not None:
            threading.Thread(
                target=self._drain_stderr, args=(popen.stderr,), name=f"rea-{spec.resource}-stderr", daemon=True
            ).start()
        else:
            self.stderr = popen.stderr
        self._remember(self.observe_tree())

    # -- state ---------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        assert self._popen is not None
        return self._popen.pid

    def exit_status(self) -> int | None:
        """The exit status (negative: the signal) once the leader has exited, without reaping it."""
        with self._lock:
            if self._returncode is not None or self._lost:
                return self._returncode
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                # Reaped behind our back: the pid may already name another process.
                self._lost = True
                return None
            if info is None:
                return None
            if info.si_code == os.CLD_EXITED:
                self._returncode = info.si_status
            else:
                self._returncode = -info.si_status
            return self._returncode

    @property
    def running(self) -> bool:
        return not self._lost and not self._reaped and self.exit_status() is None

    def wait_exit(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` for the leader to exit (not reaping it); its status or None."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = self.exit_status()
            if status is not None or self._lost or time.monotonic() >= deadline:
                return status
            time.sleep(POLL_S)

    def stderr_tail(self) -> str:
        with self._tail_lock:
            return b"".join(self._tail).decode("utf-8", "replace")

    def _drain_stderr(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self._tail_lock:
                self._tail.append(chunk)
                self._tail_size += len(chunk)
                while self._tail_size > STDERR_TAIL_BYTES and len(self._tail) > 1:
                    self._tail_size -= len(self._tail.popleft())
        with contextlib.suppress(OSError):
            stream.close()

    # -- ownership -----------------------------------------------------------------------------

    def observe_tree(self) -> list[procfs.ProcInfo]:
        """The live process tree under the leader (empty once it is reaped)."""
        if self._reaped or self._lost:
            return []
        return procfs.descendants(self.pid, procfs.scan())

    def _remember(self, infos: list[procfs.ProcInfo]) -> None:
        for info in infos:
            self._seen[(info.pid, info.start)] = info

    def observe(self, event: str) -> JSONObject:
        """The contract's lineage snapshot: ``verified`` with pids and descendants, or ``unavailable``."""
        base: JSONObject = {
            "provider_id": self.spec.owner,
            "resource": self.spec.resource,
            "event": event,
            "observed_at": now_iso(),
            "pid": self.pid if self._popen else None,
        }
        with self._lock:
            if self._reaped or self._lost:
                reason = "the process was reaped" if self._reaped else "the process was reaped outside rea"
                return {**base, "status": "unavailable", "reason": reason, **status_details(self._returncode)}
            if not procfs.available():
                return {**base, "status": "unavailable", "reason": "this host has no /proc to check ownership"}
            table = procfs.scan()
            me = table.get(self.pid)
            if me is None:
                return {**base, "status": "unavailable", "reason": "the process is not visible in /proc"}
            if me.ppid != os.getpid() or me.pgid != self.pid:
                return {
                    **base,
                    "status": "unavailable",
                    "reason": f"parent {me.ppid} / group {me.pgid} do not match this server ({os.getpid()})",
                }
            tree = procfs.descendants(self.pid, table)
            self._remember(tree)
            return {
                **base,
                "status": "verified",
                "launcher_pid": os.getpid(),
                "ppid": me.ppid,
                "pgid": me.pgid,
                "descendants": sorted(i.pid for i in tree),
                "isolation": msgspec.to_builtins(self.isolation),
            }

    def send_signal(self, sig: int) -> JSONObject:
        """Signal the process group; only while the leader is unreaped. The delivery result is returned.

        Under bubblewrap the signal goes to the sandboxed program (the session members below bubblewrap's
        two processes), not to bubblewrap, which would die of it and take the sandbox down.
        """
        name = signal.Signals(sig).name
        with self._lock:
            self.exit_status()  # notices a leader reaped behind our back
            if self._reaped or self._lost:
                return {"signal": name, "delivered": False, "reason": "the process was already reaped"}
            if self.isolation.sandbox == "bubblewrap":
                return self._signal_sandboxed(sig, name)
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                return {"signal": name, "delivered": False, "reason": "no process in the group"}
            except PermissionError:
                return {"signal": name, "delivered": False, "reason": "permission denied"}
            return {"signal": name, "delivered": True}

    def _signal_sandboxed(self, sig: int, name: str) -> JSONObject:
        table = procfs.scan()
        launcher = {i.pid for i in table.values() if i.ppid == self.pid} | {self.pid}
        program = [
            i
            for i in procfs.descendants(self.pid, table)
            if i.pid not in launcher and i.sid == self.pid and i.state != "Z"
        ]
        if not program:
            return {"signal": name, "delivered": False, "reason": "no sandboxed process is running"}
        delivered = [i.pid for i in program if _signal_exact(i, sig, self.pid)]
        if not delivered:
            return {"signal": name, "delivered": False, "reason": "the sandboxed processes exited first"}
        return {"signal": name, "delivered": True, "scope": "sandboxed program", "pids": sorted(delivered)}

    def _session_members(self) -> list[procfs.ProcInfo]:
        """Live processes of this process's session other than the leader (same sid, not zombies)."""
        return [i for i in procfs.scan().values() if i.sid == self.pid and i.pid != self.pid and i.state != "Z"]

    def _signal_session(self, sig: int) -> None:
        # The leader is unreaped here, so its pid (the group and session id) names only what rea started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for info in self._session_members():
            if info.pgid == self.pid:
                continue
            _signal_exact(info, sig, self.pid)

    def _session_gone(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.exit_status() is not None and not self._session_members():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def _reap(self) -> None:
        if self._reaped or self._lost or self._popen is None:
            return
        try:
            _, status = os.waitpid(self.pid, 0)
            self._returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            self._lost = True
        self._reaped = True
        self._popen.returncode = self._returncode if self._returncode is not None else -1

    def terminate(self, grace_s: float = 2.0) -> CloseOutcome:
        """SIGTERM, then SIGKILL after ``grace_s``, reap, remove the private directory; report what remains."""
        with self._lock:
            if self._outcome is not None:
                return self._outcome
            remaining: list[str] = []
            notes: list[str] = []
            if self._popen is not None and not self._reaped and not self._lost:
                self._remember(self.observe_tree())
                for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
                    if self.exit_status() is not None and not self._session_members():
                        break
                    self._signal_session(sig)
                    if self._session_gone(wait):
                        break
                survivors = self._session_members()
                self._reap()
                self._reap_orphans()
                if survivors:
                    remaining.append(self.spec.resource)
                    notes.append("session members survived SIGKILL: " + ", ".join(str(i.pid) for i in survivors))
            escaped = [i for i in self._seen.values() if i.pid != self.pid and procfs.same_process(i)]
            escaped = [i for i in escaped if (procfs.read(i.pid) or i).sid != self.pid]
            if escaped:
                remaining.append("descendant-process")
                notes.append(
                    "descendants that left rea's session were not signalled: "
                    + ", ".join(str(i.pid) for i in sorted(escaped))
                )
            self._close_streams()
            shutil.rmtree(self.private_dir, ignore_errors=True)
            if os.path.exists(self.private_dir):
                remaining.append("temporary-directory")
                notes.append(f"could not remove {self.private_dir}")
            if self.isolation.cgroup is not None and not confine.release(self.isolation.cgroup):
                remaining.append("descendant-process")
                notes.append(f"processes remain in the pids cgroup {self.isolation.cgroup}")
            self._outcome = CloseOutcome(remaining=tuple(remaining), reason="; ".join(notes))
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return self._outcome

    def _reap_orphans(self) -> None:
        """Reap this process's dead descendants that were reparented to the server (its subreaper)."""
        me = os.getpid()
        for info in list(self._seen.values()):
            now = procfs.read(info.pid)
            if now is not None and now.start == info.start and now.ppid == me and now.state == "Z":
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(info.pid, os.WNOHANG)

    @property
    def escaped_pids(self) -> list[int]:
        """Descendants seen that left the session and are still alive (reported, never signalled)."""
        return sorted(
            i.pid
            for i in self._seen.values()
            if i.pid != self.pid and procfs.same_process(i) and (procfs.read(i.pid) or i).sid != self.pid
        )

    def _close_streams(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.terminal_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.terminal_fd)
            self.terminal_fd = None


def signal_if(info: procfs.ProcInfo, sig: int, proven: Callable[[procfs.ProcInfo], bool]) -> bool:
    """Signal exactly the process ``info`` names while ``proven`` holds for it (a pidfd: no pid-reuse race)."""
    try:
        fd = os.pidfd_open(info.pid)
    except OSError:
        return False
    try:
        now = procfs.read(info.pid)
        if now is not None and now.start == info.start and proven(now):
            signal.pidfd_send_signal(fd, sig)
            return True
    except OSError:
        pass
    finally:
        os.close(fd)
    return False


def _signal_exact(info: procfs.ProcInfo, sig: int, session: int) -> bool:
    """Signal exactly the process ``info`` names, if it is still in ``session``."""
    return signal_if(info, sig, lambda now: now.sid == session)


def _set_winsize(fd: int, size: tuple[int, int]) -> None:
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    except (ImportError, OSError):
        pass


def release_secret_holders(grace_s: float = 0.5) -> None:
    """Terminate every live process whose private directory can hold secrets, removing those directories."""
    with _LIVE_LOCK:
        holders = [p for p in _LIVE if p.spec.holds_secrets]
    for proc in holders:
        with contextlib.suppress(Exception):
            proc.terminate(grace_s)


@atexit.register
def _terminate_all() -> None:
    """At server exit, every owned process still running is terminated (briefly), secret holders first."""
    global _exiting
    with _LIVE_LOCK:
        _exiting = True
    release_secret_holders()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(Exception):
            proc.terminate(0.5)
