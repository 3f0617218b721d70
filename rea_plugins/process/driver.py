"""The ``process`` scenario driver: run one declared program, drive it, observe it, and clean up after it.

The program is an ``OwnedProcess`` (own session, private HOME/TMPDIR), sandboxed by bubblewrap unless the
request says otherwise. Input and signals follow the declared events, each optionally waiting for a
checkpoint (output seen, or time elapsed). The capture ends when the program exits, goes idle, times out
or the caller cancels; a timeout, a cancellation or an unobserved exit is an error whose
``details.partial_observation`` keeps everything captured, every signal attempt included.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import time

import msgspec

from rea.plugin import Arguments
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import Isolation
from rea.plugin import JSONObject
from rea.plugin import OwnedProcess
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import SandboxPolicy
from rea.plugin import ScenarioDriver
from rea.plugin import ScenarioDriverDescriptor
from rea.plugin import arg_bool
from rea.plugin import arg_ints
from rea.plugin import arg_str
from rea.plugin import cancelled
from rea.plugin import confine
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import procfs
from rea.plugin import reap_session_zombies
from rea.plugin import signal_if
from rea.plugin import status_details
from rea.plugin import unsandboxed
from rea_plugins.process.observe import LINEAGE_SNAPSHOT_LIMIT
from rea_plugins.process.observe import Family
from rea_plugins.process.observe import Stream
from rea_plugins.process.observe import file_changes
from rea_plugins.process.observe import snapshot
from rea_plugins.process.shapes import Checkpoint
from rea_plugins.process.shapes import Cleanup
from rea_plugins.process.shapes import ExitRecord
from rea_plugins.process.shapes import FileChanges
from rea_plugins.process.shapes import Interaction
from rea_plugins.process.shapes import Lifecycle
from rea_plugins.process.shapes import ProcessCapture
from rea_plugins.process.shapes import Signal
from rea_plugins.process.shapes import Terminal

VERSION = "0.1.0"
RESOURCE = "process-scenario"
DEFAULT_INHERIT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on what a capture keeps (the request's ``limits``, defaults elsewhere)."""

    max_output_bytes: int = 1 << 20
    max_files: int = 20_000
    max_hash_bytes: int = 16 << 20
    max_processes: int = 256
    max_tasks: int = 1024
    termination_grace_ms: int = 2000


# The defaults as the input schema states them.
DEFAULT_LIMITS: dict[str, int] = msgspec.structs.asdict(Limits())
POLL_S = 0.02
SAMPLE_S = 0.05
DRAIN_S = 0.3
KILL_WAIT_S = 5.0


def _elapsed_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


class _Checkpoint(msgspec.Struct, kw_only=True):
    id: str
    output_contains: str | None = None
    after_ms: int | None = None
    reached_at_ms: int | None = None


class _Terminal(msgspec.Struct, frozen=True, kw_only=True):
    enabled: bool = True
    rows: int = 24
    columns: int = 80


class _Event(msgspec.Struct, frozen=True, kw_only=True):
    action: str
    text: str | None = None
    signal: str | None = None
    checkpoint: str | None = None
    delay_ms: int = 0


class _Request(msgspec.Struct, frozen=True, kw_only=True):
    """A scenario as ``capture_process_scenario``'s input schema shapes it (the tool's arguments), decoded."""

    executable: str
    arguments: list[str] = []
    working_directory: str
    environment: dict[str, str] = {}
    inherit_environment: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_INHERIT))
    terminal: _Terminal | None = None
    checkpoints: list[_Checkpoint] = []
    events: list[_Event] = []
    timeout_ms: int = 30_000
    idle_timeout_ms: int = 0
    filesystem_roots: list[str] = []
    limits: Limits = Limits()
    sandbox: str = "required"
    program_folder: bool = False
    network_access: str = "none"


def _decoded(request: Arguments) -> _Request:
    try:
        return msgspec.convert(request, _Request)
    except msgspec.ValidationError as exc:
        message = f"invalid scenario: {exc}"
        raise invalid_request(message, [issue("scenario", "invalid_value", str(exc))]) from None


