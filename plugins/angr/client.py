"""The angr analysis client: owns one worker process, bounds every request, reaps the worker on close."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from typing import IO, Any

from rea_plugins.angr import protocol
from rea_plugins.angr.options import Timeouts
from rea_plugins.angr.worker import LOADER_OPS, ROUTES

from rea.context import CallContext
from rea.errors import ReaError, cancelled
from rea.providers import AnalysisClient, CloseOutcome, OperationResult
from rea.target import Target

RESOURCE = "angr-worker"
WORKER_COMMAND = ("-m", "rea_plugins.angr.worker")
PROGRESS_EVERY_S = 1.0
POLL_S = 0.05
STDERR_TAIL_BYTES = 4000

_PHASES = {"load": "starting the worker and loading the binary", "cfg": "building CFG"}
# Phases reported as they start; quick queries report only once they have run for PROGRESS_EVERY_S.
_ANNOUNCED = frozenset({"load", "cfg", "procedure_pseudo_code"})
_LIMITATIONS = {
    "list_procedures": ["Procedures are recovered by angr's CFGFast heuristics; alignment padding and angr's "
                        "extern SimProcedures are omitted."],
    "procedure_callees": ["A computed call site is listed with address null (its target is computed at run "
                          "time) and once more per target angr's resolvers recovered, with kind indirect."],
    "procedure_pseudo_code": ["Pseudo code is angr's decompiler output: a reading aid, not compilable source."],
}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _proc_table() -> dict[int, int]:
    """pid -> ppid of every visible process (Linux /proc); empty where there is no /proc."""
    table: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2:
            table[int(entry)] = int(fields[1])
    return table


def observe(pid: int, event: str) -> dict[str, Any]:
    """One ownership observation of the worker: pid, parent, process group and descendants."""
    base: dict[str, Any] = {"provider_id": "angr", "resource": RESOURCE, "event": event,
                            "observed_at": _now(), "pid": pid}
    table = _proc_table()
    if pid not in table:
        return {**base, "status": "unavailable", "reason": "the process is not visible in /proc"}
    children: dict[int, list[int]] = {}
    for child, parent in table.items():
        children.setdefault(parent, []).append(child)
    descendants: list[int] = []
    stack = list(children.get(pid, []))
    while stack and len(descendants) < 1000:
        p = stack.pop()
        descendants.append(p)
        stack.extend(children.get(p, []))
    try:
        pgid: int | None = os.getpgid(pid)
    except OSError:
        pgid = None
    ppid = table[pid]
    if ppid != os.getpid():
        reason = f"parent is {ppid}, not this server ({os.getpid()})"
        return {**base, "status": "unavailable", "reason": reason}
    return {**base, "status": "verified", "launcher_pid": os.getpid(), "ppid": ppid, "pgid": pgid,
            "descendants": sorted(descendants)}


class _Worker:
    """One started worker process and its pipes."""

    def __init__(self, address_space_mb: int) -> None:
        # Kept open for the worker's lifetime (closed by terminate), so no context manager.
        self.stderr: IO[bytes] = tempfile.TemporaryFile(prefix="rea-angr-")  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *WORKER_COMMAND, "--address-space-mb", str(address_space_mb)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, start_new_session=True,
                close_fds=True)
        except OSError as exc:
            self.stderr.close()
            raise ReaError("provider_unavailable", f"could not start the angr worker: {exc}",
                           details={"provider_id": "angr", "reason": "spawn_failed"}) from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.in_fd = self.proc.stdin.fileno()
        self.out_fd = self.proc.stdout.fileno()
        self.reader = protocol.FrameReader()
        self.pending: list[protocol.Message] = []
        self.loaded = False
        self.cfg_ready = False
        self.next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - STDERR_TAIL_BYTES))
            return self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def terminate(self, grace_s: float) -> bool:
        """SIGTERM the worker's process group, SIGKILL after ``grace_s``, and reap it. True when reaped."""
        proc = self.proc
        # The group is signalled only while its leader is unreaped, so the id cannot have been reused.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                continue
        reaped = proc.poll() is not None
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if reaped:
            self.stderr.close()
        return reaped


def exit_details(returncode: int | None) -> dict[str, Any]:
    if returncode is None:
        return {"exit_status": None}
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return {"exit_status": returncode, "signal": name}
    return {"exit_status": returncode}


