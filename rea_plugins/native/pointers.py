"""Pointer slots: pointer-sized words in data that hold an address of the image once it is loaded.

Found from what the loader is told to fill (ELF ``R_*_RELATIVE``, ``R_*_64``/``R_*_32`` and ``R_*_GLOB_DAT`` of
symbols the binary defines, ``.relr.dyn``; PE base relocations), from ``.init_array``/``.fini_array``, and, where
nothing tells the loader (a fixed-address executable, Mach-O rebases and chained fixups), from aligned words
equal to an address the analysis already knows. Each slot is a reference from data to what it holds.

The tables are read from the file's bytes with ``struct`` (no LIEF), bounded by their sections.
"""

from __future__ import annotations

import array
import bisect
import itertools
import struct
from collections.abc import Callable
from collections.abc import Iterable

from rea.plugin import chained_rebase_target
from rea.plugin import elf_relocations
from rea.plugin import pe_base_relocations
from rea.plugin import relr_slots
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
_BEYOND = 1 << 63  # a slot address no image maps (a corrupt relocation's offset): the columns are int64
_MAX_ENTRIES = 1 << 24  # relocation entries read per image (a corrupt size cannot make this loop unbounded)


class Slots:
    """Slot address -> the address it holds: two compact columns in slot order (a big library has hundreds of
    thousands of slots, which a dict of ints holds in ten times the memory). Both are below 2**63: values are
    mapped, slots bounded (``_BEYOND``)."""

    def __init__(self, pairs: dict[int, int] | None = None) -> None:
        pairs = pairs or {}
        self.slots = array.array("q", sorted(pairs))
        self.values = array.array("q", (pairs[s] for s in self.slots))

    def __len__(self) -> int:
        return len(self.slots)

    def get(self, slot: int) -> int | None:
        i = bisect.bisect_left(self.slots, slot)
        return self.values[i] if i < len(self.slots) and self.slots[i] == slot else None

    def within(self, start: int, end: int) -> list[int]:
        """Slots in ``[start, end)``."""
        lo = bisect.bisect_left(self.slots, start)
        return self.slots[lo : bisect.bisect_left(self.slots, end, lo)].tolist()


class _Pairs:
    """(slot, value) pairs as they are found: written ones (the last write of a slot wins, as the loader applies
    relocations in order) in two compact columns, and the ones only kept where no write names the slot
    (``setdefault``, the first wins) in a dict; a dict of every relocation held ten times the memory."""

    def __init__(self) -> None:
        self.slots = array.array("Q")
        self.values = array.array("Q")
        self.defaults: dict[int, int] = {}
        self._written: Slots | None = None

    def __setitem__(self, slot: int, value: int) -> None:
        self.slots.append(slot)
        self.values.append(value)
        self._written = None

    def written(self) -> Slots:
        """The written pairs in slot order, the last write of each slot (values unfiltered)."""
        if self._written is None:
            slots, values = self.slots, self.values
            out = Slots()
            if all(a < b for a, b in itertools.pairwise(slots)):  # a table in slot order (the usual)
                out.slots, out.values = array.array("Q", slots), array.array("Q", values)
            else:
                order = sorted(range(len(slots)), key=slots.__getitem__)  # stable: a slot's writes in order
                keep = [i for n, i in enumerate(order) if n + 1 == len(order) or slots[order[n + 1]] != slots[i]]
                out.slots = array.array("Q", (slots[i] for i in keep))
                out.values = array.array("Q", (values[i] for i in keep))
            self._written = out
        return self._written

    def __contains__(self, slot: int) -> bool:
        return slot in self.defaults or (self.written().get(slot) is not None)

    def setdefault(self, slot: int, value: int) -> None:
        if slot not in self:
            self.defaults[slot] = value

    def __bool__(self) -> bool:
        return bool(self.slots) or bool(self.defaults)


