"""A worker channel: one owned worker process speaking the framed protocol, bounded and restartable.

Every request has a deadline and the caller's cancellation; the worker's progress reaches the caller's
rate-bounded sink. A crash, a hang or a protocol violation costs that request (a typed ``ReaError``
naming exit status or signal and phase, never the child's exception text) and the worker: the next
request starts a fresh one.
"""

from __future__ import annotations

import os
import select
import site
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Container
from collections.abc import Mapping

from rea.context import CallContext
from rea.errors import CODES
from rea.errors import ReaError
from rea.errors import cancelled
from rea.process import frames
from rea.process.memory import OUT_OF_MEMORY
from rea.process.memory import effective_address_space
from rea.process.owned import OwnedProcess
from rea.process.owned import ProcessSpec
from rea.process.owned import now_iso
from rea.process.owned import status_details
from rea.providers import AnalysisClient
from rea.providers import CloseOutcome
from rea.records import JSONObject
from rea.records import JSONValue

POLL_S = 0.05
HEARTBEAT_S = 1.0


class WorkerChannel:
    """A lazily started worker owned by one provider client (or one provider)."""

    def __init__(
        self,
        spec: ProcessSpec | Callable[[], ProcessSpec],
        *,
        label: str = "",
        max_frame_bytes: int = frames.DEFAULT_MAX_FRAME_BYTES,
        grace_s: float = 2.0,
        stateful: bool = True,
    ) -> None:
        self._spec = spec
        # A stateful worker holds loaded state, so losing it idle is reported; a stateless one is replaced.
        self.stateful = stateful
        self.label = label or (spec.owner if isinstance(spec, ProcessSpec) else "")
        self.max_frame_bytes = max_frame_bytes
        self.grace_s = grace_s
        self.proc: OwnedProcess | None = None
        # Incremented at every start: clients keep per-worker state (a loaded target) keyed by it.
        self.generation = 0
        self._reader = frames.FrameReader(max_frame_bytes)
        self._pending: list[frames.Incoming] = []
        self._next_id = 0
        self._lock = threading.RLock()
        self._request_lock = threading.Lock()
        self._closed = False
        self._observations: list[JSONObject] = []
        self._leftover: list[OwnedProcess] = []

    # -- lifecycle -------------------------------------------------------------------------------

    def spec(self) -> ProcessSpec:
        return self._spec() if callable(self._spec) else self._spec

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.running else None

    def ensure_started(self) -> int:
        """Start the worker if none runs; returns its generation. A worker that died idle is reported once."""
        with self._lock:
            if self._closed:
                raise ReaError(
                    "target_unavailable",
                    f"the {self.label} session is closed",
                    remediation="Open the target again with open_binary.",
                    details={"reason": "closed", "provider_id": self.label},
                )
            proc = self.proc
            if proc is not None and proc.exit_status() is not None:
                if self.stateful:
                    raise self._crashed(proc, "(between requests)", "idle between requests", CallContext())
                self.proc = None
                self._finish(proc, "crashed")
            if self.proc is None:
                self.proc = OwnedProcess.start(self.spec())
                self.generation += 1
                self._reader = frames.FrameReader(self.max_frame_bytes)
                self._pending = []
                self._observations.append(self.proc.observe("started"))
            return self.generation

    def discard(self, event: str = "discarded") -> None:
        """Terminate the current worker (the next request starts a fresh one)."""
        with self._lock:
            proc, self.proc = self.proc, None
        if proc is not None:
            self._finish(proc, event)

    def _finish(self, proc: OwnedProcess, event: str) -> CloseOutcome:
        outcome = proc.terminate(self.grace_s)
        entry = {
            "provider_id": proc.spec.owner,
            "resource": proc.spec.resource,
            "event": event,
            "observed_at": now_iso(),
            "pid": proc.pid,
            "status": "verified" if not outcome.remaining else "unavailable",
            **status_details(proc.exit_status()),
        }
        if outcome.remaining:
            entry["reason"] = outcome.reason
            self._leftover.append(proc)
        self._observations.append(entry)
        return outcome

    def close(self) -> CloseOutcome:
        """Stop the worker and release its private directory; report owned resources that remain."""
        with self._lock:
            self._closed = True
            proc, self.proc = self.proc, None
        remaining: list[str] = []
        reasons: list[str] = []
        if proc is not None:
            outcome = self._finish(proc, "closed")
            remaining += outcome.remaining
            if outcome.reason:
                reasons.append(outcome.reason)
        for old in self._leftover:
            if old is proc:
                continue
            left = old.escaped_pids
            if left:
                remaining.append("descendant-process")
                reasons.append("descendants that left rea's session: " + ", ".join(map(str, left)))
        return CloseOutcome(remaining=tuple(sorted(set(remaining))), reason="; ".join(reasons))

    def reopen(self) -> None:
        """Allow requests again after ``close`` (a provider-wide worker outlives its clients)."""
        with self._lock:
            self._closed = False

    def lineage(self) -> list[JSONObject]:
        out = list(self._observations)
        proc = self.proc
        if proc is not None and proc.running:
            out.append(proc.observe("snapshot"))
        return out

    def stderr_tail(self) -> str:
        proc = self.proc
        return proc.stderr_tail() if proc is not None else ""

    # -- requests --------------------------------------------------------------------------------

    def request(
        self,
        op: str,
        params: Mapping[str, JSONValue],
        ctx: CallContext,
        *,
        deadline_s: float,
        phase: str = "",
        announce: bool = False,
        timeout_remediation: str = "",
        heartbeat_s: float = HEARTBEAT_S,
        heartbeat: Callable[[float], str] | None = None,
    ) -> frames.Reply:
        """Send one request and wait for its reply under ``deadline_s`` and ``ctx``'s cancellation.

        While waiting, a status update goes out every ``heartbeat_s`` (``heartbeat(elapsed_s)`` words it).
        """
        phase = phase or op
        # One request at a time (several sessions may share a worker); close() does not wait for it.
        while not self._request_lock.acquire(timeout=POLL_S):
            ctx.check(phase)
        try:
            with self._lock:
                self.ensure_started()
                proc = self.proc
                assert proc is not None and proc.stdin is not None and proc.stdout is not None
                self._next_id += 1
                rid = self._next_id
            try:
                frames.write_all(
                    proc.stdin.fileno(),
                    frames.encode(frames.Request(id=rid, op=op, params=dict(params)), self.max_frame_bytes),
                )
            except frames.ProtocolError as exc:
                raise ReaError(
                    "resource_constraint",
                    f"the {op} request is too large for the worker protocol",
                    details={"resource": "memory", "operation": op},
                ) from exc
            except (OSError, ValueError):
                raise self._crashed(proc, op, phase, ctx) from None
            return self._await(
                proc, rid, op, phase, ctx, deadline_s, announce, timeout_remediation, heartbeat_s, heartbeat
            )
        finally:
            self._request_lock.release()

    def _await(
        self,
        proc: OwnedProcess,
        rid: int,
        op: str,
        phase: str,
        ctx: CallContext,
        deadline_s: float,
        announce: bool,
        timeout_remediation: str,
        heartbeat_s: float,
        heartbeat: Callable[[float], str] | None,
    ) -> frames.Reply:
        assert proc.stdout is not None
        out_fd = proc.stdout.fileno()
        started = time.monotonic()
        deadline = started + deadline_s
        label = f"{self.label}: " if self.label else ""
        if announce:
            ctx.progress(f"{label}{phase}")
        last_report, note = started, ""
        while True:
            if ctx.cancelled:
                self.discard("cancelled")
                raise cancelled(f"{label}{phase}")
            ctx.flush()
            now = time.monotonic()
            if now >= deadline:
                self.discard("timed_out")
                raise ReaError(
                    "provider_timeout",
                    f"{self.label or 'the worker'} did not finish {phase} within {int(deadline_s * 1000)} ms",
                    remediation=timeout_remediation
                    or "Retry with a smaller request or a longer deadline; the next request starts a fresh worker.",
                    details={
                        "timeout_ms": int(deadline_s * 1000),
                        "operation": op,
                        "phase": phase,
                        "provider_id": self.label,
                    },
                )
            if now - last_report >= heartbeat_s:
                last_report = now
                ctx.progress(
                    heartbeat(now - started)
                    if heartbeat is not None
                    else f"{label}{phase}, {now - started:.1f} s elapsed{note}"
                )
            if not self._pending:
                try:
                    ready, _, _ = select.select([out_fd], [], [], min(POLL_S, deadline - now))
                except (OSError, ValueError):
                    raise self._crashed(proc, op, phase, ctx) from None
                if not ready:
                    continue
                try:
                    chunk = os.read(out_fd, 1 << 20)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise self._crashed(proc, op, phase, ctx)
                try:
                    self._pending.extend(self._reader.feed(chunk))
                except frames.ProtocolError as exc:
                    self.discard("protocol_violation")
                    raise ReaError(
                        "provider_unavailable",
                        f"{self.label or 'the worker'} broke the worker protocol during {phase}",
                        remediation="Retry: the next request starts a fresh worker.",
                        details={"provider_id": self.label, "operation": op, "reason": str(exc)[:200]},
                    ) from None
            while self._pending:
                message = self._pending.pop(0)
                if getattr(message, "id", None) != rid:
                    continue
                if isinstance(message, frames.Progress):
                    note = f" ({message.message[:200]})"
                    ctx.progress(f"{label}{phase}{note}")
                elif isinstance(message, frames.Failure):
                    if message.code == "resource_constraint" and message.details.get("exhausted") == "memory":
                        # Its heap is spent or fragmented: the next request gets a fresh worker.
                        self.discard("out_of_memory")
                        raise memory_exhausted(proc.spec, op, phase)
                    code = message.code if message.code in CODES else "execution_failure"
                    raise ReaError(code, message.message, remediation=message.remediation, details=message.details)
                elif isinstance(message, frames.Reply):
                    return message

    def _crashed(self, proc: OwnedProcess, op: str, phase: str, ctx: CallContext) -> ReaError:
        status = proc.wait_exit(self.grace_s)
        details = status_details(status)
        with self._lock:
            if self.proc is proc:
                self.proc = None
        self._finish(proc, "crashed")
        if ctx.cancelled:
            return cancelled(phase)
        if self._closed:
            return ReaError(
                "target_unavailable",
                f"the target was closed during {phase}",
                remediation="Open the target again with open_binary.",
                details={"reason": "closed", "provider_id": self.label, "operation": op},
            )
        how = details.get("signal") or f"status {details['exit_status']}"
        limit = effective_address_space(proc.spec.address_space_bytes)
        if limit and OUT_OF_MEMORY.search(proc.stderr_tail()):
            return memory_exhausted(proc.spec, op, phase)
        return ReaError(
            "provider_unavailable",
            f"the {proc.spec.resource} exited during {phase} ({how})",
            remediation="Retry: the next request starts a fresh worker. If it crashes again, the input may be "
            "hostile to this engine, or larger than the worker's address-space cap allows.",
            details={
                "provider_id": self.label,
                "operation": op,
                "phase": phase,
                "pid": proc.pid,
                **details,
                **({"address_space_mb": limit >> 20} if limit else {}),
            },
        )