class AngrClient(AnalysisClient):
    """Runs contract operations in a worker it owns; the worker starts on the first query."""

    def __init__(self, target: Target, run_id: str, timeouts: Timeouts) -> None:
        self.target = target
        self.run_id = run_id
        self.timeouts = timeouts
        self._worker: _Worker | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._observations: list[dict[str, Any]] = []
        self._leftover: list[_Worker] = []

    # -- AnalysisClient ------------------------------------------------------------------

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        if operation not in ROUTES:
            raise ReaError("capability_unavailable", f"angr does not offer {operation}",
                           details={"operation": operation, "provider_id": "angr"})
        worker = self._ensure_worker(operation, ctx)
        t = self.timeouts
        if not worker.loaded:
            self._call(worker, "load", {"path": self.target.resolved_path, "name": self.target.name,
                                        "sha256": self.target.sha256}, t.load_ms, _PHASES["load"], ctx)
            worker.loaded = True
        if operation not in LOADER_OPS and not worker.cfg_ready:
            self._call(worker, "cfg", {}, t.cfg_ms, _PHASES["cfg"], ctx)
            worker.cfg_ready = True
        if operation == "procedure_pseudo_code":
            budget, phase = t.decompile_ms, f"decompiling {params.get('procedure')}"
        else:
            budget, phase = t.query_ms, operation
        if operation in ("search_procedures", "search_strings"):
            params = {**params, "regex_budget_ms": t.regex_ms}
        reply = self._call(worker, operation, params, budget, phase, ctx)
        normalized = reply.normalized
        limitations = list(_LIMITATIONS.get(operation, []))
        if isinstance(reply.raw, dict) and reply.raw.get("address_delta") not in (None, "0x0"):
            limitations.append(f"angr mapped this position-independent image {reply.raw['address_delta']} "
                               "above its link-time base; addresses inside the pseudo code use angr's mapping.")
        locations = []
        if isinstance(normalized, dict) and isinstance(normalized.get("address"), str):
            locations.append({"address": normalized["address"]})
        return OperationResult(normalized=normalized, raw=reply.raw, limitations=limitations,
                               locations=locations)

    def close(self) -> CloseOutcome:
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            self._discard(worker)
        # Workers that survived an earlier SIGKILL (and this one, if it did) get one more attempt.
        remaining = [old for old in self._leftover if not old.terminate(self.timeouts.grace_ms / 1000)]
        self._leftover = remaining
        if remaining:
            pids = ", ".join(str(w.pid) for w in remaining)
            return CloseOutcome(remaining=(RESOURCE,),
                                reason=f"angr worker {pids} did not exit after SIGKILL")
        return CloseOutcome()

    def lineage(self) -> list[dict[str, Any]]:
        out = list(self._observations)
        worker = self._worker
        if worker is not None and worker.proc.poll() is None:
            out.append(observe(worker.pid, "snapshot"))
        return out

    # -- worker lifecycle ----------------------------------------------------------------

    @property
    def worker_pid(self) -> int | None:
        """The live worker's pid (tests and diagnostics)."""
        worker = self._worker
        return None if worker is None else worker.pid

    def _ensure_worker(self, operation: str, ctx: CallContext) -> _Worker:
        with self._lock:
            if self._closed:
                raise ReaError("target_unavailable", "the angr session of this target is closed",
                               remediation="Open the target again with open_binary.",
                               details={"reason": "closed", "provider_id": "angr"})
            dead = self._worker if self._worker is not None and self._worker.proc.poll() is not None else None
        if dead is not None:
            # A worker that died between queries is reported once, like one that dies mid-query.
            raise self._crashed(dead, operation, ctx, "idle between queries")
        with self._lock:
            if self._worker is None:
                self._worker = _Worker(self.timeouts.address_space_mb)
                self._observations.append(observe(self._worker.pid, "started"))
            return self._worker

    def _discard(self, worker: _Worker) -> bool:
        """Terminate and reap ``worker``; the next query starts a fresh one."""
        with self._lock:
            if self._worker is worker:
                self._worker = None
        reaped = worker.terminate(self.timeouts.grace_ms / 1000)
        self._observations.append({"provider_id": "angr", "resource": RESOURCE, "event": "reaped" if reaped
                                   else "terminate_failed", "observed_at": _now(), "pid": worker.pid,
                                   "status": "verified" if reaped else "unavailable",
                                   **exit_details(worker.proc.returncode)})
        if not reaped and worker not in self._leftover:
            self._leftover.append(worker)
        return reaped

    def _crashed(self, worker: _Worker, op: str, ctx: CallContext, phase: str) -> ReaError:
        tail = worker.stderr_tail()
        try:
            worker.proc.wait(self.timeouts.grace_ms / 1000)
        except subprocess.TimeoutExpired:
            pass
        status = exit_details(worker.proc.poll())
        self._discard(worker)
        if ctx.cancelled:
            return cancelled(phase)
        if self._closed:
            return ReaError("target_unavailable", f"the target was closed while angr was {phase}",
                            remediation="Open the target again with open_binary.",
                            details={"reason": "closed", "provider_id": "angr", "operation": op})
        return ReaError(
            "provider_unavailable", f"the angr worker exited while {phase} "
            f"({status.get('signal') or 'status ' + str(status['exit_status'])})",
            remediation="Retry: the next query starts a fresh angr worker. If it crashes again, the target "
                        "may be hostile to angr; read details.stderr_tail.",
            details={"provider_id": "angr", "operation": op, "pid": worker.pid, **status,
                     # A native crash is often an allocation failing against this cap.
                     "address_space_mb": self.timeouts.address_space_mb, "stderr_tail": tail[-1500:]})

    def _call(self, worker: _Worker, op: str, params: dict[str, Any], budget_ms: int, phase: str,
              ctx: CallContext) -> protocol.Reply:
        """Send one request and wait for its reply, under a deadline and the cancellation signal."""
        worker.next_id += 1
        rid = worker.next_id
        started = time.monotonic()
        deadline = started + budget_ms / 1000
        try:
            protocol.write_all(worker.in_fd, protocol.encode(protocol.Request(id=rid, op=op, params=params)))
        except (BrokenPipeError, OSError):
            raise self._crashed(worker, op, ctx, phase) from None
        if op in _ANNOUNCED:
            ctx.progress(f"angr: {phase}")
        last_report, engine_note = started, ""
        while True:
            if ctx.cancelled:
                self._discard(worker)
                raise cancelled(f"angr {phase}")
            now = time.monotonic()
            if now >= deadline:
                self._discard(worker)
                raise ReaError("provider_timeout", f"angr did not finish {phase} within {budget_ms} ms",
                               remediation="Retry with a longer deadline (REA_ANGR_*_TIMEOUT_MS) or a "
                                           "smaller request; the next query starts a fresh angr worker.",
                               details={"timeout_ms": budget_ms, "operation": op, "phase": phase,
                                        "provider_id": "angr"})
            if now - last_report >= PROGRESS_EVERY_S:
                last_report = now
                ctx.progress(f"angr: {phase}, {now - started:.1f} s elapsed{engine_note}")
            if not worker.pending:
                try:
                    ready, _, _ = select.select([worker.out_fd], [], [], min(POLL_S, deadline - now))
                except (OSError, ValueError):
                    raise self._crashed(worker, op, ctx, phase) from None
                if not ready:
                    continue
                try:
                    chunk = os.read(worker.out_fd, 1 << 20)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise self._crashed(worker, op, ctx, phase)
                try:
                    worker.pending.extend(worker.reader.feed(chunk))
                except protocol.ProtocolError as exc:
                    self._discard(worker)
                    raise ReaError("provider_unavailable", f"the angr worker broke the protocol: {exc}",
                                   details={"provider_id": "angr", "operation": op}) from None
            while worker.pending:
                message = worker.pending.pop(0)
                if getattr(message, "id", None) != rid:
                    continue
                if isinstance(message, protocol.Progress):
                    engine_note = f" ({message.message})"
                    ctx.progress(f"angr: {phase}, {time.monotonic() - started:.1f} s elapsed{engine_note}")
                elif isinstance(message, protocol.Failure):
                    raise ReaError(message.code, message.message, remediation=message.remediation,
                                   details=message.details)
                elif isinstance(message, protocol.Reply):
                    return message
