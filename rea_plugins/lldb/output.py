"""What a debuggee wrote: both LLDB workers send its stdout and stderr to capped files of their private directory."""

from __future__ import annotations

import os

from rea.plugin import Record


# What the program wrote to one stream: the text kept, the whole size in bytes, and whether more was written. (A
# comment, not a docstring: a docstring would be the schema's description, sent with every output schema.)
class Output(Record):
    text: str
    bytes: int
    truncated: bool


def read_capped(path: str, limit: int, *, from_end: bool) -> Output:
    """At most ``limit`` bytes of ``path`` (its end when ``from_end``, else its start) as text, with its size and
    whether more was written."""
    limit = max(0, limit)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if from_end and size > limit:
                fh.seek(size - limit)
            data = fh.read(limit)
    except OSError:
        return Output(text="", bytes=0, truncated=False)
    return Output(text=data.decode("utf-8", "replace"), bytes=size, truncated=size > limit)
