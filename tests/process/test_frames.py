"""The worker protocol's framing: any chunking decodes, oversized and garbage frames are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.process import frames


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=5), st.integers(min_value=1, max_value=7))
def test_frames_survive_any_chunking(payloads: list[bytes], step: int) -> None:
    out: list[frames.Outgoing] = [
        frames.ReplyOut(id=i, normalized={"blob": p.hex(), "n": len(p)}) for i, p in enumerate(payloads)
    ]
    out.append(frames.Failure(id=99, code="cancelled", message="x", details={"phase": "cfg"}))
    out.append(frames.Progress(id=100, message="step"))
    stream = b"".join(frames.encode(m) for m in out)
    reader = frames.FrameReader()
    got: list[frames.Incoming] = []
    for i in range(0, len(stream), step):
        got.extend(reader.feed(stream[i : i + step]))
    assert len(got) == len(out)
    for sent, received in zip(payloads, got, strict=False):
        assert isinstance(received, frames.Reply)
        assert received.result() == {"blob": sent.hex(), "n": len(sent)}
    assert isinstance(got[-2], frames.Failure) and got[-2].details == {"phase": "cfg"}
    assert isinstance(got[-1], frames.Progress) and got[-1].message == "step"


def test_oversized_and_garbage_frames_are_refused() -> None:
    with pytest.raises(frames.ProtocolError):
        frames.FrameReader().feed(b"\xff\xff\xff\xff")
    with pytest.raises(frames.ProtocolError):
        frames.FrameReader().feed(b"\x00\x00\x00\x02\xc1\xc1")
    with pytest.raises(frames.ProtocolError):
        frames.FrameReader(max_frame_bytes=10).feed(frames.HEADER.pack(11))
    with pytest.raises(frames.ProtocolError):
        frames.encode(frames.ReplyOut(id=1, normalized="x" * 100), max_frame_bytes=10)


def test_a_file_name_that_is_not_utf8_crosses_as_the_same_text() -> None:
    """A corpus member named b"\\xff\\xfe.bin" reaches a worker as the name the file system gave (issue 42 item 4)."""
    name = b"/corpus/\xff\xfe.bin".decode("utf-8", "surrogateescape")
    stream = frames.encode(frames.Request(id=1, op="load", params={"path": name, "paths": [name, "plain"]}))
    [got] = frames.FrameReader().feed(stream)
    assert isinstance(got, frames.Request)
    assert got.params == {"path": name, "paths": [name, "plain"]}
    assert got.params["path"].encode("utf-8", "surrogateescape") == b"/corpus/\xff\xfe.bin"