def find_slots(image: Image, known: Callable[[], Iterable[int]]) -> Slots:
    """Every pointer slot of ``image``; ``known`` gives the addresses a fixed image's words are matched against."""
    model = image.model
    pairs = _Pairs()
    fixed = True
    if model.format == "elf" and model.endianness == "little":
        fixed = _elf_type(image) == 2  # ET_EXEC: linked at its load address, nothing relocated
        _elf_relocations(image, pairs)
        _arrays(image, pairs)
    elif model.format == "pe":
        fixed = not _pe_base_relocations(image, pairs)
    if fixed:
        _scan(image, pairs, frozenset(known()))
    written = pairs.written()
    code = image.code_region_at
    out = Slots()
    keep_slot, keep_value = out.slots.append, out.values.append

    def keep(s: int, t: int) -> None:
        if s < _BEYOND and t < _BEYOND and code(s) is None and image.mapped(t):
            keep_slot(s)
            keep_value(t)

    defaults = sorted(pairs.defaults.items())
    d = 0
    for s, t in zip(written.slots, written.values, strict=True):  # a merge of the two slot-ordered sources
        while d < len(defaults) and defaults[d][0] < s:
            keep(*defaults[d])
            d += 1
        keep(s, t)
    for s, t in defaults[d:]:
        keep(s, t)
    return out


def _sections(image: Image, *prefixes: str) -> list[Region]:
    return [r for r in image.model.sections if r.file_size > 0 and r.name.startswith(prefixes)]


def _bytes(image: Image, r: Region) -> bytes:
    lo = r.file_offset
    hi = min(image.size, lo + r.file_size)
    return bytes(image.data[lo:hi]) if 0 <= lo < hi else b""


def _elf_type(image: Image) -> int:
    head = bytes(image.data[16:18])
    return int.from_bytes(head, "little") if len(head) == 2 else 0


def _elf_relocations(image: Image, pairs: _Pairs) -> None:
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
        for slot, kind, index, explicit in elf_relocations(
            _bytes(image, r), rela=rela, wide=wide, little=True, limit=budget
        ):
            budget -= 1
            if kind != relative and kind != absolute and kind != got:
                continue
            addend = explicit if rela else image.pointer_at(slot)
            if addend is None:
                continue
            if kind == relative:
                pairs[slot] = addend & ((1 << (8 * word)) - 1)
            else:
                value = symbols.get(index)
                if value is not None:
                    pairs[slot] = (value + (addend if kind == absolute or rela else 0)) & ((1 << (8 * word)) - 1)
    for r in _sections(image, ".relr"):
        for slot in relr_slots(_bytes(image, r), word, little=True):
            value = image.pointer_at(slot)
            if value:
                pairs[slot] = value


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


def _arrays(image: Image, pairs: _Pairs) -> None:
    """Constructor and destructor arrays: their words are code addresses (relocated, or as linked)."""
    word = image.pointer
    for r in _sections(image, *_ARRAYS):
        for slot in range(r.start, r.start + r.file_size - word + 1, word):
            if slot not in pairs:
                value = image.pointer_at(slot)
                if value and value != (1 << (8 * word)) - 1:  # -1 and 0 end .ctors/.dtors
                    pairs.setdefault(slot, value)


def _pe_base_relocations(image: Image, pairs: _Pairs) -> bool:
    """PE base relocations (``.reloc``): blocks of a page RVA, a size and 16-bit typed offsets. False when none."""
    base = image.model.image_base
    found = False
    for r in _sections(image, ".reloc"):
        for rva, width in pe_base_relocations(_bytes(image, r)):
            raw = image.read(base + rva, width)
            if raw is not None:
                found = True
                pairs[base + rva] = int.from_bytes(raw, "little")
    return found


def _scan(image: Image, pairs: _Pairs, known: frozenset[int]) -> None:
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
            elif macho and value and (target := chained_rebase_target(value)) is not None:
                for candidate in (target, base + target):
                    if candidate in known:
                        pairs.setdefault(start + i * word, candidate)
                        break
