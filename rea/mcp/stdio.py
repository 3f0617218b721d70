"""rea's stdio transport: every line gets an answer, and oversized lines are refused before parsing.

The SDK's stdio transport only logs a line it cannot parse or validate, so the client waits for that id
forever. Here a line that is not JSON is answered ``-32700 Parse error``, one that is not a valid JSON-RPC
message ``-32600 Invalid Request`` (with the request's id when it can be recovered, null otherwise), and
a line longer than the argument limit is refused from its first bytes, never read whole into objects.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeGuard

import anyio
import anyio.abc
import mcp_types as types
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from rea.nesting import nests_deeper_than
from rea.records import JSONObject
from rea.records import JSONValue
from rea.records import Record

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
# No MCP method is longer than a few dozen characters; a longer one is refused here, and an error never echoes
# more than a short prefix of what the client sent (a 1 MiB method name came back whole from the SDK).
MAX_METHOD_CHARS = 128
SHOWN_METHOD_CHARS = 64
# What a client may ask before the session is initialized (the SDK answers anything else with an untyped error).
BEFORE_INITIALIZED = frozenset({"initialize", "ping"})
CHUNK = 1 << 16
# Enough to recover an id that precedes a huge payload.
HEAD_BYTES = 4096
# Deeper than any MCP message needs; refused from the bytes, so the bound is the same on every interpreter.
MAX_NESTING = 512
# At end of input, how long requests already read may take to be answered before the server stops.
DRAIN_S = 10.0
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})\s*[,}]')


# A JSON-RPC request id: a string or an integer; null where a message has none, or none could be read.
RequestId = str | int | None


class RpcError(Record):
    """A JSON-RPC error object (``data`` left out when there is none)."""

    code: int
    message: str
    # JSON-RPC's error data: open JSON (rea's error code, a limit, the remediation), by refusal.
    data: JSONObject | None = None


class Refusal(msgspec.Struct, kw_only=True):
    """A line answered by the transport itself."""

    code: int
    message: str
    id: RequestId = None
    data: JSONObject | None = None

    def body(self) -> bytes:
        """The JSON-RPC error response (the HTTP transport's body)."""
        error = RpcError(code=self.code, message=self.message, data=self.data)
        return msgspec.json.encode({"jsonrpc": "2.0", "id": self.id, "error": error})

    def response(self) -> bytes:
        """The JSON-RPC error response as one stdio line."""
        return self.body() + b"\n"


def _valid_id(value: JSONValue) -> TypeGuard[str | int]:
    return (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))) and (
        not isinstance(value, str) or len(value) <= 1024
    )


def id_from_head(line: bytes) -> RequestId:
    """The request id, read from the start of a line too broken or too large to parse whole."""
    match = _ID_IN_HEAD.search(line[:HEAD_BYTES])
    if match is None:
        return None
    try:
        value: JSONValue = json.loads(match.group(1))
    except (ValueError, RecursionError):
        return None
    return value if _valid_id(value) else None


def _lenient(line: bytes) -> tuple[bool, RequestId]:
    """(parsed, id) by Python's json, which accepts what msgspec refuses (lone surrogates, deep nesting)."""
    try:
        doc = json.loads(line)
    except RecursionError:
        return True, id_from_head(line)  # well-formed as far as it was read, but nested beyond any use
    except (ValueError, UnicodeDecodeError):
        return False, id_from_head(line)
    return True, doc.get("id") if isinstance(doc, dict) and _valid_id(doc.get("id")) else None


