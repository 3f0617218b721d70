"""Function extents from the unwind table, and the starts it implies in the code it does not cover (worker only).

The compiler writes one unwind entry (ELF FDE, PE RUNTIME_FUNCTION) per function and per split-off part
(``f.cold``): its range is the function's true extent, which CFGFast cannot know when a part jumps back into
its parent. Addresses here are angr addresses.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Any

# Padding instructions compilers emit between functions.
_PADDING = frozenset({"nop", "nopw", "nopl", "int3"})
_TERMINATORS = frozenset({"ret", "retq", "jmp", "ljmp", "b", "br", "bx", "hlt", "ud2"})


class Extents:
    """Sorted unwind ranges with lookups by containment."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        self.ranges = sorted({(s, e) for s, e in ranges if e > s})
        self.starts = [s for s, _ in self.ranges]
        self.start_set = frozenset(self.starts)
        # The farthest end among ranges up to each index: a backward search stops once nothing reaches addr.
        self._reach: list[int] = []
        for _, end in self.ranges:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def covering(self, addr: int) -> tuple[int, int] | None:
        """The range that contains ``addr`` (the innermost-starting one when ranges overlap)."""
        i = bisect.bisect_right(self.starts, addr) - 1
        while i >= 0 and self._reach[i] > addr:
            start, end = self.ranges[i]
            if start <= addr < end:
                return start, end
            i -= 1
        return None

    def gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``[lo, hi)`` no range covers."""
        out = []
        at = lo
        for start, end in self.ranges[max(0, bisect.bisect_left(self.starts, lo) - 1):]:
            if start >= hi:
                break
            if end <= at:
                continue
            if start > at:
                out.append((at, start))
            at = max(at, end)
        if at < hi:
            out.append((at, hi))
        return out


def padded_starts(extents: Extents, code: list[tuple[int, int]], load: Callable[[int, int], bytes],
                  disasm: Callable[[bytes, int], Iterable[Any]], alignment: int) -> set[int]:
    """Starts of code the unwind table does not cover (start-up files, hand-written assembly): the first
    instruction after a function's end or an unconditional transfer and its padding, on an aligned address.

    Seeded into CFGFast, so the padding before such a function never becomes a procedure that swallows it.
    """
    found: set[int] = set()
    for lo, hi in code:
        for gap_lo, gap_hi in extents.gaps(lo, hi):
            try:
                data = load(gap_lo, gap_hi - gap_lo)
            except KeyError:
                continue
            # A section opens with code (``_init``, whose first instruction may be a ``nop``); a gap elsewhere
            # opens where a covered function ends, at an instruction boundary.
            if gap_lo == lo:
                found.add(gap_lo)
            ended = padded = gap_lo > lo
            for insn in disasm(data, gap_lo):
                mnemonic = str(insn.mnemonic)
                if mnemonic in _PADDING or (mnemonic == "xchg" and insn.op_str == "ax, ax"):
                    padded = padded or ended
                    continue
                if ended and padded and insn.address % alignment == 0:
                    found.add(int(insn.address))
                ended, padded = mnemonic in _TERMINATORS, False
    return found