class Scenario:
    """One capture in progress: the request, the owned process and everything observed so far."""

    def __init__(self, request: Arguments, ctx: CallContext) -> None:
        # As given (the capture echoes it), and decoded.
        self.given = request
        self.request = req = _decoded(request)
        self.ctx = ctx
        self.limits = req.limits
        term = req.terminal
        self.terminal = term is not None and term.enabled
        self.rows = term.rows if term else 24
        self.columns = term.columns if term else 80
        self.cwd = os.path.realpath(req.working_directory)
        self.roots = [os.path.realpath(r) for r in req.filesystem_roots] or [self.cwd]
        self.checkpoints = {c.id: c for c in req.checkpoints}
        self.events = list(req.events)
        bound = self.limits.max_output_bytes
        self.streams = (
            {"terminal": Stream(bound)} if self.terminal else {"stdout": Stream(bound), "stderr": Stream(bound)}
        )
        # What checkpoints match against: every stream in arrival order, a bounded tail with its offset.
        self.tail = bytearray()
        self.tail_start = 0
        self.cursor = 0
        self.interactions: list[Interaction] = []
        self.signals: list[Signal] = []
        # The kernel's lineage snapshots (OwnedProcess.observe): JSON objects of its shape, not this plugin's.
        self.lineage: list[JSONObject] = []
        self.phase = "validating"
        self.started = time.monotonic()
        self.last_output = self.started
        self.proc: OwnedProcess | None = None
        self.family: Family | None = None
        self.fds: dict[int, str] = {}
        self.exit_ms: int | None = None
        self.exit_status: int | None = None
        self.isolation = Isolation(sandbox="none", reason="not started")

    # -- request ---------------------------------------------------------------------------------

    def validate(self) -> tuple[str, dict[str, str]]:
        req = self.request
        issues = []
        if not os.path.isdir(self.cwd):
            raise ReaError(
                "target_unavailable",
                f"working directory {req.working_directory} does not exist",
                details={"reason": "working_directory_missing", "path": req.working_directory},
            )
        for index, event in enumerate(self.events):
            cp = event.checkpoint
            if cp is not None and cp not in self.checkpoints:
                issues.append(issue(f"events/{index}/checkpoint", "invalid_value", f"no checkpoint named {cp!r}"))
            if event.action == "signal" and event.signal not in signal.Signals.__members__:
                issues.append(issue(f"events/{index}/signal", "invalid_value", "expected a signal name like SIGINT"))
            if event.action == "input" and event.text is None:
                issues.append(issue(f"events/{index}/text", "missing_argument", "input needs text"))
        if len(self.checkpoints) != len(req.checkpoints):
            issues.append(issue("checkpoints", "invalid_value", "checkpoint ids must be unique"))
        for index, root in enumerate(self.roots):
            if not os.path.isdir(root):
                issues.append(issue(f"filesystem_roots/{index}", "invalid_value", "not an existing directory"))
        if issues:
            raise invalid_request(f"invalid scenario: {issues[0]['message']}", issues)
        env = {k: os.environ[k] for k in req.inherit_environment if k in os.environ}
        env.update(req.environment)
        if self.terminal:
            env.setdefault("TERM", "xterm")
        exe = req.executable
        path = exe if os.sep in exe else shutil.which(exe, path=env.get("PATH", os.defpath))
        if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise ReaError(
                "target_unavailable",
                f"{exe} is not an executable file",
                remediation="Name an existing executable (absolute, or on the scenario's PATH).",
                details={"reason": "executable_missing", "executable": exe},
            )
        return os.path.abspath(path), env

    def _policy(self, executable: str) -> SandboxPolicy:
        writable = tuple(dict.fromkeys([*self.roots, self.cwd]))
        # The sandbox gives the program its own file; its folder only when the scenario asks (libraries beside it).
        folder = (os.path.dirname(executable),) if self.request.program_folder else ()
        return SandboxPolicy(
            writable_roots=writable,
            readable_roots=folder,
            allow_loopback=self.request.network_access == "host",
            accept_none=self.request.sandbox == "preferred",
            max_tasks=self.limits.max_tasks,
        )

    def _start(self, argv: list[str], env: dict[str, str]) -> OwnedProcess:
        policy = self._policy(argv[0])
        cgroup = None
        sandbox: SandboxPolicy | None = policy
        if self.request.sandbox == "none":
            # No sandbox, but network_access and the process bound still hold, and the pids cgroup finds every
            # descendant (a double-forked setsid daemon too) where the host has one.
            argv, self.isolation = unsandboxed(argv, policy, "no sandbox requested")
            cgroup, sandbox = self.isolation.cgroup, None
        spec = ProcessSpec(
            argv=tuple(argv),
            resource=RESOURCE,
            owner="process",
            env=env,
            inherit_env=(),
            cwd=self.cwd,
            stdin="pipe",
            stdout="pipe",
            stderr="pipe",
            terminal=self.terminal,
            terminal_size=(self.rows, self.columns),
            sandbox=sandbox,
        )
        try:
            proc = OwnedProcess.start(spec)
        except BaseException:
            if cgroup is not None:
                confine.release(cgroup)
            raise
        if sandbox is not None:
            self.isolation = proc.isolation
        return proc

    # -- run -------------------------------------------------------------------------------------

    def run(self) -> JSONObject:
        path, env = self.validate()
        self.executable = path
        before, before_truncated = snapshot(self.roots, self.limits.max_files)
        self.ctx.check("starting the process scenario")
        self.phase = "starting"
        self.started = self.last_output = time.monotonic()
        proc = self.proc = self._start([path, *self.request.arguments], env)
        self.family = Family(
            proc.pid, self.isolation.sandbox == "bubblewrap", self.limits.max_processes, self.isolation.cgroup
        )
        self.lineage.append(proc.observe("started"))
        self.family.sample(0)
        if self.terminal:
            assert proc.terminal_fd is not None
            self.fds = {proc.terminal_fd: "terminal"}
        else:
            assert proc.stdout is not None and proc.stderr is not None
            self.fds = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
        for fd in self.fds:
            os.set_blocking(fd, False)
        end_reason = self._drive()
        self._finalize(end_reason)
        after, after_truncated = snapshot(self.roots, self.limits.max_files)
        created, modified, deleted = file_changes(self.roots, before, after, self.limits.max_hash_bytes)
        files = FileChanges(
            created=created,
            modified=modified,
            deleted=deleted,
            roots=self.roots,
            truncated=before_truncated or after_truncated,
        )
        return self._result(end_reason, files)

    def _drive(self) -> str:
        proc = self.proc
        assert proc is not None and self.family is not None
        timeout_ms = self.request.timeout_ms
        idle_ms = self.request.idle_timeout_ms
        next_event = 0
        ready_at: float | None = None
        last_sample = time.monotonic()
        self.phase = "running"
        while True:
            now = time.monotonic()
            if self.ctx.cancelled:
                return "cancelled"
            if (now - self.started) * 1000 >= timeout_ms:
                return "timeout"
            self._read(POLL_S)
            if time.monotonic() - last_sample >= SAMPLE_S:
                last_sample = time.monotonic()
                self._sample()
            if proc.exit_status() is not None:
                self.exit_ms = _elapsed_ms(self.started)
                self._drain()
                return "exited"
            if next_event < len(self.events):
                event = self.events[next_event]
                if ready_at is None and self._reached(event.checkpoint):
                    ready_at = time.monotonic() + event.delay_ms / 1000
                if ready_at is not None and time.monotonic() >= ready_at:
                    self._perform(next_event, event)
                    next_event += 1
                    ready_at = None
                    self.last_output = time.monotonic()
                    continue
            if idle_ms and (time.monotonic() - self.last_output) * 1000 >= idle_ms and ready_at is None:
                return "idle_timeout"
            self.ctx.progress(
                f"process scenario: {self.phase}, event {next_event} of {len(self.events)}, "
                f"{_elapsed_ms(self.started)} ms elapsed"
            )

    def _read(self, wait_s: float) -> None:
        if not self.fds:
            time.sleep(wait_s)
            return
        try:
            ready, _, _ = select.select(list(self.fds), [], [], wait_s)
        except (OSError, ValueError):
            ready = []
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the terminal's other side closed
                data = b""
            if not data:
                self.fds.pop(fd, None)
                continue
            self.streams[self.fds[fd]].feed(data)
            self.last_output = time.monotonic()
            self.tail.extend(data)
            if len(self.tail) > 256 * 1024:
                drop = len(self.tail) - 128 * 1024
                del self.tail[:drop]
                self.tail_start += drop

    def _drain(self) -> None:
        deadline = time.monotonic() + DRAIN_S
        while self.fds and time.monotonic() < deadline:
            self._read(POLL_S)

    def _sample(self) -> None:
        assert self.family is not None and self.proc is not None
        fresh = self.family.sample(_elapsed_ms(self.started))
        if fresh and len(self.lineage) < LINEAGE_SNAPSHOT_LIMIT:
            self.lineage.append(self.proc.observe("descendant_seen"))

    def _reached(self, name: str | None) -> bool:
        if name is None:
            return True
        cp = self.checkpoints[name]
        if cp.reached_at_ms is not None:
            return True
        elapsed = _elapsed_ms(self.started)
        if cp.after_ms is not None and elapsed < cp.after_ms:
            return False
        if cp.output_contains is not None:
            start = max(self.cursor, self.tail_start) - self.tail_start
            found = self.tail.find(cp.output_contains.encode(), start)
            if found < 0:
                return False
            self.cursor = self.tail_start + found + len(cp.output_contains.encode())
        cp.reached_at_ms = elapsed
        return True

    def _perform(self, index: int, event: _Event) -> None:
        proc = self.proc
        assert proc is not None
        action = event.action
        at_ms = _elapsed_ms(self.started)
        entry = Interaction(index=index, action=action, checkpoint=event.checkpoint, at_ms=at_ms, delivered=False)
        if action == "input":
            text = (event.text or "").encode()
            delivered, reason = self._write(text)
            entry = msgspec.structs.replace(entry, delivered=delivered, reason=reason, bytes=len(text))
        elif action == "close_stdin":
            if self.terminal:
                delivered, reason = self._write(b"\x04")  # end of file at the start of a terminal line
                entry = msgspec.structs.replace(entry, delivered=delivered, reason=reason)
            else:
                with contextlib.suppress(OSError):
                    if proc.stdin is not None:
                        proc.stdin.close()
                entry = msgspec.structs.replace(entry, delivered=True)
        elif action == "signal":
            result = proc.send_signal(signal.Signals[event.signal or ""])
            sent = _signal(at_ms, "event", result)
            entry = msgspec.structs.replace(
                entry,
                signal=sent.signal,
                delivered=sent.delivered,
                reason=arg_str(result, "reason"),
                scope=sent.scope,
                pids=sent.pids,
            )
            self.signals.append(sent)
        self.interactions.append(entry)
        self.phase = f"event {index + 1} ({action})"
        self.ctx.progress(f"process scenario: {action} sent, {_elapsed_ms(self.started)} ms elapsed")

    def _write(self, data: bytes) -> tuple[bool, str | None]:
        """Whether ``data`` reached the program's input, and why not."""
        proc = self.proc
        assert proc is not None
        fd = (
            proc.terminal_fd
            if self.terminal
            else (proc.stdin.fileno() if proc.stdin is not None and not proc.stdin.closed else None)
        )
        if fd is None:
            return False, "stdin is closed"
        try:
            view = memoryview(data)
            deadline = time.monotonic() + 2.0
            while view and time.monotonic() < deadline:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    time.sleep(POLL_S)
            if view:
                return False, "the program did not read its input"
        except OSError as exc:
            return False, f"write failed: {exc.strerror or 'error'}"
        return True, None

    # -- finalization ----------------------------------------------------------------------------

    def _finalize(self, end_reason: str) -> None:
        proc = self.proc
        assert proc is not None and self.family is not None
        self.phase = "finalizing"
        self.ctx.progress(f"process scenario: finalizing ({end_reason}), {_elapsed_ms(self.started)} ms elapsed")
        grace = self.limits.termination_grace_ms / 1000
        if proc.exit_status() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT_S)):
                self.signals.append(_signal(_elapsed_ms(self.started), "finalization", proc.send_signal(sig)))
                if proc.wait_exit(wait) is not None:
                    break
        self.exit_status = proc.exit_status()
        if self.exit_status is None:
            self.exit_ms = None
        elif self.exit_ms is None:
            self.exit_ms = _elapsed_ms(self.started)
        self._drain()
        self.family.sample(_elapsed_ms(self.started))
        self.outlived = self.family.alive_after_exit()
        self.lineage.append(proc.observe("exited" if self.exit_status is not None else "finalized"))
        self._end_escaped()
        # bubblewrap's pid-1 process is orphaned to the server (rea is the subreaper): reaped while the leader,
        # whose pid is the session id, is still unreaped and so cannot name another session.
        reap_session_zombies(proc.pid, settle_s=1.0 if self.exit_status is not None else 0.0)
        self.outcome = self._released(proc.terminate(grace))
        # What terminate killed exits after: no leader or other owned process has this session id, so this is safe.
        reap_session_zombies(proc.pid)
        self.lineage.append(
            {
                "provider_id": "process",
                "resource": RESOURCE,
                "event": "closed",
                "observed_at": self.lineage[-1]["observed_at"],
                "pid": proc.pid,
                "status": "verified" if not self.outcome.remaining else "unavailable",
                **({"reason": self.outcome.reason} if self.outcome.remaining else {}),
                **status_details(self.exit_status),
            }
        )
        self.phase = "finished"

    def _end_escaped(self) -> None:
        """Kill what left the program's session (a setsid daemon) but is provably its own, and record it.

        Provably: in the capture's pids cgroup, or, without one, an orphan of the server whose environment names
        the capture's private directory (its HOME/TMPDIR, a random path no stranger carries)."""
        proc = self.proc
        assert proc is not None and self.family is not None
        cgroup = self.isolation.cgroup
        how = "pids cgroup" if cgroup is not None else "environment names the private directory"
        # A few rounds: a daemon may fork again between the listing and its kill.
        for _ in range(3):
            escaped = [i for i in self._escaped_candidates() if i.sid != proc.pid and i.state != "Z"]
            if not escaped:
                return
            self.family.add(escaped, _elapsed_ms(self.started))
            killed = [i.pid for i in escaped if _kill_own(i, cgroup, proc.private_dir)]
            self.signals.append(
                Signal(
                    at_ms=_elapsed_ms(self.started),
                    reason=f"left the session ({how})",
                    signal="SIGKILL",
                    delivered=bool(killed),
                    pids=killed,
                )
            )
            deadline = time.monotonic() + KILL_WAIT_S
            while time.monotonic() < deadline and any(
                procfs.same_process(i) and (procfs.read(i.pid) or i).state != "Z" for i in escaped
            ):
                time.sleep(POLL_S)
            _reap_children(escaped)

    def _escaped_candidates(self) -> list[procfs.ProcInfo]:
        proc = self.proc
        assert proc is not None
        if self.isolation.cgroup is not None:
            return [i for i in (procfs.read(p) for p in confine.members(self.isolation.cgroup)) if i is not None]
        me = os.getpid()
        return [
            i
            for i in procfs.scan().values()
            if i.ppid == me and i.pid != proc.pid and _names_private(i.pid, proc.private_dir)
        ]

    def _released(self, outcome: CloseOutcome) -> CloseOutcome:
        """``terminate``'s outcome, plus the session's reaped zombies and the pids cgroup (gone, or what remains)."""
        assert self.family is not None
        _reap_children(self.family.infos())
        cgroup = self.isolation.cgroup
        if cgroup is None or confine.release(cgroup):
            return outcome
        left = confine.members(cgroup)
        note = f"processes remain in the pids cgroup {cgroup}: " + ", ".join(map(str, left))
        return CloseOutcome(
            remaining=tuple(dict.fromkeys([*outcome.remaining, "descendant-process"])),
            reason="; ".join(r for r in (outcome.reason, note) if r),
        )

    def _exit_record(self) -> ExitRecord:
        status = self.exit_status
        proc = self.proc
        assert proc is not None
        inferred = None
        if proc.isolation.sandbox == "bubblewrap" and status is not None and status > 128:
            # bubblewrap reports a program killed by signal N as exit status 128 + N.
            with contextlib.suppress(ValueError):
                inferred = signal.Signals(status - 128).name
        return ExitRecord(
            observed=status is not None,
            exit_code=status if status is not None and status >= 0 else None,
            signal=arg_str(status_details(status), "signal"),
            signal_inferred=inferred,
        )

    def _result(self, end_reason: str, files: FileChanges) -> JSONObject:
        proc = self.proc
        assert proc is not None and self.family is not None
        cleanup = Cleanup(
            cleanup="incomplete" if self.outcome.remaining else "complete",
            resources=sorted(self.outcome.remaining),
        )
        record = ProcessCapture(
            schema="rea.process_capture/1",
            request=dict(self.given),
            isolation=self.isolation,
            lifecycle=Lifecycle(
                started_at=proc.started_at,
                end_reason=end_reason,
                elapsed_ms=self.exit_ms,
                executable=self.executable,
                private_directory=proc.private_dir,
                pid=proc.pid,
                exit=self._exit_record(),
                signals=self.signals,
                phase_reached=self.phase,
            ),
            output={name: stream.record() for name, stream in self.streams.items()},
            terminal=Terminal(rows=self.rows, columns=self.columns) if self.terminal else None,
            interactions=self.interactions,
            events_not_run=len(self.events) - len(self.interactions),
            checkpoints=[
                Checkpoint(id=c.id, reached=c.reached_at_ms is not None, at_ms=c.reached_at_ms)
                for c in self.checkpoints.values()
            ],
            filesystem=files,
            process_family=self.family.record(self.outlived, self.lineage),
            cleanup=cleanup,
        )
        # The driver's report is JSON (ScenarioDriver.run), also what the error details carry.
        capture: JSONObject = msgspec.to_builtins(record)
        failure = self._failure(end_reason)
        if failure is not None:
            failure.details.update({"partial_observation": capture, **msgspec.to_builtins(cleanup)})
            if self.outcome.remaining:
                out = failure.with_cleanup_incomplete(list(self.outcome.remaining), self.outcome.reason)
                out.details["partial_observation"] = capture
                failure = out
            raise failure
        if self.outcome.remaining:
            out = ReaError(
                "execution_failure", "the capture finished but owned processes remain"
            ).with_cleanup_incomplete(list(self.outcome.remaining), self.outcome.reason)
            out.details["partial_observation"] = capture
            raise out
        return capture

    def _failure(self, end_reason: str) -> ReaError | None:
        if end_reason == "cancelled":
            return cancelled("process capture")
        if self.exit_status is None:
            return ReaError(
                "process_capture_failed",
                f"the program's exit could not be observed after {len(self.signals)} signal attempts",
                remediation="Read details.partial_observation: lifecycle.signals lists each attempt "
                "and its delivery result.",
                details={"reason": "exit_not_observed", "end_reason": end_reason},
            )
        if end_reason == "timeout":
            limit = self.request.timeout_ms
            return ReaError(
                "provider_timeout",
                f"the scenario did not finish within {limit} ms; the program was stopped",
                remediation="Raise timeout_ms, add idle_timeout_ms, or read details.partial_observation.",
                details={"timeout_ms": limit, "end_reason": end_reason},
            )
        return None


