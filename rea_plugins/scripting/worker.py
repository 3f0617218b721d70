"""The script's worker: ``python -m rea_plugins.scripting.worker``, started sandboxed by the scripting plugin.

It runs one script and exits. The script talks to the server only through ``rea``, an object whose methods
send ``call`` frames over this process's pipe; nothing of the server's state is in this process.
"""

from __future__ import annotations

import builtins
import errno
import io
import linecache
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import claim_protocol_pipes
from rea.plugin import frames
from rea_plugins.scripting import protocol

SCRIPT_TRACEBACK_CHARS = 8000


class ToolError(Exception):
    """An inner tool call failed: ``code`` is rea's canonical code, ``details`` its details."""

    # ``details``: the server's error details, JSON as its failure frame carried them.
    def __init__(self, code: str, message: str, remediation: str = "", details: JSONObject | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.remediation = remediation
        self.details = details or {}
        # Only a failure the server sent is reported under its code; one the script raised itself is its own.
        self.from_server = False


class Link:
    """The worker's end of the pipe: frames out, the server's answers in."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.pid = os.getpid()
        self._reader = frames.FrameReader(protocol.MAX_FRAME_BYTES)
        self._pending: list[frames.Incoming] = []
        self._next = protocol.CALL_BASE
        self._lock = threading.Lock()

    def send(self, message: frames.Outgoing) -> None:
        frames.write_all(self.out_fd, frames.encode(message, protocol.MAX_FRAME_BYTES))

    def receive(self) -> frames.Incoming | None:
        """The next frame from the server; None when the pipe closed."""
        while not self._pending:
            chunk = os.read(self.in_fd, 1 << 20)
            if not chunk:
                return None
            self._pending.extend(self._reader.feed(chunk))
        return self._pending.pop(0)

    def call(self, tool: str, arguments: JSONObject) -> protocol.CallAnswer:
        # A forked child shares the pipe: its frames would interleave with the parent's.
        if os.getpid() != self.pid:
            raise ToolError("access_denied", "rea calls are only possible from the script's own process")
        with self._lock:  # one call at a time, even from the script's threads
            rid, self._next = self._next, self._next + 1
            self.send(frames.Request(id=rid, op=protocol.CALL, params={"tool": tool, "arguments": arguments}))
            while True:
                message = self.receive()
                if message is None:
                    os._exit(0)  # the server is gone: nothing is left to answer
                if isinstance(message, frames.Reply) and message.id == rid:
                    answer: protocol.CallAnswer = message.result(protocol.CallAnswer)
                    return answer
                if isinstance(message, frames.Failure) and message.id == rid:
                    error = ToolError(message.code, message.message, message.remediation, dict(message.details))
                    error.from_server = True
                    raise error


class Rea:
    """The ``rea`` object a script sees: each offered tool as a function of keyword arguments, and ``call``."""

    Error = ToolError

    def __init__(self, link: Link, tools: list[protocol.ToolEntry]) -> None:
        self._link = link
        self._tools = {t.name: t for t in tools}
        self._answer: list[Any] = []
        self.evidence_ids: list[str] = []

    @property
    def tools(self) -> list[str]:
        """The names of the tools this script may call."""
        return sorted(self._tools)

    def describe(self, name: str) -> str:
        entry = self._tools.get(name)
        return entry.summary if entry is not None else ""

    def call(self, name: str, arguments: Arguments | None = None, /, **kwargs: JSONValue) -> Any:
        """Run tool ``name`` with ``arguments`` (or keyword arguments); its result as plain JSON data."""
        args = {**(arguments or {}), **kwargs}
        answer = self._link.call(name, args)
        if answer.evidence_id is not None:
            self.evidence_ids.append(answer.evidence_id)
        return answer.result

    def answer(self, value: Any) -> None:
        """Set the script's result (instead of a module-level ``result``)."""
        self._answer[:] = [value]

    def progress(self, message: str) -> None:
        """Tell the caller how far the script got (rate-bounded by the server)."""
        if os.getpid() == self._link.pid:
            self._link.send(frames.Progress(id=protocol.RUN_ID, message=str(message)[:200]))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self._tools:
            raise AttributeError(f"rea has no tool {name!r} (rea.tools lists them)")

        def tool(**kwargs: JSONValue) -> Any:
            return self.call(name, kwargs)

        tool.__name__ = name
        tool.__doc__ = self._tools[name].summary
        return tool

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._tools})


