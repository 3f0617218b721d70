"""Function extents from unwind tables: ELF ``.eh_frame`` FDEs and PE ``.pdata`` entries (pure Python).

The compiler's own tables name every function that has unwind information, including those reached only
through pointers or tail jumps; engines that skip them (or read them only with debug info) get them here.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable

_DW_EH_PE_OMIT = 0xFF
_DW_EH_PE_PCREL = 0x10
_FIXED = {0x02: "H", 0x03: "I", 0x04: "Q", 0x0A: "h", 0x0B: "i", 0x0C: "q"}


class _Reader:
    def __init__(self, data: bytes, little: bool, word: int) -> None:
        self.data, self.pos, self.word = data, 0, word
        self.order = "<" if little else ">"

    def fixed(self, code: str) -> int:
        size = struct.calcsize(code)
        if self.pos + size > len(self.data):
            raise ValueError("truncated")
        (value,) = struct.unpack_from(self.order + code, self.data, self.pos)
        self.pos += size
        return int(value)

    def leb(self, signed: bool) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise ValueError("truncated")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if signed and byte & 0x40:
            result -= 1 << shift
        return result

    def cstring(self) -> bytes:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ValueError("truncated")
        text = self.data[self.pos : end]
        self.pos = end + 1
        return text

    def encoded(self, encoding: int, base: int) -> int:
        """A DW_EH_PE-encoded pointer; pc-relative ones resolved against ``base`` + the field's offset."""
        at = self.pos
        fmt = encoding & 0x0F
        if fmt == 0x00:
            value = self.fixed("Q" if self.word == 8 else "I")
        elif fmt in (0x01, 0x09):
            value = self.leb(signed=fmt == 0x09)
        elif fmt in _FIXED:
            value = self.fixed(_FIXED[fmt])
        else:
            raise ValueError("unknown pointer encoding")
        if encoding & 0x70 == _DW_EH_PE_PCREL:
            value += base + at
        return value & ((1 << (8 * self.word)) - 1)


def fde_ranges(data: bytes, address: int, word: int, little: bool = True) -> list[tuple[int, int]]:
    """(start, end) of every FDE in an ``.eh_frame`` section loaded at ``address``; stops at malformed data."""
    r = _Reader(data, little, word)
    encodings: dict[int, int] = {}
    out: list[tuple[int, int]] = []
    try:
        while r.pos + 4 <= len(data):
            start = r.pos
            length = r.fixed("I")
            if length == 0:
                break
            wide = length == 0xFFFFFFFF  # 64-bit DWARF: 8-byte length and CIE pointer
            if wide:
                length = r.fixed("Q")
            body = r.pos
            end = body + length
            if end > len(data) or length < 4:
                break
            cie_id = r.fixed("Q" if wide else "I")
            if cie_id == 0:
                encodings[start] = _cie_encoding(r)
            else:
                cie = body - cie_id
                encoding = encodings.get(cie, 0)
                if encoding != _DW_EH_PE_OMIT and encoding & 0x70 in (0, _DW_EH_PE_PCREL):
                    begin = r.encoded(encoding, address)
                    size = r.encoded(encoding & 0x0F, 0)
                    if begin and size:
                        out.append((begin, begin + size))
            r.pos = end
    except (ValueError, struct.error):
        pass
    return out


def _cie_encoding(r: _Reader) -> int:
    """The FDE pointer encoding a CIE declares (absolute pointers when it declares none)."""
    version = r.fixed("B")
    augmentation = r.cstring()
    if b"eh" in augmentation:
        r.pos += r.word
    r.leb(signed=False)
    r.leb(signed=True)
    if version == 1:
        r.fixed("B")
    else:
        r.leb(signed=False)
    encoding = 0
    if augmentation.startswith(b"z"):
        r.leb(signed=False)
        for char in augmentation[1:].decode("ascii", "replace"):
            if char == "R":
                encoding = r.fixed("B")
            elif char == "P":
                personality = r.fixed("B")
                r.encoded(personality & 0x7F, 0)
            elif char == "L":
                r.fixed("B")
            elif char not in "SB":
                break
    return encoding


def pdata_ranges(data: bytes, image_base: int, arm64: bool = False) -> list[tuple[int, int]]:
    """(start, end) of a PE ``.pdata`` table's functions: 12-byte x64 entries, or 8-byte arm64 ones (start only:
    their length is packed or in the unwind data, so the end is the start)."""
    size = 8 if arm64 else 12
    out = []
    for off in range(0, len(data) - size + 1, size):
        begin, second = struct.unpack_from("<II", data, off)
        if begin == 0:
            break
        out.append((image_base + begin, image_base + (begin if arm64 else second)))
    return out


class Extents:
    """Unwind ranges (function extents) sorted, with lookups by containment: a start inside another function's
    range is no function start, and a function that starts a range ends where it does."""

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

    def inside_another(self, addr: int) -> int | None:
        """The start of the range ``addr`` lies strictly inside, when no range starts at ``addr``."""
        if addr in self.start_set:
            return None
        found = self.covering(addr)
        return found[0] if found is not None else None

    def gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``[lo, hi)`` no range covers."""
        out = []
        at = lo
        for start, end in self.ranges[max(0, bisect.bisect_left(self.starts, lo) - 1) :]:
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