def _signal(at_ms: int, reason: str, sent: JSONObject) -> Signal:
    """A signal sent at ``at_ms`` for ``reason``, with ``OwnedProcess.send_signal``'s delivery result (the kernel's
    JSON; its own reason, where it gives one, says why the signal was not delivered)."""
    return Signal(
        at_ms=at_ms,
        reason=arg_str(sent, "reason", reason),
        signal=arg_str(sent, "signal", ""),
        delivered=arg_bool(sent, "delivered"),
        scope=arg_str(sent, "scope"),
        pids=arg_ints(sent, "pids"),
    )


def _names_private(pid: int, private_dir: str) -> bool:
    """Whether the process's environment names ``private_dir`` (as HOME, TMPDIR or XDG roots of the capture)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return (private_dir.encode() + b"/") in fh.read(1 << 20)
    except OSError:
        return False


def _kill_own(info: procfs.ProcInfo, cgroup: str | None, private_dir: str) -> bool:
    """SIGKILL exactly this process if it is still provably the capture's."""

    def own(now: procfs.ProcInfo) -> bool:
        return now.state != "Z" and (
            confine.contains(cgroup, now.pid) if cgroup is not None else _names_private(now.pid, private_dir)
        )

    return signal_if(info, signal.SIGKILL, own)


