"""The strings of a binary's non-code regions, as compact columns; scanned in the server or in the parse worker."""

from __future__ import annotations

import bisect
import itertools
import re
import time
from array import array
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple
from typing import overload

import msgspec

from rea.plugin import JSONObject
from rea_plugins.native.assist import FileJob
from rea_plugins.native.image import Image
from rea_plugins.native.index import overdue
from rea_plugins.native.index import too_big
from rea_plugins.native.limits import Limits
from rea_plugins.native.model import Region
from rea_plugins.native.model import regions_only


class StringItem(NamedTuple):
    address: int
    encoding: str
    offset: int
    byte_length: int
    section: str


_ENCODINGS = ("ascii", "utf-8", "utf-16le")
_ASCII_CODE, _UTF8_CODE, _UTF16_CODE = range(3)
_Row = tuple[int, int, int, int]  # a string found: address, encoding (``_ENCODINGS``), file offset, byte length


class Strings(Sequence[StringItem]):
    """Found strings in address order as compact columns (a few dozen bytes each, not a tuple of objects); an
    item is made when read."""

    def __init__(self, narrow: bool = False, small: bool = False) -> None:
        # int32 addresses where the image is mapped below 2**31, uint32 offsets and lengths in a file below 4 GiB.
        self.address = array("i" if narrow else "q")
        self.offset = array("I" if small else "q")
        self.length = array("I" if small else "q")
        self.encoding = bytearray()
        self.section = array("I")
        self.sections: list[str] = []

    def add(self, section: str, rows: Iterable[_Row]) -> None:
        """One region's strings (``section``), in address order."""
        at = len(self.sections)
        before = len(self.address)
        columns = tuple(zip(*rows, strict=True))  # four columns, each appended at C speed
        if not columns:
            return
        addresses, encodings, offsets, lengths = columns
        self.address.extend(addresses)
        self.encoding.extend(encodings)
        self.offset.extend(offsets)
        self.length.extend(lengths)
        self.sections.append(section)
        self.section.extend(itertools.repeat(at, len(self.address) - before))

    def __len__(self) -> int:
        return len(self.address)

    @overload
    def __getitem__(self, i: int) -> StringItem: ...
    @overload
    def __getitem__(self, i: slice) -> list[StringItem]: ...
    def __getitem__(self, i: int | slice) -> StringItem | list[StringItem]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        section = self.sections[self.section[i]]
        return StringItem(self.address[i], _ENCODINGS[self.encoding[i]], self.offset[i], self.length[i], section)

    def at(self, address: int) -> list[StringItem]:
        """The strings that start at ``address``."""
        lo = bisect.bisect_left(self.address, address)
        hi = bisect.bisect_right(self.address, address, lo)
        return [self[j] for j in range(lo, hi)]

    def ordered(self) -> bool:
        return all(a <= b for a, b in itertools.pairwise(self.address))

    def __iter__(self) -> Iterator[StringItem]:
        return (self[i] for i in range(len(self)))

    def sort(self) -> None:
        """Address order, should regions overlap (a malformed binary)."""
        order = sorted(range(len(self)), key=self.address.__getitem__)
        self.address = array(self.address.typecode, (self.address[i] for i in order))
        self.offset = array(self.offset.typecode, (self.offset[i] for i in order))
        self.length = array(self.length.typecode, (self.length[i] for i in order))
        self.encoding = bytearray(self.encoding[i] for i in order)
        self.section = array("I", (self.section[i] for i in order))


# Metadata sections (symbol tables, relocations, unwind data, ...): their bytes are not program strings.
NON_STRING_SECTIONS = re.compile(
    r"^(\.dyn|\.gnu\.|\.hash|\.rela?\.|\.rel\.|\.rela|\.note|\.symtab|\.strtab|\.init_array"
    r"|\.fini_array|\.got|\.pdata|\.xdata|\.reloc|\.idata|\.tls|\.CRT|__LINKEDIT|__TEXT,__unwind_info"
    r"|__DATA_CONST,__got|__DATA,__la_symbol_ptr|__DATA,__got|\.debug|\.interp|/\d)"
    r"|eh_frame|gcc_except_table"
)
# Candidate runs by byte class (C-speed); UTF-8 validity is checked per run afterwards.
_RUNS = re.compile(rb"[\x20-\x7e\t\n\r\x80-\xf4]{4,}")
_ASCII = re.compile(rb"[\x20-\x7e\t\n\r]{4,}")
_ZEROS = re.compile(rb"\x00{4,}")


