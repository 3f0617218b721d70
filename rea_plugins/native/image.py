"""The bytes of one binary as the program sees them: regions by address, file-backed reads, code ranges."""

from __future__ import annotations

import bisect
import contextlib
import heapq
import itertools
import mmap
from typing import Any

from rea_plugins.native.model import Model
from rea_plugins.native.model import Region


class Image:
    """Address-to-byte mapping over a file's contents (``bytes`` or a read-only ``mmap``)."""

    def __init__(self, model: Model, data: Any) -> None:
        self.model = model
        self.data = data
        self.size = len(data)
        self.arch = model.arch
        self.pointer = model.bits // 8
        regions = model.sections if model.sections else model.segments
        self.regions = sorted(regions, key=lambda r: (r.start, r.name))
        self._piece_starts, self._pieces = _disjoint(self.regions)
        self.code_regions = [r for r in self.regions if r.executable and r.file_size > 0]
        if not self.code_regions:
            self.code_regions = [
                r for r in sorted(model.segments, key=lambda r: r.start) if r.executable and r.file_size > 0
            ]
        self._code_starts = [r.start for r in self.code_regions]
        self.code_bytes = sum(r.file_size for r in self.code_regions)

    def region_at(self, address: int) -> Region | None:
        """The region holding ``address``; where regions overlap, the one that starts last."""
        i = bisect.bisect_right(self._piece_starts, address) - 1
        if i < 0:
            return None
        end, r = self._pieces[i]
        return r if address < end else None

    def mapped(self, address: int) -> bool:
        return self.region_at(address) is not None

    def code_region_at(self, address: int) -> Region | None:
        i = bisect.bisect_right(self._code_starts, address) - 1
        if i >= 0:
            r = self.code_regions[i]
            if r.start <= address < r.start + r.file_size:
                return r
        return None

    def code_end(self, address: int) -> int:
        """End of the file-backed code region holding ``address`` (``address`` itself when none)."""
        r = self.code_region_at(address)
        return r.start + r.file_size if r is not None else address

    def read(self, address: int, length: int) -> bytes | None:
        """File-backed bytes at ``address``; None when not fully backed."""
        r = self.region_at(address)
        if r is None or length < 0:
            return None
        off = address - r.start
        if off + length > r.file_size:
            return None
        start = r.file_offset + off
        if start < 0 or start + length > self.size:
            return None
        return bytes(self.data[start : start + length])

    def code(self, start: int, end: int) -> bytes:
        """Code bytes in ``[start, end)`` clipped to the code region holding ``start``."""
        r = self.code_region_at(start)
        if r is None:
            return b""
        stop = min(end, r.start + r.file_size)
        lo = r.file_offset + (start - r.start)
        hi = r.file_offset + (stop - r.start)
        if lo < 0 or lo >= self.size:
            return b""
        return bytes(self.data[lo : min(hi, self.size)])

    def code_view(self, start: int, end: int) -> memoryview:
        """``code`` without the copy: a view of the file's bytes (a whole-program sweep of a large region)."""
        r = self.code_region_at(start)
        if r is None:
            return memoryview(b"")
        stop = min(end, r.start + r.file_size)
        lo = r.file_offset + (start - r.start)
        hi = r.file_offset + (stop - r.start)
        if lo < 0 or lo >= self.size:
            return memoryview(b"")
        return memoryview(self.data)[lo : min(hi, self.size)]

    def release(self, lo: int = 0, hi: int | None = None) -> None:
        """Drop the pages of file bytes ``[lo, hi)`` from this process's resident set (a mapping only): a pass over
        the whole file has read them, and the next read faults them back in from the page cache."""
        if not isinstance(self.data, mmap.mmap):
            return
        lo -= lo % mmap.PAGESIZE
        hi = self.size if hi is None else min(hi, self.size)
        if hi <= lo:
            return
        with contextlib.suppress(OSError, ValueError):  # advice only: a kernel that refuses keeps the pages
            self.data.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def release_code(self, start: int, end: int) -> None:
        """``release`` of the code bytes ``[start, end)`` (addresses inside one code region)."""
        r = self.code_region_at(start)
        if r is not None:
            self.release(r.file_offset + (start - r.start), r.file_offset + (min(end, r.start + r.file_size) - r.start))

    def pointer_at(self, address: int) -> int | None:
        raw = self.read(address, self.pointer)
        return int.from_bytes(raw, "little") if raw is not None else None


def _disjoint(regions: list[Region]) -> tuple[list[int], list[tuple[int, Region]]]:
    """Split sorted, possibly overlapping regions into disjoint pieces, each owned by the region that
    starts last among those covering it: (piece starts, (piece end, owner))."""
    bounds = sorted({b for r in regions if r.size > 0 for b in (r.start, r.end)})
    starts: list[int] = []
    pieces: list[tuple[int, Region]] = []
    active: list[tuple[int, int, Region]] = []  # (-start, index, region): the latest start on top
    nxt = 0
    live = [r for r in regions if r.size > 0]
    for lo, hi in itertools.pairwise(bounds):
        while nxt < len(live) and live[nxt].start <= lo:
            heapq.heappush(active, (-live[nxt].start, nxt, live[nxt]))
            nxt += 1
        while active and active[0][2].end <= lo:
            heapq.heappop(active)
        if not active:
            continue
        owner = active[0][2]
        if pieces and pieces[-1][0] == lo and pieces[-1][1] is owner:
            pieces[-1] = (hi, owner)
        else:
            starts.append(lo)
            pieces.append((hi, owner))
    return starts, pieces
