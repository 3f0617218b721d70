"""The Hopper client: launches Hopper with rea's bridge on the first query, then asks the bridge.

Startup (launch, loading, background analysis, bridge readiness) is bounded by REA_HOPPER_STARTUP_TIMEOUT_MS
and reported every ten seconds while pending. The session secret (token, socket path, run id) is in a 0600
file in a 0700 directory rea owns; the bridge deletes the file once read. Closing asks the bridge to stop
analysis and close the document, then stops the owned Hopper process; a Hopper process rea cannot prove it
owns is never signalled, and a document it may still hold is reported as remaining.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from rea.plugin import AnalysisClient
from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import OwnedProcess
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import Target
from rea.plugin import answers as queries
from rea.plugin import cancelled
from rea.plugin import now_iso
from rea.plugin import status_details
from rea.plugin import verify_unchanged
from rea_plugins.hopper.connection import BridgeConnection
from rea_plugins.hopper.connection import Deadline
from rea_plugins.hopper.connection import ProtocolViolation
from rea_plugins.hopper.settings import OPERATIONS
from rea_plugins.hopper.settings import REQUEST
from rea_plugins.hopper.settings import STARTUP
from rea_plugins.hopper.settings import TEST_PREFIX
from rea_plugins.hopper.settings import Limits
from rea_plugins.hopper.source import BridgeAnnotations
from rea_plugins.hopper.source import HopperSource
from rea_plugins.hopper.source import ShutdownAck
from rea_plugins.hopper.source import decoded

T = TypeVar("T")
RESOURCE = "hopper"
BRIDGE = str(Path(__file__).resolve().with_name("bridge.py"))
WAITING_INTERVAL_S = 10.0
POLL_S = 0.05
RECOVERY = (
    "To retry on this connection: close_binary, then open_binary with the same path and provider_id "
    "'hopper', then the query with a longer client deadline; rea never switches providers on its own."
)
_LIMITATIONS = {
    "list_segments": ["Hopper's scripting API does not expose memory permissions: permissions read '---'."],
    "procedure_pseudo_code": ["Pseudo code is Hopper's decompiler output: a reading aid, not compilable source."],
}


class Observation(Record):
    """A lineage entry of the Hopper process, in the kernel's shape for them (``OwnedProcess.observe``); the
    shutdown facts only when it was closed."""

    provider_id: str
    resource: str
    event: str
    observed_at: str
    pid: int | None
    bridge_pid: int | None
    shutdown: str | msgspec.UnsetType = msgspec.UNSET
    analysis_stopped: bool | msgspec.UnsetType = msgspec.UNSET
    document_closed: bool | msgspec.UnsetType = msgspec.UNSET
    status: str


def waiting_message(elapsed_s: float) -> str:
    return (
        f"hopper: waiting for startup, {int(elapsed_s)} s elapsed (launch, loading, background analysis and "
        "bridge readiness may still be pending)"
    )


class HopperClient(AnalysisClient):
    """One target bound to Hopper; Hopper starts on the first query and is never replaced by another provider."""

    def __init__(self, target: Target, run_id: str, limits: Limits, launcher: str) -> None:
        self.target = target
        self.run_id = run_id
        self.limits = limits
        self.launcher = launcher
        self.proc: OwnedProcess | None = None
        self.conn: BridgeConnection | None = None
        self.answers: queries.Answers | None = None
        self.source: HopperSource | None = None
        self.bridge_pid: int | None = None
        self.hopper_version = "unknown"
        self.diagnostics: list[str] = []
        self._dir: str | None = None
        self._ctx = CallContext()
        # While starting, bridge requests share the startup deadline instead of each getting a request deadline.
        self._startup_deadline: float | None = None
        # Lineage entries, in the kernel's shape for them (``OwnedProcess.observe``, ``AnalysisClient.lineage``).
        self._observations: list[JSONObject] = []  # the kernel's lineage entries (OwnedProcess.observe)

    # -- queries -----------------------------------------------------------------------------------

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        if operation not in OPERATIONS:
            raise ReaError(
                "capability_unavailable",
                f"hopper does not offer {operation}",
                details={"operation": operation, "provider_id": "hopper"},
            )
        if self.answers is None:
            # Hopper reads the file when it starts: a rewritten target is refused, never read under its old hash.
            verify_unchanged(self.target, ctx=ctx)
            self._startup(ctx)
        assert self.answers is not None
        self._ctx = ctx
        try:
            if operation == "address_annotations":
                normalized, raw = self._annotations(params), None
            else:
                normalized, raw = queries.answer(self.answers, operation, params)
        except Deadline:
            self._discard("timed_out")
            raise ReaError(
                "provider_timeout",
                f"Hopper did not answer {operation} within {self.limits.request_ms} ms",
                remediation=f"Raise {REQUEST.name} or narrow the request; the next query starts Hopper again.",
                details={
                    "provider_id": "hopper",
                    "operation": operation,
                    "timeout_ms": self.limits.request_ms,
                    "setting": REQUEST.name,
                },
            ) from None
        except ProtocolViolation as exc:
            self._discard("protocol_violation")
            raise self._violation(operation, exc) from None
        limitations = list(_LIMITATIONS.get(operation, [])) + [f"Hopper reported: {d}" for d in self.diagnostics[:5]]
        return OperationResult.located(normalized, raw, limitations)

    def _annotations(self, params: Arguments) -> JSONObject:
        # A dict, not a Struct: the cursor tool reads the engine's facets from it by name.
        at = queries.parse_address(params.get("address"))
        found = decoded(self._call("annotations", {"address": at}), BridgeAnnotations, "annotations")
        return {
            "address": hex(at),
            "name": found.name,
            "comment": found.comment,
            "inline_comment": found.inline_comment,
            "bookmark": None if found.bookmark is None else {"name": found.bookmark.name},
        }

    def _call(self, method: str, params: JSONObject) -> JSONValue:
        if self.conn is None:
            raise ReaError(
                "target_unavailable",
                "the Hopper session is closed",
                remediation="Open the target again with open_binary.",
                details={"reason": "closed", "provider_id": "hopper"},
            )
        budget = self.limits.request_ms / 1000
        if self._startup_deadline is not None:
            budget = max(0.0, self._startup_deadline - time.monotonic())
        return self.conn.request(method, params, self._ctx, budget, self._on_event)

    def _on_event(self, event: JSONObject) -> None:
        message = str(event.get("message", ""))[:300]
        if event.get("event") == "diagnostic":
            self.diagnostics.append(message)
            self._ctx.progress(f"hopper: diagnostic: {message}")
        elif event.get("event") == "progress":
            self._ctx.progress(f"hopper: {message}")

    # -- startup -----------------------------------------------------------------------------------

    def _startup(self, ctx: CallContext) -> None:
        self._ctx = ctx
        started = time.monotonic()
        deadline = started + self.limits.startup_ms / 1000
        token = secrets.token_hex(32)
        self._dir = tempfile.mkdtemp(prefix="rea-hopper-")
        socket_path = os.path.join(self._dir, "bridge.sock")
        session = os.path.join(self._dir, "session.json")
        fd = os.open(session, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(
                {
                    "token": token,
                    "run_id": self.run_id,
                    "socket": socket_path,
                    "target_path": self.target.resolved_path,
                    "target_sha256": self.target.sha256,
                },
                fh,
            )
        env = {k: v for k, v in os.environ.items() if k.startswith(TEST_PREFIX)}
        spec = ProcessSpec(
            argv=(self.launcher, "--analysis", "--python", BRIDGE, "--executable", self.target.resolved_path),
            resource=RESOURCE,
            owner="hopper",
            env={"REA_HOPPER_SESSION": session, **env},
            stdin="null",
            stdout="null",
        )
        ctx.progress("hopper: launching Hopper with rea's bridge")
        try:
            self.proc = OwnedProcess.start(spec)
        except ReaError:
            self._discard("start_failed")
            raise
        self._observations.append(self.proc.observe("started"))
        try:
            conn = self._wait(
                ctx, started, deadline, "connecting to the bridge", lambda: BridgeConnection.connect(socket_path, token)
            )
            self.conn = conn
            self._observations.append(self.proc.observe("bridge connected"))
            ready = self._wait(ctx, started, deadline, "waiting for the bridge to be ready", lambda: self._ready(conn))
            if ready.get("run_id") != self.run_id:
                raise ProtocolViolation("a ready event for another run")
            pid = ready.get("pid")
            self.bridge_pid = pid if isinstance(pid, int) else None
            self.hopper_version = str(ready.get("hopper_version", "unknown"))
            self.source = HopperSource(self.target, self._call)
            self._startup_deadline = deadline
            try:
                self.source.inventory()
            finally:
                self._startup_deadline = None
            self.answers = queries.Answers(self.source, "hopper")
        except ProtocolViolation as exc:
            self._discard("protocol_violation")
            raise self._violation("startup", exc) from None
        except Deadline:
            self._discard("timed_out")
            raise self._startup_timeout() from None
        except ReaError:
            self._discard("startup_failed")
            raise

    def _ready(self, conn: BridgeConnection) -> JSONObject | None:
        message = conn.poll(0)
        if message is None:
            return None
        if message.get("event") == "ready":
            return message
        if "event" in message:
            self._on_event(message)
            return None
        raise ProtocolViolation("an answer before the bridge was ready")

    def _wait(self, ctx: CallContext, started: float, deadline: float, phase: str, step: Callable[[], T | None]) -> T:
        """Poll ``step`` until it yields, under the startup deadline, cancellation and waiting notifications."""
        last = started
        while True:
            if ctx.cancelled:
                self._discard("cancelled")
                raise cancelled(f"hopper: {phase}")
            assert self.proc is not None
            status = self.proc.exit_status()
            if status is not None and self.conn is None:
                details = status_details(status)
                self._discard("exited")
                how = details.get("signal") or f"status {details['exit_status']}"
                raise ReaError(
                    "provider_unavailable",
                    f"Hopper exited during startup ({how})",
                    remediation="Check the Hopper installation and licence (`rea doctor`); the next query "
                    "launches it again. " + RECOVERY,
                    details={"provider_id": "hopper", "phase": "startup", **details},
                )
            now = time.monotonic()
            if now >= deadline:
                raise Deadline(phase)
            if now - last >= WAITING_INTERVAL_S:
                last = now
                ctx.progress(waiting_message(now - started))
            found = step()
            if found is not None:
                return found
            time.sleep(POLL_S)

    def _startup_timeout(self) -> ReaError:
        ms = self.limits.startup_ms
        return ReaError(
            "provider_timeout",
            f"Hopper did not become ready within {ms} ms (launch, loading, background analysis, bridge readiness)",
            remediation=f"Raise {STARTUP.name} (now {ms} ms) and restart rea, or analyze a smaller target. " + RECOVERY,
            details={"provider_id": "hopper", "phase": "startup", "timeout_ms": ms, "setting": STARTUP.name},
        )

    @staticmethod
    def _violation(phase: str, exc: ProtocolViolation) -> ReaError:
        return ReaError(
            "provider_unavailable",
            f"Hopper's bridge broke the protocol during {phase}",
            remediation="Retry: the next query launches Hopper again; if it recurs, reinstall rea (the "
            "bridge script ships with it).",
            details={"provider_id": "hopper", "phase": phase, "reason": str(exc)[:200]},
        )

    # -- shutdown ----------------------------------------------------------------------------------

    def _discard(self, event: str) -> CloseOutcome:
        """End the session: ask the bridge to shut down, stop the owned process, remove the secret directory."""
        conn, proc = self.conn, self.proc
        self.conn = self.proc = None
        self.answers = self.source = None
        ack: ShutdownAck | None = None
        if conn is not None and event in ("closed",):
            try:
                answer = conn.request("shutdown", {}, CallContext(), self.limits.shutdown_ms / 1000, lambda _e: None)
                ack = decoded(answer, ShutdownAck, "shutdown")
            except (Deadline, ProtocolViolation, ReaError):
                ack = None
        if conn is not None:
            conn.close()
        owned: set[int] = set()
        if proc is not None:
            owned = {proc.pid} | {i.pid for i in proc.observe_tree() if i.sid == proc.pid}
        remaining: list[str] = []
        reasons: list[str] = []
        if proc is not None:
            outcome = proc.terminate(self.limits.grace_ms / 1000)
            remaining += outcome.remaining
            if outcome.reason:
                reasons.append(outcome.reason)
        closed = event == "closed"
        document_closed = ack is not None and ack.document_closed
        pid = self.bridge_pid
        if pid is not None and pid not in owned and not document_closed and _alive(pid):
            # A Hopper process rea did not start holds the document: reported, never signalled.
            remaining.append("hopper-document")
            reasons.append(f"Hopper process {pid} (not started by rea) may still hold the document")
        self._observations.append(
            msgspec.to_builtins(
                Observation(
                    provider_id="hopper",
                    resource=RESOURCE,
                    event=event,
                    observed_at=now_iso(),
                    pid=None if proc is None else proc.pid,
                    bridge_pid=self.bridge_pid,
                    shutdown=("acknowledged" if ack is not None else "unconfirmed") if closed else msgspec.UNSET,
                    analysis_stopped=ack.analysis_stopped if closed and ack is not None else msgspec.UNSET,
                    document_closed=ack.document_closed if closed and ack is not None else msgspec.UNSET,
                    status="verified" if not remaining else "unavailable",
                )
            )
        )
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.bridge_pid = None
        return CloseOutcome(remaining=tuple(sorted(set(remaining))), reason="; ".join(reasons))

    def close(self) -> CloseOutcome:
        if self.proc is None and self.conn is None:
            return CloseOutcome()
        return self._discard("closed")

    def lineage(self) -> list[JSONObject]:
        out = list(self._observations)
        proc = self.proc
        if proc is not None and proc.running:
            out.append(proc.observe("snapshot"))
        return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists (signal 0 delivers nothing: an existence check, not a signal)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
