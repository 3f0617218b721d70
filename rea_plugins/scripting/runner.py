"""The server's side of a script run: start its sandboxed worker, answer its inner tool calls, bound it.

Each inner call goes through the kernel's invocation path (validation, availability, Evidence recorded in the
session ledger), on the caller's own thread, so it is recorded exactly as a direct call would be.
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

import msgspec

from rea.plugin import CODES
from rea.plugin import OUT_OF_MEMORY
from rea.plugin import CanonicalError
from rea.plugin import JSONObject
from rea.plugin import OwnedProcess
from rea.plugin import ReaError
from rea.plugin import SandboxPolicy
from rea.plugin import ToolCall
from rea.plugin import cancelled
from rea.plugin import canonical_json
from rea.plugin import frames
from rea.plugin import invoke
from rea.plugin import memory_exhausted
from rea.plugin import now_iso
from rea.plugin import python_worker_spec
from rea.plugin import status_details
from rea.plugin import unknown_tool
from rea_plugins.scripting import protocol
from rea_plugins.scripting import settings
from rea_plugins.scripting.shapes import ScriptRun

TOOL_NAME = "run_analysis_script"
WORKER_MODULE = "rea_plugins.scripting.worker"
RESOURCE = "script-worker"
OWNER = "scripting"
POLL_S = 0.05
GRACE_S = 1.0
HEARTBEAT_S = 1.0


def _json_safe(value: Any) -> Any:
    """``value`` if it is JSON data rea can answer with, else a note: the worker runs the caller's code, so what
    it sends is checked like input."""
    try:
        return msgspec.json.decode(msgspec.json.encode(value))
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.DecodeError):
        return {"unreadable": "the worker sent details that are not JSON data"}


def _failure(message: frames.Failure) -> ReaError:
    """The run's failure as the worker reported it, checked: a canonical code, bounded text, JSON details."""
    code = message.code if message.code in CODES else "execution_failure"
    details = _json_safe(message.details)
    return ReaError(
        code,
        message.message[:1000] or "the script failed",
        remediation=message.remediation[:1000],
        details=details if isinstance(details, dict) else {},
    )


def offered_tools(call: ToolCall, allow_effects: bool) -> list[protocol.ToolEntry]:
    """The tools a script's ``rea`` object offers: the read-only ones (all of them when effects are allowed)."""
    out = []
    for name, facts in sorted(call.session.registry.tool_info().items()):
        read_only = bool(facts.effects.annotations()["readOnlyHint"])
        if name == TOOL_NAME or not (read_only or allow_effects):
            continue
        summary = facts.description.split(". ")[0].rstrip(".")[:200]
        out.append(protocol.ToolEntry(name=name, summary=summary, read_only=read_only))
    return out


