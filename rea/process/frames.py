"""The worker protocol: length-prefixed msgpack frames of tagged msgspec Structs over a pipe pair.

Requests go to the worker; it answers each with progress frames, then exactly one reply or failure.
Replies carry their results as raw msgpack, decoded by the caller into the type it expects.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import msgspec

from rea.arguments import Arguments
from rea.records import JSONObject

HEADER = struct.Struct(">I")
DEFAULT_MAX_FRAME_BYTES = 512 * 1024 * 1024


class Request(msgspec.Struct, tag="request", kw_only=True):
    id: int
    op: str
    params: Arguments = {}


class Progress(msgspec.Struct, tag="progress", kw_only=True):
    id: int
    message: str


class Reply(msgspec.Struct, tag="reply", kw_only=True):
    """A successful result as the caller decodes it: fields stay raw msgpack until asked for."""

    id: int
    normalized: msgspec.Raw
    raw: msgspec.Raw = msgspec.Raw(b"\xc0")
    limitations: list[str] = []
    confidence: str = "observed"

    def result(self, type_: Any = Any) -> Any:
        return msgspec.msgpack.decode(self.normalized, type=type_)

    def raw_result(self) -> Any:
        return msgspec.msgpack.decode(self.raw)


class ReplyOut(msgspec.Struct, tag="reply", kw_only=True):
    """The same frame as ``Reply``, as the worker writes it."""

    id: int
    normalized: Any
    raw: Any = None
    limitations: list[str] = []
    confidence: str = "observed"


class Failure(msgspec.Struct, tag="failure", kw_only=True):
    id: int
    code: str
    message: str
    remediation: str = ""
    details: JSONObject = {}


Incoming = Request | Progress | Reply | Failure
Outgoing = Request | Progress | ReplyOut | Failure


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid frame."""


_ENCODER = msgspec.msgpack.Encoder()
# A file name that is not UTF-8 (Python's surrogateescape text, e.g. a corpus member's path) crosses to a worker as
# its bytes in this msgpack extension and is decoded back into the same text: msgpack strings must be UTF-8.
FS_NAME_EXT = 1


def _fs_names(value: Any) -> Any:
    """``value`` with every string that is not UTF-8 turned into an ``FS_NAME_EXT`` of its bytes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return msgspec.msgpack.Ext(FS_NAME_EXT, value.encode("utf-8", "surrogatepass"))
    if isinstance(value, dict):
        return {_fs_names(k): _fs_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_fs_names(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return _fs_names(msgspec.to_builtins(value, str_keys=True, enc_hook=_keep_ext))
    return value


def _keep_ext(value: Any) -> Any:
    return value


def _ext(code: int, data: memoryview) -> Any:
    if code != FS_NAME_EXT:
        raise msgspec.ValidationError(f"unknown msgpack extension {code}")
    return bytes(data).decode("utf-8", "surrogatepass")


def encode(message: Outgoing, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    try:
        body = _ENCODER.encode(message)
    except UnicodeEncodeError:
        # Only a request carries file names in: a reply's text goes on to JSON, where the worker's own typed
        # "unencodable reply" is the better answer than a failure further on.
        if not isinstance(message, Request):
            raise
        body = _ENCODER.encode(_fs_names(message))
    if len(body) > max_frame_bytes:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {max_frame_bytes}")
    return HEADER.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Accumulates bytes from a pipe and yields complete messages; refuses oversized frames up front."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._decoder = msgspec.msgpack.Decoder(Incoming, ext_hook=_ext)

    def feed(self, data: bytes) -> list[Incoming]:
        self._buffer.extend(data)
        out: list[Incoming] = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer, 0)
            if length > self.max_frame_bytes:
                raise ProtocolError(f"frame header announces {length} bytes (limit {self.max_frame_bytes})")
            end = HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            try:
                out.append(self._decoder.decode(body))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ProtocolError(f"undecodable frame: {exc}") from None
        return out