def classify(line: bytes) -> SessionMessage | Refusal:
    """One line from the client: a message for the server, or the refusal to send back."""
    if nests_deeper_than(line, MAX_NESTING):
        return Refusal(
            code=INVALID_REQUEST,
            id=id_from_head(line),
            message=f"Invalid Request: the message nests deeper than {MAX_NESTING} levels",
        )
    try:
        doc = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        parsed, recovered = _lenient(line)
        if parsed:
            return Refusal(
                code=INVALID_REQUEST,
                id=recovered,
                message="Invalid Request: the message is JSON "
                "but not valid text for MCP (lone surrogates or nesting too deep)",
            )
        return Refusal(code=PARSE_ERROR, id=recovered, message="Parse error: the line is not a JSON document")
    if not isinstance(doc, dict):
        kind = "a batch (array)" if isinstance(doc, list) else "not an object"
        return Refusal(
            code=INVALID_REQUEST,
            message=f"Invalid Request: the message is {kind}; MCP sends one JSON-RPC object per line",
        )
    rid = doc.get("id")
    good_id = rid if _valid_id(rid) else None
    if doc.get("jsonrpc") != "2.0":
        return Refusal(code=INVALID_REQUEST, id=good_id, message='Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in doc:
        if not isinstance(doc["method"], str):
            return Refusal(code=INVALID_REQUEST, id=good_id, message='Invalid Request: "method" must be a string')
        if "id" in doc and good_id is None:
            return Refusal(code=INVALID_REQUEST, message='Invalid Request: "id" must be a string or an integer')
        if "params" in doc and not isinstance(doc["params"], dict):
            return Refusal(code=INVALID_REQUEST, id=good_id, message='Invalid Request: "params" must be an object')
        method = doc["method"]
        if len(method) > MAX_METHOD_CHARS and "id" in doc:
            return Refusal(
                code=METHOD_NOT_FOUND,
                id=good_id,
                message=f"Method not found: a method name of {len(method)} characters",
                data={
                    "code": "invalid_request",
                    "method_prefix": method[:SHOWN_METHOD_CHARS],
                    "method_chars": len(method),
                    "remediation": "Call an MCP method (initialize, tools/list, tools/call, ...).",
                },
            )
    try:
        message = types.jsonrpc_message_adapter.validate_python(doc, by_name=False)
    except (ValueError, RecursionError) as exc:
        reason = "nesting too deep" if isinstance(exc, RecursionError) else "not a valid JSON-RPC message"
        return Refusal(code=INVALID_REQUEST, id=good_id, message=f"Invalid Request: {reason}")
    return SessionMessage(message)


def not_initialized(message: types.JSONRPCRequest) -> Refusal:
    """The typed answer to a request other than ``initialize`` or ``ping`` before the session is initialized."""
    return Refusal(
        code=INVALID_REQUEST,
        id=message.id,
        message="Invalid Request: the session is not initialized",
        data={
            "code": "invalid_request",
            "method": message.method[:SHOWN_METHOD_CHARS],
            "remediation": "Send initialize, then the notifications/initialized notification, then this request.",
        },
    )


def too_long(head: bytes, size: int, limit: int) -> Refusal:
    return Refusal(
        code=INVALID_REQUEST,
        id=id_from_head(head),
        message=f"Invalid Request: a message of more than {limit} bytes exceeds rea's request limit",
        data={
            "code": "resource_constraint",
            "resource": "memory",
            "reported_limits": {"max_request_bytes": limit, "received_at_least_bytes": size},
            "remediation": "Pass a retained-evidence reference instead of inline Evidence.",
        },
    )


class LineReader:
    """Splits a byte stream into lines; a line over ``limit`` is skipped and reported by its head."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._skipping: tuple[bytes, int] | None = None

    def feed(self, chunk: bytes) -> list[bytes | Refusal]:
        out: list[bytes | Refusal] = []
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._skipping is not None:
                head, size = self._skipping
                size += len(piece)
                if end < 0:
                    self._skipping = (head, size)
                    return out
                out.append(too_long(head, size, self.limit))
                self._skipping = None
            else:
                self._buffer += piece
                if len(self._buffer) > self.limit:
                    # Keep only the head (for the id); the rest of the line is discarded as it arrives.
                    self._skipping = (bytes(self._buffer[:HEAD_BYTES]), len(self._buffer))
                    self._buffer = bytearray()
                    if end >= 0:
                        head, size = self._skipping
                        out.append(too_long(head, size, self.limit))
                        self._skipping = None
                elif end >= 0:
                    line = bytes(self._buffer).strip()
                    self._buffer = bytearray()
                    if line:
                        out.append(line)
            if end < 0:
                break
            start = end + 1
        return out


@asynccontextmanager
async def stdio_transport(
    limit: int, stdin_fd: int | None = None, stdout_fd: int | None = None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Serve MCP over stdin/stdout; yields the (read, write) streams ``Server.run`` takes."""
    in_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
    out_fd = sys.stdout.fileno() if stdout_fd is None else stdout_fd
    # Private duplicates carry the wire; fd 0/1 then point away so stray reads and prints cannot touch it.
    wire_in, wire_out = os.dup(in_fd), os.dup(out_fd)
    if stdin_fd is None and stdout_fd is None:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()
    reader = LineReader(limit)
    # Requests read but not yet answered: at end of input they are answered before the server stops (a client
    # may write its requests and close stdin at once).
    pending: set[str | int] = set()
    answered = anyio.Event()
    # The SDK's session is initialized by the client's notifications/initialized, read from this same stream.
    initialized = False

    async def emit(data: bytes) -> None:
        async with lock:
            await anyio.to_thread.run_sync(_write_all, wire_out, data)

    async def read_loop() -> None:
        nonlocal initialized
        async with read_send:
            while True:
                chunk = await anyio.to_thread.run_sync(os.read, wire_in, CHUNK, abandon_on_cancel=True)
                if not chunk:
                    with anyio.move_on_after(DRAIN_S):
                        while pending:
                            await answered.wait()
                    return
                for item in reader.feed(chunk):
                    verdict = item if isinstance(item, Refusal) else classify(item)
                    if isinstance(verdict, SessionMessage):
                        root = verdict.message
                        if isinstance(root, types.JSONRPCNotification) and root.method == "notifications/initialized":
                            initialized = True
                        elif (
                            isinstance(root, types.JSONRPCRequest)
                            and not initialized
                            and root.method not in BEFORE_INITIALIZED
                        ):
                            verdict = not_initialized(root)
                    if isinstance(verdict, Refusal):
                        await emit(verdict.response())
                    else:
                        if isinstance(verdict.message, types.JSONRPCRequest):
                            pending.add(verdict.message.id)
                        await read_send.send(verdict)

    async def write_loop() -> None:
        nonlocal answered
        async with write_recv:
            async for session_message in write_recv:
                root = session_message.message
                await emit(wire(root) + b"\n")
                if isinstance(root, types.JSONRPCResponse | types.JSONRPCError) and root.id in pending:
                    pending.discard(root.id)
                    answered.set()
                    answered = anyio.Event()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_loop)
            tg.start_soon(write_loop)
            yield read_recv, write_send
            tg.cancel_scope.cancel()
    finally:
        for fd in (wire_in, wire_out):
            try:
                os.close(fd)
            except OSError:
                pass


def wire(message: types.JSONRPCMessage) -> bytes:
    """One message as a line's JSON. A result is plain JSON by now (the SDK's result sieve dumped it in JSON mode):
    msgspec writes it in one pass, where pydantic would walk a large answer again for its own encoding."""
    if type(message) is types.JSONRPCResponse:
        try:
            return msgspec.json.encode({"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result})
        except (TypeError, ValueError, msgspec.EncodeError):  # not plain JSON (a lone surrogate): the SDK encodes it
            pass
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8", "replace")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
