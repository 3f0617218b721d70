"""The worker protocol: length-prefixed msgpack frames of tagged msgspec Structs over pipes."""

from __future__ import annotations

import os
import struct
from typing import Any

import msgspec

# A frame larger than this is a protocol violation, not a result to buffer.
MAX_FRAME_BYTES = 512 * 1024 * 1024
_HEADER = struct.Struct(">I")


class Request(msgspec.Struct, tag="request", kw_only=True):
    id: int
    op: str
    params: dict[str, Any] = {}


class Progress(msgspec.Struct, tag="progress", kw_only=True):
    id: int
    message: str


class Reply(msgspec.Struct, tag="reply", kw_only=True):
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
    details: dict[str, Any] = {}


Message = Request | Progress | Reply | Failure

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Message)


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid frame."""


def encode(message: Message) -> bytes:
    body = _ENCODER.encode(message)
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Accumulates bytes from a pipe and yields complete messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Message]:
        self._buffer.extend(data)
        out: list[Message] = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer, 0)
            if length > MAX_FRAME_BYTES:
                raise ProtocolError(f"frame header announces {length} bytes")
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size:end])
            del self._buffer[:end]
            try:
                out.append(_DECODER.decode(body))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ProtocolError(f"undecodable frame: {exc}") from None
        return out


def read_message(fd: int, reader: FrameReader, pending: list[Message]) -> Message | None:
    """Blocking read of the next message (worker side); ``None`` at end of input."""
    while not pending:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        pending.extend(reader.feed(chunk))
    return pending.pop(0)
