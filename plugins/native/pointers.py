"""Pointer slots: pointer-sized words in data that hold an address of the image once it is loaded.

Found from what the loader is told to fill (ELF ``R_*_RELATIVE``, ``R_*_64``/``R_*_32`` and ``R_*_GLOB_DAT`` of
symbols the binary defines, ``.relr.dyn``; PE base relocations), from ``.init_array``/``.fini_array``, and, where
nothing tells the loader (a fixed-address executable, Mach-O rebases and chained fixups), from aligned words
equal to an address the analysis already knows. Each slot is a reference from data to what it holds.

The tables are read from the file's bytes with ``struct`` (no LIEF), bounded by their sections.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Iterable

from rea_plugins.native.image import Image
from rea_plugins.native.model import Region

# ELF relocation types whose slot holds an address of the image: (relative, absolute, GOT entry) per machine.
_ELF_TYPES = {"x86_64": (8, 1, 6), "arm64": (1027, 257, 1025), "x86": (8, 1, 6), "arm": (23, 2, 21)}
_ARRAYS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")
# Sections of a fixed image whose words are never pointers the program uses (tables for the loader).
_NOT_DATA = (
    ".dynamic",
    ".dynsym",
    ".dynstr",
    ".symtab",
    ".strtab",
    ".rela",
    ".rel.",
    ".relr",
    ".hash",
    ".gnu",
    ".note",
    ".eh_frame",
    ".gcc_except_table",
    ".interp",
    ".reloc",
    ".pdata",
    ".xdata",
    "__LINKEDIT",
    "__unwind_info",
    "__eh_frame",
    ".debug",
)
_MAX_ENTRIES = 1 << 24  # relocation entries read per image (a corrupt size cannot make this loop unbounded)


class Slots:
    """Slot address -> the address it holds, with the slots in address order."""

    def __init__(self, pairs: dict[int, int]) -> None:
        self.map = pairs
        self.slots = sorted(pairs)

    def __len__(self) -> int:
        return len(self.map)

    def get(self, slot: int) -> int | None:
        return self.map.get(slot)

    def within(self, start: int, end: int) -> list[int]:
        """Slots in ``[start, end)``."""
        lo = bisect.bisect_left(self.slots, start)
        return self.slots[lo : bisect.bisect_left(self.slots, end, lo)]


def find_slots(image: Image, known: Callable[[], Iterable[int]]) -> Slots:
    """Every pointer slot of ``image``; ``known`` gives the addresses a fixed image's words are matched against."""
    model = image.model
    pairs: dict[int, int] = {}
    fixed = True
    if model.format == "elf" and model.endianness == "little":
        fixed = _elf_type(image) == 2  # ET_EXEC: linked at its load address, nothing relocated
        _elf_relocations(image, pairs)
        _arrays(image, pairs)
    elif model.format == "pe":
        fixed = not _pe_base_relocations(image, pairs)
    if fixed:
        _scan(image, pairs, frozenset(known()))
    code = image.code_region_at
    return Slots({s: t for s, t in pairs.items() if code(s) is None and image.mapped(t)})


def _sections(image: Image, *prefixes: str) -> list[Region]:
    return [r for r in image.model.sections if r.file_size > 0 and r.name.startswith(prefixes)]


def _bytes(image: Image, r: Region) -> bytes:
    lo = r.file_offset
    hi = min(image.size, lo + r.file_size)
    return bytes(image.data[lo:hi]) if 0 <= lo < hi else b""


def _elf_type(image: Image) -> int:
    head = bytes(image.data[16:18])
    return int.from_bytes(head, "little") if len(head) == 2 else 0


