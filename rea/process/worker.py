"""The worker side of the protocol: a plugin's Python worker is its routes table plus engine code.

``python -m my_plugin.worker`` calls ``serve(ROUTES)``; each route takes the request's params and a
``Reporter`` and returns the normalized result (or a ``Result`` with raw form and limitations).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import msgspec

from rea.arguments import Arguments
from rea.errors import CODES
from rea.errors import ReaError
from rea.process import frames
from rea.process.memory import refused_allocation


class Result(msgspec.Struct, kw_only=True):
    """What a route returns when it has more than a normalized result."""

    normalized: Any
    raw: Any = None
    limitations: list[str] = []
    confidence: str = "observed"


class Reporter:
    """Progress for the request being served; relayed into the caller's rate-bounded sink."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.request_id = 0

    def progress(self, message: str) -> None:
        frames.write_all(self.out_fd, frames.encode(frames.Progress(id=self.request_id, message=message)))


# A route reads the request's parameters (the call's arguments, or what its client sent) and returns the reply.
Route = Callable[[Arguments, Reporter], Any]


def operation_routes(
    table: Mapping[str, tuple[str, str]], holders: object, ready: Callable[[str, Reporter], None]
) -> dict[str, Route]:
    """A route per contract operation of ``table`` (operation -> (holder, method)): ``ready(op, reporter)`` first
    (the target loaded, the analysis the operation needs), then ``holders.<holder>.<method>(params)``, whose
    ``(normalized, raw)`` is the reply."""

    def route_for(op: str, holder: str, method: str) -> Route:
        def route(params: Arguments, reporter: Reporter) -> Result:
            ready(op, reporter)
            normalized, raw = getattr(getattr(holders, holder), method)(params)
            return Result(normalized=normalized, raw=raw)

        return route

    return {op: route_for(op, holder, method) for op, (holder, method) in table.items()}


def _watch_parent(parent: int) -> None:
    """Exit when the server that started us is gone, even in the middle of a long analysis."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def answer(routes: Mapping[str, Route], request: frames.Request, reporter: Reporter) -> frames.Outgoing:
    """One request's reply or failure; engine exceptions never reach the caller as text."""
    reporter.request_id = request.id
    route = routes.get(request.op)
    if route is None:
        return frames.Failure(
            id=request.id,
            code="capability_unavailable",
            message=f"this worker does not implement {request.op}",
            details={"operation": request.op},
        )
    try:
        out = route(dict(request.params), reporter)
    except ReaError as exc:
        code = exc.code if exc.code in CODES else "execution_failure"
        return frames.Failure(
            id=request.id, code=code, message=exc.message, remediation=exc.remediation, details=exc.details
        )
    except RecursionError:
        return _exhausted(request, "stack")
    except Exception as exc:
        if refused_allocation(exc):
            # Under an address-space cap an engine often reports the failed allocation as its own error (an import
            # that cannot map its library, a thread without a stack): that is the cap, not a defect of the engine.
            traceback.print_exc(file=sys.stderr)
            return _exhausted(request, "memory")
        # The traceback goes to the worker's stderr (kept as a bounded tail); the caller gets a plain message.
        traceback.print_exc(file=sys.stderr)
        return frames.Failure(
            id=request.id,
            code="execution_failure",
            message=f"the engine failed in {request.op}",
            remediation="Retry, or try another provider; the input may be hostile to this engine.",
            details={"operation": request.op},
        )
    if isinstance(out, Result):
        return frames.ReplyOut(
            id=request.id,
            normalized=out.normalized,
            raw=out.raw,
            limitations=out.limitations,
            confidence=out.confidence,
        )
    return frames.ReplyOut(id=request.id, normalized=out)


def _exhausted(request: frames.Request, what: str) -> frames.Failure:
    return frames.Failure(
        id=request.id,
        code="resource_constraint",
        message=f"the engine ran out of {what} in {request.op}",
        details={"resource": "memory", "exhausted": what, "operation": request.op},
    )


def claim_protocol_pipes() -> tuple[int, int]:
    """Take a worker's stdin and stdout for the frame protocol, returned as (in, out) descriptors: fd 0 becomes
    /dev/null and fd 1 stderr, so what the engine (or a script) prints cannot break a frame; and the worker exits
    when the server that started it is gone."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    return in_fd, out_fd


def serve(routes: Mapping[str, Route], max_frame_bytes: int = frames.DEFAULT_MAX_FRAME_BYTES) -> int:
    """Answer framed requests on stdin/stdout until stdin closes; returns the exit status."""
    in_fd, out_fd = claim_protocol_pipes()
    reader = frames.FrameReader(max_frame_bytes)
    reporter = Reporter(out_fd)
    pending: list[frames.Incoming] = []
    while True:
        while not pending:
            chunk = os.read(in_fd, 1 << 16)
            if not chunk:
                return 0
            try:
                pending.extend(reader.feed(chunk))
            except frames.ProtocolError as exc:
                print(f"worker: {exc}", file=sys.stderr)
                return 2
        message = pending.pop(0)
        if not isinstance(message, frames.Request):
            continue
        reply = answer(routes, message, reporter)
        try:
            data = frames.encode(reply, max_frame_bytes)
        except (TypeError, ValueError, OverflowError, frames.ProtocolError) as exc:
            print(f"worker: unencodable reply to {message.op}: {exc}", file=sys.stderr)
            data = frames.encode(
                frames.Failure(
                    id=message.id,
                    code="unreadable_output",
                    message=f"the engine's result for {message.op} could not be encoded",
                    details={"operation": message.op},
                )
            )
        frames.write_all(out_fd, data)
