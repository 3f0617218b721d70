"""The sizes of records hashed lately: measured once while hashing, read by the response budget and the ledger."""

from __future__ import annotations

import threading
from collections import OrderedDict

# The last records hashed: (canonical length, count of quotes and backslashes). The count is None below 1 MiB
# and where msgspec's encoding is not the canonical one: only an exact count serves the budget check.
_SIZES: OrderedDict[str, tuple[int, int | None]] = OrderedDict()
_SIZES_MAX = 256
_SIZES_LOCK = threading.Lock()


def remember_size(evidence_id: str, length: int, escapes: int | None) -> None:
    """Note a record's canonical length (and, for a large one, its escape count) from hashing it."""
    with _SIZES_LOCK:
        _SIZES[evidence_id] = (length, escapes)
        _SIZES.move_to_end(evidence_id)
        while len(_SIZES) > _SIZES_MAX:
            _SIZES.popitem(last=False)


def measured_length(evidence_id: str) -> int | None:
    """The canonical length of a record hashed lately, when remembered."""
    with _SIZES_LOCK:
        known = _SIZES.get(evidence_id)
    return None if known is None else known[0]


def measured_sizes(evidence_id: str) -> tuple[int, int | None] | None:
    """(canonical length, escape count or None) of a record hashed lately, when remembered."""
    with _SIZES_LOCK:
        return _SIZES.get(evidence_id)