def _elf_relocations(image: Image, pairs: dict[int, int]) -> None:
    model = image.model
    types = _ELF_TYPES.get(model.arch)
    if types is None:
        return
    relative, absolute, got = types
    wide = model.bits == 64
    word = 8 if wide else 4
    symbols = _dynamic_symbols(image, wide)
    budget = _MAX_ENTRIES
    for r in _sections(image, ".rela.", ".rel."):
        if r.name.endswith(".plt"):  # jump slots: imports, and the stubs' own lazy-binding addresses
            continue
        rela = r.name.startswith(".rela")
        layout = struct.Struct(("<QQq" if rela else "<QQ") if wide else ("<IIi" if rela else "<II"))
        data = _bytes(image, r)
        count = min(len(data) // layout.size, budget)
        budget -= count
        for entry in layout.iter_unpack(data[: count * layout.size]):
            slot, info = entry[0], entry[1]
            kind, index = (info & 0xFFFFFFFF, info >> 32) if wide else (info & 0xFF, info >> 8)
            if kind != relative and kind != absolute and kind != got:
                continue
            addend = entry[2] if rela else image.pointer_at(slot)
            if addend is None:
                continue
            if kind == relative:
                pairs[slot] = addend & ((1 << (8 * word)) - 1)
            else:
                value = symbols.get(index)
                if value is not None:
                    pairs[slot] = (value + (addend if kind == absolute or rela else 0)) & ((1 << (8 * word)) - 1)
    for r in _sections(image, ".relr"):
        _relr(image, _bytes(image, r), word, pairs)


def _dynamic_symbols(image: Image, wide: bool) -> dict[int, int]:
    """``.dynsym`` index -> value, for symbols the binary defines."""
    out: dict[int, int] = {}
    for r in _sections(image, ".dynsym"):
        layout = struct.Struct("<IBBHQQ" if wide else "<IIIBBH")
        data = _bytes(image, r)
        count = min(len(data) // layout.size, _MAX_ENTRIES)
        for i, entry in enumerate(layout.iter_unpack(data[: count * layout.size])):
            shndx, value = (entry[3], entry[4]) if wide else (entry[5], entry[1])
            if shndx != 0 and value:
                out[i] = value
    return out


def _relr(image: Image, data: bytes, word: int, pairs: dict[int, int]) -> None:
    """``.relr.dyn``: an address, then bitmaps of the words after it that are relocated in place."""
    fmt = "<Q" if word == 8 else "<I"
    bits = 8 * word - 1
    where = 0
    for (entry,) in struct.iter_unpack(fmt, data[: len(data) - len(data) % word]):
        if entry & 1 == 0:
            _keep_in_place(image, entry, pairs)
            where = entry + word
            continue
        for i in range(bits):
            if entry >> (i + 1) & 1:
                _keep_in_place(image, where + i * word, pairs)
        where += bits * word


def _keep_in_place(image: Image, slot: int, pairs: dict[int, int]) -> None:
    value = image.pointer_at(slot)
    if value:
        pairs[slot] = value


def _arrays(image: Image, pairs: dict[int, int]) -> None:
    """Constructor and destructor arrays: their words are code addresses (relocated, or as linked)."""
    word = image.pointer
    for r in _sections(image, *_ARRAYS):
        for slot in range(r.start, r.start + r.file_size - word + 1, word):
            if slot not in pairs:
                value = image.pointer_at(slot)
                if value and value != (1 << (8 * word)) - 1:  # -1 and 0 end .ctors/.dtors
                    pairs[slot] = value


def _pe_base_relocations(image: Image, pairs: dict[int, int]) -> bool:
    """PE base relocations (``.reloc``): blocks of a page RVA, a size and 16-bit typed offsets. False when none."""
    base = image.model.image_base
    found = False
    for r in _sections(image, ".reloc"):
        data = _bytes(image, r)
        pos = 0
        while pos + 8 <= len(data):
            page, size = struct.unpack_from("<II", data, pos)
            if size < 8 or pos + size > len(data):
                break
            for (item,) in struct.iter_unpack("<H", data[pos + 8 : pos + size - (size - 8) % 2]):
                kind, offset = item >> 12, item & 0xFFF
                width = 8 if kind == 10 else 4 if kind == 3 else 0  # DIR64, HIGHLOW
                if not width:
                    continue
                slot = base + page + offset
                raw = image.read(slot, width)
                if raw is not None:
                    found = True
                    pairs[slot] = int.from_bytes(raw, "little")
            pos += size
    return found


def _scan(image: Image, pairs: dict[int, int], known: frozenset[int]) -> None:
    """Aligned words of data sections equal to a known address (Mach-O chained fixups decoded first)."""
    if not known:
        return
    word = image.pointer
    macho = image.model.format == "mach-o"
    base = image.model.image_base
    fmt = "<Q" if word == 8 else "<I"
    for r in image.regions:
        if r.executable or r.file_size < word or r.name.startswith(_NOT_DATA) or any(n in r.name for n in _NOT_DATA):
            continue
        start = r.start + (-r.start % word)
        data = image.read(start, (r.file_size - (start - r.start)) // word * word)
        if not data:
            continue
        for i, (value,) in enumerate(struct.iter_unpack(fmt, data)):
            if value in known:
                pairs.setdefault(start + i * word, value)
            elif macho and value and not value >> 63:
                # A chained-fixup rebase: the target in the low 36 bits (a vmaddr, or an offset from the base).
                target = value & 0xFFFFFFFFF
                for candidate in (target, base + target):
                    if candidate in known:
                        pairs.setdefault(start + i * word, candidate)
                        break
