"""Relocation tables decoded from their bytes: the pointer-sized slots a loader fills, and with what.

One decoder for the providers that read the tables themselves (native from the file, radare2 from its loaded
image); each keeps its own policy of which relocation types name a pointer of the image.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

# Name prefixes of sections that hold loader and debugger metadata, never the program's own pointers.
METADATA_SECTIONS = (
    ".eh_frame",
    ".gcc_except_table",
    ".note",
    ".dyn",
    ".rela",
    ".rel.",
    ".relr",
    ".gnu",
    ".interp",
    ".hash",
    ".debug",
    ".symtab",
    ".strtab",
    ".shstrtab",
    ".comment",
    ".pdata",
    ".xdata",
    ".reloc",
    ".idata",
    ".edata",
    ".tls",
    ".CRT",
)
# Constructor and destructor arrays: every word is a code address.
INIT_ARRAYS = (".init_array", ".fini_array", ".ctors", ".dtors")
# PE base relocation types that fill a pointer: IMAGE_REL_BASED_HIGHLOW (4 bytes) and DIR64 (8 bytes).
_PE_WIDTHS = {3: 4, 10: 8}


def words(data: bytes, word: int, little: bool) -> list[int]:
    """The aligned ``word``-byte integers of ``data`` (a trailing partial word is ignored)."""
    n = len(data) // word
    if not n:
        return []
    return list(struct.unpack_from(("<" if little else ">") + str(n) + ("Q" if word == 8 else "I"), data))


def elf_relocations(
    data: bytes, *, rela: bool, wide: bool, little: bool, limit: int
) -> Iterator[tuple[int, int, int, int | None]]:
    """``(slot, type, symbol index, addend)`` of each entry of a ``.rel``/``.rela`` section (addend None for REL),
    at most ``limit`` entries."""
    order = "<" if little else ">"
    layout = struct.Struct(order + (("QQq" if rela else "QQ") if wide else ("IIi" if rela else "II")))
    count = min(len(data) // layout.size, limit)
    for entry in layout.iter_unpack(data[: count * layout.size]):
        slot, info = entry[0], entry[1]
        kind, index = (info & 0xFFFFFFFF, info >> 32) if wide else (info & 0xFF, info >> 8)
        yield slot, kind, index, (entry[2] if rela else None)


def relr_slots(data: bytes, word: int, little: bool) -> Iterator[int]:
    """Slots a packed ``.relr.dyn`` table relocates in place: an address, then bitmaps of the words after it."""
    bits = 8 * word - 1
    where = 0
    for entry in words(data, word, little):
        if entry & 1 == 0:
            yield entry
            where = entry + word
            continue
        for i in range(bits):
            if entry >> (i + 1) & 1:
                yield where + i * word
        where += bits * word


def pe_base_relocations(data: bytes) -> Iterator[tuple[int, int]]:
    """``(rva, width)`` of each pointer a PE ``.reloc`` table rebases: blocks of a page RVA, a size, typed offsets."""
    pos = 0
    while pos + 8 <= len(data):
        page, size = struct.unpack_from("<II", data, pos)
        if size < 8 or pos + size > len(data):
            return
        for (item,) in struct.iter_unpack("<H", data[pos + 8 : pos + size - (size - 8) % 2]):
            width = _PE_WIDTHS.get(item >> 12)
            if width:
                yield page + (item & 0xFFF), width
        pos += size


def chained_rebase_target(value: int) -> int | None:
    """A Mach-O chained-fixup rebase's target (the low 36 bits: a vmaddr or an offset from the image base);
    None for a bind (bit 63), which names an import rather than an address."""
    return None if value >> 63 else value & 0xF_FFFF_FFFF
