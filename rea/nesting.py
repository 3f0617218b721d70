"""How deep a JSON text nests, found before any decoder recurses into it.

Decoders bound nesting only by the interpreter's C recursion limit, which moved between Python versions (3.11
stopped msgspec and json near 1,000 levels; 3.13 lets them go on to about 10,000). rea's limits on nesting are its
own, so they are read off the bytes here, the same on every interpreter.
"""

from __future__ import annotations

import re
from itertools import accumulate

# A JSON string, escapes included: its brackets are text, not structure.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
# Every byte but the four brackets is deleted; then an opener counts +1 and a closer -1.
_KEEP = b"[]{}"
_DELETE = bytes(b for b in range(256) if b not in _KEEP)
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def nests_deeper_than(data: bytes, limit: int) -> bool:
    """True when ``data`` (JSON, well-formed or not) opens more than ``limit`` arrays or objects inside one another.

    Text with at most ``limit`` openers cannot nest deeper and is answered by two counts; otherwise strings are
    blanked out and the running depth is summed over the brackets alone.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b'""', data).translate(None, _DELETE).translate(_STEP)
    if b"\x02" * (limit + 1) in brackets:  # the usual deep text opens one level after another: found at C speed
        return True
    return max(accumulate(b - 1 for b in brackets), default=0) > limit
