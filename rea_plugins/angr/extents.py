"""The starts the unwind table implies in the code it does not cover (worker only); the table's ranges are
``rea.operations.unwind.Extents``.

The compiler writes one unwind entry (ELF FDE, PE RUNTIME_FUNCTION) per function and per split-off part
(``f.cold``): its range is the function's true extent, which CFGFast cannot know when a part jumps back into
its parent. Addresses here are angr addresses.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

from rea.plugin import Extents

# Padding instructions compilers emit between functions.
_PADDING = frozenset({"nop", "nopw", "nopl", "int3"})
_TERMINATORS = frozenset({"ret", "retq", "jmp", "ljmp", "b", "br", "bx", "hlt", "ud2"})


def padded_starts(
    extents: Extents,
    code: list[tuple[int, int]],
    load: Callable[[int, int], bytes],
    disasm: Callable[[bytes, int], Iterable[Any]],
    alignment: int,
) -> set[int]:
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