class Printed(io.TextIOBase):
    """The script's stdout and stderr: kept up to ``limit`` UTF-8 bytes, the rest counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError("write() argument must be str")
        data = text.encode("utf-8", "replace")
        self.total += len(data)
        room = self.limit - self.kept
        if room > 0:
            piece = data[:room]
            self.parts.append(piece.decode("utf-8", "ignore"))
            self.kept += len(piece)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


def _text(exc: BaseException) -> str:
    """``str(exc)``, whatever the script's exception does in ``__str__``."""
    try:
        return str(exc)[:1000]
    except Exception:
        return "(its text could not be read)"


def _script_traceback(exc: BaseException, filename: str) -> tuple[str, int | None]:
    """The script's own frames of ``exc`` (the worker's are left out) and the line it failed at."""
    frames_ = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    line = frames_[-1].lineno if frames_ else getattr(exc, "lineno", None)
    try:
        text = "".join(traceback.format_list(frames_)) + "".join(traceback.format_exception_only(type(exc), exc))
    except Exception:  # an exception whose text raises: its frames still say where
        text = "".join(traceback.format_list(frames_)) + type(exc).__name__ + "\n"
    if len(text) > SCRIPT_TRACEBACK_CHARS:
        text = "...\n" + text[-SCRIPT_TRACEBACK_CHARS:]
    return text, line


def _failure(
    code: str, message: str, exc: BaseException, filename: str, printed: Printed, remediation: str = ""
) -> frames.Failure:
    text, line = _script_traceback(exc, filename)
    # The error's details, JSON the kernel's failure frame carries as it is (``Failure.details``).
    details: JSONObject = {
        "script_error": {"type": type(exc).__name__, "message": _text(exc), "line": line, "traceback": text},
        "printed": printed.text(),
        "printed_bytes": printed.total,
        "printed_truncated": printed.total > printed.kept,
    }
    if isinstance(exc, ToolError) and exc.from_server:
        details["tool_error"] = {"code": exc.code, "message": exc.message, "details": exc.details}
    return frames.Failure(id=protocol.RUN_ID, code=code, message=message, remediation=remediation, details=details)


def classify(exc: BaseException, filename: str, printed: Printed) -> frames.Failure:
    """The typed failure for an exception the script did not handle. The message never names a Python
    exception class; the script's own traceback is data in ``details.script_error``."""
    _, line = _script_traceback(exc, filename)
    code, message, remediation = _kind(exc, f" at line {line}" if line else "")
    return _failure(code, message, exc, filename, printed, remediation)


def _kind(exc: BaseException, at: str) -> tuple[str, str, str]:
    """The canonical code, the message and the remediation of an exception the script did not handle (``at``: where
    it was raised, in words)."""
    if isinstance(exc, ToolError) and exc.from_server:
        return exc.code, f"a tool call of the script failed{at}: {exc.message}"[:500], exc.remediation
    if isinstance(exc, MemoryError):
        return (
            "resource_constraint",
            f"the script ran out of memory{at}",
            "Work on less at once, or raise REA_SCRIPT_MEMORY_LIMIT_MB.",
        )
    if isinstance(exc, RecursionError):
        return "resource_constraint", f"the script recursed too deeply{at}", ""
    if isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return (
            "access_denied",
            f"the script has no network{at}",
            "Scripts run without a network; read what the tools return instead.",
        )
    if (isinstance(exc, OSError) and exc.errno == errno.EAGAIN) or (
        isinstance(exc, RuntimeError) and "can't start new thread" in _text(exc)
    ):
        return (
            "resource_constraint",
            f"the script reached its bound on processes and threads{at}",
            "Start fewer processes or threads, or raise REA_SCRIPT_MAX_TASKS.",
        )
    if isinstance(exc, PermissionError):
        return "access_denied", f"the script was denied access{at}", ""
    return (
        "execution_failure",
        f"the script failed{at} (details.script_error has its traceback)",
        "Fix the script and run it again.",
    )