def scan_strings(image: Image, limits: Limits, narrow: bool, tick: Callable[[str], None] | None = None) -> Strings:
    """Every string of ``image``'s non-code regions (``tick(region name)`` before each region is scanned)."""
    size = image.size
    out = Strings(narrow, size < 1 << 32)
    deadline = time.monotonic() + limits.index_deadline_s
    whole = memoryview(image.data)
    try:
        for r in image.regions:
            if r.executable or r.file_size <= 0 or NON_STRING_SECTIONS.search(r.name):
                continue
            if time.monotonic() > deadline:
                raise overdue("the string scan", limits.index_deadline_s)
            if tick is not None:
                tick(r.name)
            lo = r.file_offset
            hi = min(size, r.file_offset + r.file_size)
            if lo >= hi or lo < 0:
                continue
            # The region is read in place (no copy of it), and its strings go straight into the columns: both
            # scans yield in address order, so a merge is the order (regions do not overlap: global order).
            with whole[lo:hi] as view:
                # Each list ascends by address (strictly): sorting both is the merge of the two.
                out.add(r.name, sorted(_runs(view, r, lo, limits.min_string_chars) + _utf16(view, r, lo)))
            image.release(lo, hi)
            if len(out) > limits.max_strings:
                raise too_big("string count", limits.max_strings, resource="strings")
    finally:
        whole.release()
    if not out.ordered():  # overlapping regions (malformed)
        out.sort()
    return out


def _runs(view: memoryview, r: Region, lo: int, min_chars: int) -> list[_Row]:
    """ASCII and UTF-8 runs (a run that is not UTF-8 gives the plain runs inside it), by address."""
    out: list[_Row] = []
    add = out.append
    base = r.start
    for m in _RUNS.finditer(view):
        raw = m.group(0)
        at = m.start()
        if raw.isascii():
            add((base + at, _ASCII_CODE, lo + at, len(raw)))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if len(text) >= min_chars:
            add((base + at, _UTF8_CODE, lo + at, len(raw)))
            continue
        for sub in _ASCII.finditer(raw):  # not UTF-8: keep the plain runs inside it
            add((base + at + sub.start(), _ASCII_CODE, lo + at + sub.start(), len(sub.group(0))))
    return out


# A byte lane as a mask (1: the byte qualifies, 0: it does not): a printable low byte (``_ASCII``'s class), a zero
# high byte.
_PRINTABLE_LANE = bytes(1 if 0x20 <= b <= 0x7E or b in (0x09, 0x0A, 0x0D) else 0 for b in range(256))
_ZERO_LANE = bytes([1] + [0] * 255)
_UNITS = re.compile(rb"\x01{4,}")


def _utf16(view: memoryview, r: Region, lo: int) -> list[_Row]:
    """UTF-16LE runs at even offsets: at least four code units whose low byte is printable and whose high byte is
    zero, found at C speed over the two byte lanes' masks (a low byte at the region's end has no high byte)."""
    low = bytes(view[0::2])
    if not low:
        return []
    width = len(low)
    printable = int.from_bytes(low.translate(_PRINTABLE_LANE))
    zero = int.from_bytes(bytes(view[1::2]).translate(_ZERO_LANE).ljust(width, b"\0"))
    units = (printable & zero).to_bytes(width)
    base = r.start
    return [(base + 2 * a, _UTF16_CODE, lo + 2 * a, 2 * (b - a)) for a, b in (m.span() for m in _UNITS.finditer(units))]


# -- in the parse worker (the second core) ------------------------------------------------------------


class StringsJob(FileJob, frozen=True, kw_only=True):
    """The string scan of the file, for the server."""

    limits: Limits


class StringColumns(msgspec.Struct, frozen=True, kw_only=True):
    """``Strings`` columns as bytes (their item types by the image's width and the file's size)."""

    address: bytes
    offset: bytes
    length: bytes
    encoding: bytes
    section: bytes
    sections: list[str]


def strings_route(params: JSONObject, reporter: Any) -> msgspec.Raw:  # the worker protocol's JSON request
    """The worker's ``strings`` route: the scan of the file as it is now, refused when its bytes changed."""
    from rea_plugins.native.assist import read_checked

    job = msgspec.convert(params, StringsJob)
    data = read_checked(job.path, job.sha256)
    model = regions_only(job.arch, job.bits, job.sections, job.segments)
    found = scan_strings(Image(model, data), job.limits, job.narrow)
    return msgspec.Raw(
        msgspec.msgpack.encode(
            StringColumns(
                address=found.address.tobytes(),
                offset=found.offset.tobytes(),
                length=found.length.tobytes(),
                encoding=bytes(found.encoding),
                section=found.section.tobytes(),
                sections=found.sections,
            )
        )
    )


def strings_of(columns: StringColumns, narrow: bool, small: bool) -> Strings:
    """The ``Strings`` a ``StringColumns`` carries."""
    out = Strings(narrow, small)
    out.address.frombytes(columns.address)
    out.offset.frombytes(columns.offset)
    out.length.frombytes(columns.length)
    out.encoding = bytearray(columns.encoding)
    out.section.frombytes(columns.section)
    out.sections = list(columns.sections)
    return out