def _reap_children(infos: list[procfs.ProcInfo]) -> None:
    """Reap those of ``infos`` that are now exited children of the server (orphans come to it, the subreaper)."""
    me = os.getpid()
    for info in infos:
        now = procfs.read(info.pid)
        if now is not None and now.start == info.start and now.ppid == me and now.state == "Z":
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(info.pid, os.WNOHANG)


class ProcessDriver(ScenarioDriver):
    """Runs and observes one declared local program per request."""

    descriptor = ScenarioDriverDescriptor(
        id="process",
        name="Process scenarios",
        version=VERSION,
        surface="process",
        description="One declared program with arguments, environment, optional PTY, input and signals at "
        "checkpoints; sandboxed by bubblewrap by default.",
    )

    def availability(self) -> Availability:
        if not os.path.isdir("/proc/self"):
            return Availability.missing(
                "unsupported_host",
                "this host has no /proc to observe processes",
                "Run rea on Linux for process scenarios.",
            )
        if shutil.which("bwrap") is None:
            return Availability.ok(
                "ready; bubblewrap is not installed, so only sandbox 'none' or 'preferred' "
                "requests can run (apt-get install bubblewrap)"
            )
        return Availability.ok("ready (bubblewrap sandbox)")

    def run(self, request: Arguments, ctx: CallContext) -> JSONObject:
        scenario = Scenario(request, ctx)
        try:
            return scenario.run()
        finally:
            proc = scenario.proc
            if proc is not None and scenario.phase != "finished":
                # An unexpected error mid-run: the program still must not outlive the request.
                proc.terminate(0.5)
                if scenario.isolation.cgroup is not None:
                    confine.release(scenario.isolation.cgroup)