def run(link: Link, params: protocol.RunParams) -> frames.Outgoing:
    printed = Printed(params.max_output_bytes)
    try:
        code = compile(params.source, params.filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"line {line}: " if line else ""
        reason = getattr(exc, "msg", None) or str(exc)
        return frames.Failure(
            id=protocol.RUN_ID,
            code="invalid_request",
            message=f"the script does not compile ({where}{reason})"[:500],
            remediation="Fix the script's syntax.",
            details={"issues": [{"path": "source", "reason": "invalid_value", "message": f"{where}{reason}"[:300]}]},
        )
    # Tracebacks then show the script's lines.
    linecache.cache[params.filename] = (len(params.source), None, params.source.splitlines(True), params.filename)
    rea = Rea(link, params.tools)
    # The script's Python namespace (exec's globals): any Python objects the script makes, not JSON.
    scope: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "rea": rea,
        "args": dict(params.arguments),
    }
    sys.stdout = sys.stderr = printed
    try:
        exec(code, scope)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = classify(exc, params.filename, printed)
            # sys.exit("text") exits with a message: it stays data (details.script_error), like any text of the script.
            status = exc.code if isinstance(exc.code, int) else 1
            return frames.Failure(
                id=protocol.RUN_ID,
                code="execution_failure",
                message=f"the script exited with status {status}",
                remediation="Fix the script and run it again.",
                details=failure.details,
            )
    except BaseException as exc:
        return classify(exc, params.filename, printed)
    finally:
        sys.stdout = sys.stderr = sys.__stderr__
    if os.getpid() != link.pid:
        os._exit(0)  # a forked child that ran to the end: only the script's own process answers
    value = rea._answer[0] if rea._answer else scope.get("result")
    result_json = None
    if rea._answer or "result" in scope:
        try:
            result_json = msgspec.json.encode(value).decode()
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            return frames.Failure(
                id=protocol.RUN_ID,
                code="invalid_request",
                message="the script's result is not JSON data (dicts with string keys, lists, strings, numbers, "
                "booleans, None)",
                remediation="Return plain JSON data, e.g. convert bytes to hex.",
                details={"reason": str(exc)[:300]},
            )
        if len(result_json) > params.max_output_bytes:
            return frames.Failure(
                id=protocol.RUN_ID,
                code="resource_constraint",
                message=f"the script's result encodes to {len(result_json)} bytes, more than the "
                f"{params.max_output_bytes} allowed",
                remediation="Return less (a summary, a page), or raise REA_SCRIPT_MAX_OUTPUT_BYTES.",
                details={
                    "resource": "output",
                    "bytes": len(result_json),
                    "limit": params.max_output_bytes,
                    "setting": "REA_SCRIPT_MAX_OUTPUT_BYTES",
                },
            )
    return frames.ReplyOut(
        id=protocol.RUN_ID,
        normalized=protocol.RunOutcome(
            printed=printed.text(),
            printed_bytes=printed.total,
            printed_truncated=printed.total > printed.kept,
            result_json=result_json,
        ),
    )


def main() -> int:
    in_fd, out_fd = claim_protocol_pipes()
    link = Link(in_fd, out_fd)
    message = link.receive()
    if not isinstance(message, frames.Request) or message.op != protocol.RUN:
        return 2
    params = msgspec.convert(message.params, protocol.RunParams)
    reply = run(link, params)
    try:
        data = frames.encode(reply, protocol.MAX_FRAME_BYTES)
    except (TypeError, ValueError, OverflowError, frames.ProtocolError):
        # An error's details the script shaped (an exception text) that cannot be encoded: say so plainly.
        data = frames.encode(frames.Failure(id=protocol.RUN_ID, code="execution_failure", message="the script failed"))
    frames.write_all(out_fd, data)
    # Threads the script left running end here, with the process.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