def memory_exhausted(spec: ProcessSpec, op: str, phase: str) -> ReaError:
    """A worker that ran out of memory under its bound: ``resource_constraint`` naming the bound and what sets it
    (the engine's setting, or the limit rea itself was started under when that is lower)."""
    limit = effective_address_space(spec.address_space_bytes)
    limit_mb = limit >> 20
    inherited = limit != spec.address_space_bytes
    bound = f"its {limit_mb} MiB address-space bound" if limit_mb else "memory"
    if inherited:
        setting = (
            f"rea itself runs under a {limit_mb} MiB address-space limit (ulimit -v, or a corpus triage's "
            "memory_limit): raise that, or"
        )
    elif spec.memory_setting and limit_mb:
        setting = f"Raise {spec.memory_setting} (now {limit_mb} MiB) or"
    else:
        setting = "Try"
    return ReaError(
        "resource_constraint",
        f"the {spec.resource} ran out of {bound} during {phase}",
        remediation=f"{setting} analyse a smaller input; the next request starts a fresh worker.",
        details={
            "resource": "memory",
            "operation": op,
            "phase": phase,
            "provider_id": spec.owner,
            **({"reported_limits": {"address_space_mb": limit_mb}} if limit_mb else {}),
            **({"setting": spec.memory_setting} if spec.memory_setting and not inherited else {}),
        },
    )