class ScriptRunner:
    """One script's run against the calling session."""

    def __init__(self, call: ToolCall, source: str, filename: str, arguments: JSONObject) -> None:
        self.call = call
        self.ctx = call.ctx
        self.source = source
        self.filename = filename
        self.arguments = arguments
        self.timeout_s: int = settings.TIMEOUT_S.read()
        self.memory_mb: int = settings.MEMORY_LIMIT_MB.read()
        self.max_output: int = settings.MAX_OUTPUT_BYTES.read()
        self.max_calls: int = settings.MAX_CALLS.read()
        self.max_tasks: int = settings.MAX_TASKS.read()
        self.allow_effects: bool = settings.ALLOW_EFFECTS.read()
        self.calls = 0
        self.evidence_ids: list[str] = []
        self.timed_out = False
        self.started = time.monotonic()
        self.deadline = self.started + self.timeout_s
        self._reader = frames.FrameReader(protocol.MAX_FRAME_BYTES)

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> ScriptRun:
        spec = msgspec.structs.replace(
            python_worker_spec(
                WORKER_MODULE,
                resource=RESOURCE,
                owner=OWNER,
                address_space_bytes=self.memory_mb << 20,
                memory_setting=settings.MEMORY_LIMIT_MB.name,
            ),
            # No network, no host paths but the system's and rea's code, a private /tmp and home, bounded tasks.
            sandbox=SandboxPolicy(max_tasks=self.max_tasks),
        )
        self.ctx.check(TOOL_NAME)
        proc = OwnedProcess.start(spec)
        observations = [proc.observe("started")]
        # An inner call cannot be interrupted by the loop below: past the deadline the call's own signal cancels
        # it (the error is then the timeout, not a cancellation).
        timer = threading.Timer(self.timeout_s, self._expire)
        timer.daemon = True
        timer.start()
        failure: ReaError | None = None
        try:
            outcome = self._drive(proc)
        except ReaError as err:
            failure = err
        finally:
            timer.cancel()
            closed = proc.terminate(GRACE_S)
            observations.append(
                {
                    "provider_id": OWNER,
                    "resource": RESOURCE,
                    "event": "closed",
                    "observed_at": now_iso(),
                    "pid": proc.pid,
                    "status": "verified" if not closed.remaining else "unavailable",
                    **status_details(proc.exit_status()),
                }
            )
            self.call.session.record_lineage(observations)
        if failure is None and closed.remaining:
            failure = ReaError("execution_failure", "the script finished", details={"completed": True})
        if closed.remaining:
            assert failure is not None
            raise failure.with_cleanup_incomplete(list(closed.remaining), closed.reason or "the script's worker")
        if failure is not None:
            raise failure
        try:
            result = msgspec.json.decode(outcome.result_json) if outcome.result_json is not None else None
        except (msgspec.DecodeError, RecursionError):
            raise self._garbled() from None
        try:
            canonical_json(result)
        except CanonicalError:
            # Evidence is identified by its canonical JSON (RFC 8785): e.g. no integer beyond 2**53.
            raise ReaError(
                "invalid_request",
                "the script's result holds a number canonical JSON cannot carry exactly (an integer beyond 2**53)",
                remediation="Return such numbers as text (hex or decimal strings).",
                details={"reason": "not_canonical_json"},
            ) from None
        return ScriptRun(
            printed=outcome.printed,
            printed_bytes=outcome.printed_bytes,
            printed_truncated=outcome.printed_truncated,
            result=result,
            calls=self.calls,
            call_evidence_ids=list(dict.fromkeys(self.evidence_ids)),
            elapsed_ms=int((time.monotonic() - self.started) * 1000),
            sandbox=proc.isolation.sandbox,
        )

    def _expire(self) -> None:
        self.timed_out = True
        self.ctx.signal.cancel()

    def _check(self) -> None:
        if self.timed_out or time.monotonic() >= self.deadline:
            self.timed_out = True
            raise ReaError(
                "provider_timeout",
                f"the script did not finish within {self.timeout_s} s",
                remediation=f"Make the script do less per call, or raise {settings.TIMEOUT_S.name} "
                f"(now {self.timeout_s} s) when starting rea.",
                details={
                    "timeout_ms": self.timeout_s * 1000,
                    "setting": settings.TIMEOUT_S.name,
                    "operation": TOOL_NAME,
                    "calls": self.calls,
                    "call_evidence_ids": list(dict.fromkeys(self.evidence_ids)),
                },
            )
        if self.ctx.cancelled:
            raise cancelled(TOOL_NAME)

    def _drive(self, proc: OwnedProcess) -> protocol.RunOutcome:
        assert proc.stdin is not None and proc.stdout is not None
        in_fd, out_fd = proc.stdin.fileno(), proc.stdout.fileno()
        # Writes never block the server on a worker that stopped reading: the loop keeps its deadline.
        os.set_blocking(in_fd, False)
        params = protocol.RunParams(
            source=self.source,
            filename=self.filename,
            tools=offered_tools(self.call, self.allow_effects),
            max_output_bytes=self.max_output,
            arguments=self.arguments,
        )
        self._send(proc, in_fd, frames.Request(id=protocol.RUN_ID, op=protocol.RUN, params=msgspec.to_builtins(params)))
        last_beat = time.monotonic()
        pending: list[frames.Incoming] = []
        while True:
            self._check()
            self.ctx.flush()
            now = time.monotonic()
            if now - last_beat >= HEARTBEAT_S:
                last_beat = now
                self.ctx.progress(f"script: {now - self.started:.1f} s, {self.calls} tool calls")
            if not pending:
                ready, _, _ = select.select([out_fd], [], [], POLL_S)
                if not ready:
                    continue
                try:
                    chunk = os.read(out_fd, 1 << 20)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise self._ended(proc)
                try:
                    pending.extend(self._reader.feed(chunk))
                except frames.ProtocolError as exc:
                    raise ReaError(
                        "execution_failure",
                        "the script wrote to rea's pipe outside the rea object (the frames were broken)",
                        remediation="Talk to rea only through the rea object; print goes to the result.",
                        details={"reason": str(exc)[:200]},
                    ) from None
            while pending:
                message = pending.pop(0)
                if isinstance(message, frames.Request) and message.op == protocol.CALL:
                    self._send(proc, in_fd, self._answer(message))
                elif isinstance(message, frames.Progress):
                    self.ctx.progress(f"script: {message.message[:200]}")
                elif isinstance(message, frames.Reply) and message.id == protocol.RUN_ID:
                    try:
                        outcome: protocol.RunOutcome = message.result(protocol.RunOutcome)
                    except msgspec.ValidationError:
                        raise self._garbled() from None
                    return outcome
                elif isinstance(message, frames.Failure) and message.id == protocol.RUN_ID:
                    raise _failure(message)

    def _garbled(self) -> ReaError:
        return ReaError(
            "execution_failure",
            "the script's worker answered in a form rea does not read",
            remediation="Talk to rea only through the rea object.",
            details={"operation": TOOL_NAME},
        )

    def _send(self, proc: OwnedProcess, fd: int, message: frames.Outgoing) -> None:
        try:
            data = frames.encode(message, protocol.MAX_FRAME_BYTES)
        except frames.ProtocolError:
            data = frames.encode(self._too_large(message))
        except (TypeError, ValueError, OverflowError):  # a result with text that is not UTF-8
            data = frames.encode(
                frames.Failure(
                    id=getattr(message, "id", 0),
                    code="unreadable_output",
                    message="the tool's result could not be sent to the script",
                    remediation="Call the tool directly.",
                )
            )
        view = memoryview(data)
        while view:
            self._check()
            _, writable, _ = select.select([], [fd], [], POLL_S)
            if not writable:
                continue
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError:
                raise self._ended(proc) from None

    @staticmethod
    def _too_large(message: frames.Outgoing) -> frames.Failure:
        return frames.Failure(
            id=getattr(message, "id", 0),
            code="resource_constraint",
            message=f"the result is larger than the {protocol.MAX_FRAME_BYTES >> 20} MiB a script may receive",
            remediation="Ask for a smaller page (limit, offset).",
            details={"resource": "memory"},
        )

    def _answer(self, request: frames.Request) -> frames.Outgoing:
        """Run one inner call the script made; its result or its typed failure, for the worker."""
        rid = request.id
        try:
            params = msgspec.convert(request.params, protocol.CallParams)
        except msgspec.ValidationError:
            return frames.Failure(
                id=rid,
                code="invalid_request",
                message="a tool call needs a tool name and its arguments as an object",
                details={"issues": [{"path": "arguments", "reason": "invalid_type", "message": "expected object"}]},
            )
        if _json_safe(params.arguments) != params.arguments:
            return frames.Failure(
                id=rid,
                code="invalid_request",
                message=f"the arguments of {params.tool[:100]} are not JSON data",
                remediation="Pass strings, numbers, booleans, None, lists and dicts with string keys.",
                details={"issues": [{"path": "arguments", "reason": "invalid_type", "message": "not JSON data"}]},
            )
        try:
            answer = self._invoke(params.tool, params.arguments)
        except ReaError as err:
            # The caller's cancellation or the script's deadline ends the whole run, not just this call.
            self._check()
            return frames.Failure(
                id=rid, code=err.code, message=err.message, remediation=err.remediation, details=err.details
            )
        return frames.ReplyOut(id=rid, normalized=answer)

    def _invoke(self, name: str, arguments: JSONObject) -> protocol.CallAnswer:
        registry = self.call.session.registry
        facts = registry.tool_info().get(name)
        if facts is None:
            raise unknown_tool(name, "rea.tools lists the tools a script may call.", path="tool")
        if name == TOOL_NAME:
            raise ReaError(
                "access_denied",
                "a script cannot start another script",
                remediation="Call the other script's tools from this one.",
                details={"tool": name, "reason": "nested_script"},
            )
        if not facts.effects.annotations()["readOnlyHint"] and not self.allow_effects:
            raise ReaError(
                "access_denied",
                f"{name} writes, launches or drives, and scripts may only call read-only tools",
                remediation=f"Call {name} directly, or start rea with {settings.ALLOW_EFFECTS.name}=1 to let "
                "scripts call it.",
                details={"tool": name, "reason": "not_read_only", "setting": settings.ALLOW_EFFECTS.name},
            )
        if self.calls >= self.max_calls:
            raise ReaError(
                "resource_constraint",
                f"the script made {self.calls} tool calls, the most {settings.MAX_CALLS.name} allows",
                remediation=f"Make fewer calls (larger pages), or raise {settings.MAX_CALLS.name}.",
                details={"resource": "calls", "limit": self.max_calls, "setting": settings.MAX_CALLS.name},
            )
        self.calls += 1
        tool = registry.tools[name]
        out = invoke(self.call.session, tool, arguments, self.ctx)
        if out.evidence is not None:
            self.evidence_ids.append(out.evidence.evidence_id)
            return protocol.CallAnswer(result=out.evidence.normalized_result, evidence_id=out.evidence.evidence_id)
        return protocol.CallAnswer(result=out.structured)

    def _ended(self, proc: OwnedProcess) -> ReaError:
        """The worker's pipe closed before it answered: out of memory, killed, or the script ended its process."""
        status = proc.wait_exit(GRACE_S)
        self._check()
        if OUT_OF_MEMORY.search(proc.stderr_tail()):
            return memory_exhausted(proc.spec, TOOL_NAME, "script")
        details = {**status_details(status), "operation": TOOL_NAME}
        how = details.get("signal") or f"status {details['exit_status']}"
        return ReaError(
            "execution_failure",
            f"the script's process ended before the script finished ({how})",
            remediation="Let the script end normally (no os._exit, no closing rea's pipe); if it was killed, it may "
            f"have exceeded its memory bound ({settings.MEMORY_LIMIT_MB.name}).",
            details=details,
        )