def python_worker_spec(
    module: str,
    *,
    resource: str,
    owner: str,
    env: dict[str, str] | None = None,
    address_space_bytes: int = 0,
    memory_setting: str = "",
    args: tuple[str, ...] = (),
) -> ProcessSpec:
    """The spec of a Python worker ``python -m module`` (which calls ``rea.process.worker.serve``)."""
    base = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    # HOME is private, so point the user site where the server's is: a ``pip install --user`` still works.
    if site.ENABLE_USER_SITE:
        base["PYTHONUSERBASE"] = site.getuserbase()
    return ProcessSpec(
        argv=(sys.executable, "-m", module, *args),
        resource=resource,
        owner=owner,
        env={**base, **(env or {})},
        address_space_bytes=address_space_bytes,
        memory_setting=memory_setting,
    )


class WorkerClient(AnalysisClient):
    """An analysis client whose engine runs in one owned worker (``self.channel``): closing, lineage and requests
    under a millisecond budget are the same for every such engine."""

    channel: WorkerChannel
    # What a request that ran past its budget tells the caller to do (the engine's own settings).
    timeout_remediation: str = ""

    @property
    def worker_pid(self) -> int | None:
        """The live worker's pid (tests and diagnostics)."""
        return self.channel.pid

    def request(
        self,
        op: str,
        params: Mapping[str, JSONValue],
        ctx: CallContext,
        budget_ms: int,
        phase: str,
        announce: bool = False,
    ) -> frames.Reply:
        return self.channel.request(
            op,
            params,
            ctx,
            deadline_s=budget_ms / 1000,
            phase=phase,
            announce=announce,
            timeout_remediation=self.timeout_remediation,
        )

    def offered(self, operation: str, operations: Container[str], provider_id: str) -> None:
        """Refuse an operation the engine does not offer (``capability_unavailable``), before any worker starts."""
        if operation not in operations:
            raise ReaError(
                "capability_unavailable",
                f"{provider_id} does not offer {operation}",
                details={"operation": operation, "provider_id": provider_id},
            )

    def ready(self, stage: str, params: Mapping[str, JSONValue], ctx: CallContext, budget_ms: int, phase: str) -> None:
        """Run ``stage`` (load the target, build the engine's analysis) once per worker: a worker that restarted
        (after a crash or a timeout) runs it again before its next request."""
        generation = self.channel.ensure_started()
        # Each stage's worker generation; a subclass's __init__ sets up only its channel, so the record starts here.
        done: dict[str, int] = self.__dict__.setdefault("_stages", {})
        if done.get(stage) != generation:
            self.request(stage, params, ctx, budget_ms, phase, announce=True)
            done[stage] = generation

    def close(self) -> CloseOutcome:
        return self.channel.close()

    def lineage(self) -> list[JSONObject]:
        return self.channel.lineage()
