"""Deterministic mutations of native binaries: header fields, offsets, counts, names, truncation, byte flips.

Each format's parser below finds where its fields live in the original file (ELF64, PE32+, Mach-O 64 and
universal), so a mutation hits a field the reader trusts (a program-header count, a section offset, a load
command size, a string table) rather than only random bytes. ``mutate`` returns the bytes and a short
description of what was done, which the suite prints beside any finding.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

# Values that break size and offset arithmetic: zero, sign boundaries, all-ones, and near the file's end.
EXTREMES = (
    0,
    1,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    (1 << 63) - 1,
    1 << 63,
    (1 << 64) - 1,
)
# Bytes that are not UTF-8 (a lone continuation byte, an overlong lead, a surrogate's encoding).
BAD_NAME_BYTES = (b"\x98", b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80\x80\x80")


@dataclass(frozen=True)
class Field:
    """A little- or big-endian integer at ``offset`` of ``width`` bytes, with a name for reports."""

    name: str
    offset: int
    width: int
    big_endian: bool = False

    def read(self, data: bytes | bytearray) -> int:
        return int.from_bytes(data[self.offset : self.offset + self.width], "big" if self.big_endian else "little")

    def write(self, buf: bytearray, value: int) -> None:
        value &= (1 << (8 * self.width)) - 1
        buf[self.offset : self.offset + self.width] = value.to_bytes(self.width, "big" if self.big_endian else "little")


@dataclass(frozen=True)
class Layout:
    """What a parser found: integer fields, name/string regions, and structural boundaries to cut at."""

    fields: tuple[Field, ...]
    names: tuple[tuple[str, int, int], ...]  # (label, offset, length) of string bytes
    cuts: tuple[int, ...]


def _u(data: bytes, fmt: str, off: int) -> int:
    value: int = struct.unpack_from(fmt, data, off)[0]
    return value


# -- ELF64 -------------------------------------------------------------------------------------------


def elf_layout(data: bytes) -> Layout:
    fields = [
        Field("e_type", 16, 2),
        Field("e_machine", 18, 2),
        Field("e_entry", 24, 8),
        Field("e_phoff", 32, 8),
        Field("e_shoff", 40, 8),
        Field("e_ehsize", 52, 2),
        Field("e_phentsize", 54, 2),
        Field("e_phnum", 56, 2),
        Field("e_shentsize", 58, 2),
        Field("e_shnum", 60, 2),
        Field("e_shstrndx", 62, 2),
        Field("ei_class", 4, 1),
        Field("ei_data", 5, 1),
    ]
    names: list[tuple[str, int, int]] = []
    cuts = [16, 64]
    phoff, shoff = _u(data, "<Q", 32), _u(data, "<Q", 40)
    phnum, shnum, shstrndx = _u(data, "<H", 56), _u(data, "<H", 60), _u(data, "<H", 62)
    for i in range(phnum):
        base = phoff + 56 * i
        if base + 56 > len(data):
            break
        for name, off, width in (
            ("p_type", 0, 4),
            ("p_flags", 4, 4),
            ("p_offset", 8, 8),
            ("p_vaddr", 16, 8),
            ("p_filesz", 32, 8),
            ("p_memsz", 40, 8),
            ("p_align", 48, 8),
        ):
            fields.append(Field(f"phdr[{i}].{name}", base + off, width))
        cuts.append(base + 28)
    sections: list[tuple[int, int, int, int, int]] = []
    for i in range(shnum):
        base = shoff + 64 * i
        if base + 64 > len(data):
            break
        for name, off, width in (
            ("sh_name", 0, 4),
            ("sh_type", 4, 4),
            ("sh_addr", 16, 8),
            ("sh_offset", 24, 8),
            ("sh_size", 32, 8),
            ("sh_link", 40, 4),
            ("sh_info", 44, 4),
            ("sh_entsize", 56, 8),
        ):
            fields.append(Field(f"shdr[{i}].{name}", base + off, width))
        sh_type, sh_offset, sh_size = _u(data, "<I", base + 4), _u(data, "<Q", base + 24), _u(data, "<Q", base + 32)
        sh_link, sh_entsize = _u(data, "<I", base + 40), _u(data, "<Q", base + 56)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))
        cuts.append(base + 40)
    for i, (sh_type, off, size, _link, entsize) in enumerate(sections):
        if sh_type == 3 and off + size <= len(data):  # SHT_STRTAB: section, symbol and dynamic names
            names.append(("shstrtab" if i == shstrndx else f"strtab[{i}]", off, size))
        if sh_type in (2, 11) and entsize == 24:  # SHT_SYMTAB / SHT_DYNSYM: st_name, st_value, st_size
            for j in range(1, min(size // 24, 40)):
                sym = off + 24 * j
                fields += [
                    Field(f"sym[{i}][{j}].st_name", sym, 4),
                    Field(f"sym[{i}][{j}].st_shndx", sym + 6, 2),
                    Field(f"sym[{i}][{j}].st_value", sym + 8, 8),
                    Field(f"sym[{i}][{j}].st_size", sym + 16, 8),
                ]
        if sh_type == 6:  # SHT_DYNAMIC: d_tag, d_val pairs
            for j in range(min(size // 16, 40)):
                fields += [Field(f"dyn[{j}].d_tag", off + 16 * j, 8), Field(f"dyn[{j}].d_val", off + 16 * j + 8, 8)]
        if off < len(data):
            cuts.append(off + min(size, len(data) - off) // 2)
    return Layout(tuple(fields), tuple(names), tuple(sorted(set(c for c in cuts if 0 < c < len(data)))))


# -- PE32+ -------------------------------------------------------------------------------------------


def pe_layout(data: bytes) -> Layout:
    lfanew = _u(data, "<I", 0x3C)
    coff, opt = lfanew + 4, lfanew + 24
    fields = [
        Field("e_lfanew", 0x3C, 4),
        Field("NumberOfSections", coff + 2, 2),
        Field("PointerToSymbolTable", coff + 8, 4),
        Field("NumberOfSymbols", coff + 12, 4),
        Field("SizeOfOptionalHeader", coff + 16, 2),
        Field("Characteristics", coff + 18, 2),
        Field("Magic", opt, 2),
        Field("AddressOfEntryPoint", opt + 16, 4),
        Field("ImageBase", opt + 24, 8),
        Field("SectionAlignment", opt + 32, 4),
        Field("FileAlignment", opt + 36, 4),
        Field("SizeOfImage", opt + 56, 4),
        Field("SizeOfHeaders", opt + 60, 4),
        Field("NumberOfRvaAndSizes", opt + 108, 4),
    ]
    for d in range(16):
        fields += [
            Field(f"DataDirectory[{d}].VirtualAddress", opt + 112 + 8 * d, 4),
            Field(f"DataDirectory[{d}].Size", opt + 116 + 8 * d, 4),
        ]
    nsect, optsize = _u(data, "<H", coff + 2), _u(data, "<H", coff + 16)
    table = opt + optsize
    names = [("section names", table, 8)]
    cuts = [0x40, lfanew + 24, table]
    sections: list[tuple[int, int, int, int]] = []
    for i in range(nsect):
        base = table + 40 * i
        if base + 40 > len(data):
            break
        names.append((f"section[{i}].Name", base, 8))
        for name, off in (
            ("VirtualSize", 8),
            ("VirtualAddress", 12),
            ("SizeOfRawData", 16),
            ("PointerToRawData", 20),
            ("PointerToRelocations", 24),
        ):
            fields.append(Field(f"section[{i}].{name}", base + off, 4))
        fields.append(Field(f"section[{i}].NumberOfRelocations", base + 32, 2))
        va, vsize, raw_size, raw_ptr = (
            _u(data, "<I", base + 12),
            _u(data, "<I", base + 8),
            _u(data, "<I", base + 16),
            _u(data, "<I", base + 20),
        )
        sections.append((va, max(vsize, raw_size), raw_ptr, raw_size))
        cuts += [base + 20, raw_ptr + raw_size // 2]

    def file_offset(rva: int) -> int | None:
        for va, size, ptr, raw in sections:
            if va <= rva < va + size and rva - va < raw:
                return ptr + rva - va
        return None

    imports = file_offset(_u(data, "<I", opt + 112 + 8)) if len(data) > opt + 124 else None
    if imports is not None:
        for j in range(8):  # import descriptors: lookup table, name and thunk RVAs
            base = imports + 20 * j
            if base + 20 > len(data) or data[base : base + 20] == bytes(20):
                break
            fields += [
                Field(f"import[{j}].OriginalFirstThunk", base, 4),
                Field(f"import[{j}].Name", base + 12, 4),
                Field(f"import[{j}].FirstThunk", base + 16, 4),
            ]
            name_at = file_offset(_u(data, "<I", base + 12))
            if name_at is not None:
                names.append((f"import[{j}] dll name", name_at, max(1, data.find(b"\0", name_at) - name_at)))
    exports = file_offset(_u(data, "<I", opt + 112)) if len(data) > opt + 116 else None
    if exports is not None and exports + 40 <= len(data):
        fields += [
            Field("export.NumberOfFunctions", exports + 20, 4),
            Field("export.NumberOfNames", exports + 24, 4),
            Field("export.AddressOfFunctions", exports + 28, 4),
            Field("export.AddressOfNames", exports + 32, 4),
            Field("export.AddressOfNameOrdinals", exports + 36, 4),
            Field("export.Name", exports + 12, 4),
        ]
    return Layout(tuple(fields), tuple(names), tuple(sorted(set(c for c in cuts if 0 < c < len(data)))))


# -- Mach-O 64 and universal --------------------------------------------------------------------------

_LC = {
    0x19: "LC_SEGMENT_64",
    0x2: "LC_SYMTAB",
    0xB: "LC_DYSYMTAB",
    0x80000028: "LC_MAIN",
    0xC: "LC_LOAD_DYLIB",
    0x80000022: "LC_DYLD_INFO_ONLY",
    0x26: "LC_FUNCTION_STARTS",
    0x80000034: "LC_DYLD_CHAINED_FIXUPS",
    0x80000033: "LC_DYLD_EXPORTS_TRIE",
    0x29: "LC_DATA_IN_CODE",
    0x1D: "LC_CODE_SIGNATURE",
}


def macho_layout(data: bytes, base: int = 0, label: str = "") -> Layout:
    fields = [
        Field(f"{label}cputype", base + 4, 4),
        Field(f"{label}filetype", base + 12, 4),
        Field(f"{label}ncmds", base + 16, 4),
        Field(f"{label}sizeofcmds", base + 20, 4),
        Field(f"{label}flags", base + 24, 4),
    ]
    names: list[tuple[str, int, int]] = []
    cuts = [base + 32]
    ncmds = _u(data, "<I", base + 16)
    at = base + 32
    for i in range(ncmds):
        if at + 8 > len(data):
            break
        cmd, size = _u(data, "<I", at), _u(data, "<I", at + 4)
        kind = _LC.get(cmd, f"cmd_{cmd:#x}")
        tag = f"{label}lc[{i}]:{kind}"
        fields += [Field(f"{tag}.cmd", at, 4), Field(f"{tag}.cmdsize", at + 4, 4)]
        cuts.append(at + 4)
        if cmd == 0x19 and at + 72 <= len(data):
            names.append((f"{tag}.segname", at + 8, 16))
            fields += [
                Field(f"{tag}.vmaddr", at + 24, 8),
                Field(f"{tag}.vmsize", at + 32, 8),
                Field(f"{tag}.fileoff", at + 40, 8),
                Field(f"{tag}.filesize", at + 48, 8),
                Field(f"{tag}.nsects", at + 64, 4),
            ]
            for s in range(min(_u(data, "<I", at + 64), 16)):
                sect = at + 72 + 80 * s
                if sect + 80 > len(data):
                    break
                names.append((f"{tag}.sect[{s}].sectname", sect, 16))
                fields += [
                    Field(f"{tag}.sect[{s}].addr", sect + 32, 8),
                    Field(f"{tag}.sect[{s}].size", sect + 40, 8),
                    Field(f"{tag}.sect[{s}].offset", sect + 48, 4),
                    Field(f"{tag}.sect[{s}].reloff", sect + 56, 4),
                    Field(f"{tag}.sect[{s}].nreloc", sect + 60, 4),
                ]
        elif cmd == 0x2 and at + 24 <= len(data):
            fields += [
                Field(f"{tag}.symoff", at + 8, 4),
                Field(f"{tag}.nsyms", at + 12, 4),
                Field(f"{tag}.stroff", at + 16, 4),
                Field(f"{tag}.strsize", at + 20, 4),
            ]
            stroff, strsize = _u(data, "<I", at + 16), _u(data, "<I", at + 20)
            if base + stroff + strsize <= len(data):
                names.append((f"{tag}.strings", base + stroff, strsize))
        elif cmd == 0x80000028 and at + 24 <= len(data):
            fields += [Field(f"{tag}.entryoff", at + 8, 8), Field(f"{tag}.stacksize", at + 16, 8)]
        elif cmd == 0xC and at + 24 <= len(data):
            fields.append(Field(f"{tag}.name_offset", at + 8, 4))
            names.append((f"{tag}.name", at + 24, max(1, size - 24)))
        elif cmd in (0x26, 0x80000034, 0x80000033, 0x29, 0x1D) and at + 16 <= len(data):
            fields += [Field(f"{tag}.dataoff", at + 8, 4), Field(f"{tag}.datasize", at + 12, 4)]
        elif cmd == 0x80000022 and at + 48 <= len(data):
            for k, name in enumerate(("rebase", "bind", "weak_bind", "lazy_bind", "export")):
                fields += [
                    Field(f"{tag}.{name}_off", at + 8 + 8 * k, 4),
                    Field(f"{tag}.{name}_size", at + 12 + 8 * k, 4),
                ]
        at += max(size, 8)
    return Layout(tuple(fields), tuple(names), tuple(sorted(set(c for c in cuts if 0 < c < len(data)))))


def fat_layout(data: bytes) -> Layout:
    fields = [Field("nfat_arch", 4, 4, True)]
    names: list[tuple[str, int, int]] = []
    cuts = [8]
    for i in range(min(_u(data, ">I", 4), 8)):
        base = 8 + 20 * i
        fields += [
            Field(f"fat[{i}].cputype", base, 4, True),
            Field(f"fat[{i}].offset", base + 8, 4, True),
            Field(f"fat[{i}].size", base + 12, 4, True),
            Field(f"fat[{i}].align", base + 16, 4, True),
        ]
        offset = _u(data, ">I", base + 8)
        if offset + 32 <= len(data) and data[offset : offset + 4] == b"\xcf\xfa\xed\xfe":
            inner = macho_layout(data, offset, f"slice[{i}].")
            fields += inner.fields
            names += inner.names
            cuts += inner.cuts
    return Layout(tuple(fields), tuple(names), tuple(sorted(set(c for c in cuts if 0 < c < len(data)))))


def layout(data: bytes) -> Layout:
    if data[:4] == b"\x7fELF":
        return elf_layout(data)
    if data[:2] == b"MZ":
        return pe_layout(data)
    if data[:4] == b"\xcf\xfa\xed\xfe":
        return macho_layout(data)
    if data[:4] == b"\xca\xfe\xba\xbe":
        return fat_layout(data)
    raise ValueError("not a format this mutator knows")


# -- mutations ---------------------------------------------------------------------------------------


def _value(rng: random.Random, old: int, size: int) -> int:
    pick = rng.randrange(6)
    if pick == 0:
        return rng.choice(EXTREMES)
    if pick == 1:
        return rng.choice((size, size + 1, size - 1, size * 2, size + 0x1000))
    if pick == 2:
        return old + rng.choice((-1, 1, -8, 8, 0x1000, -0x1000))
    if pick == 3:
        return old * rng.choice((2, 16, 256))
    if pick == 4:
        return old ^ (1 << rng.randrange(64))
    return rng.getrandbits(64)


def _fields(buf: bytearray, lay: Layout, rng: random.Random) -> str:
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        f = rng.choice(lay.fields)
        old = f.read(buf)
        new = _value(rng, old, len(buf))
        f.write(buf, new)
        done.append(f"{f.name} {old:#x}->{f.read(buf):#x}")
    return "fields: " + ", ".join(done)


def _names(buf: bytearray, lay: Layout, rng: random.Random) -> str:
    if not lay.names:
        return _flips(buf, lay, rng)
    label, off, length = rng.choice(lay.names)
    length = max(1, min(length, len(buf) - off))
    how = rng.randrange(4)
    if how == 0:  # invalid UTF-8 inside names
        for _ in range(rng.randint(1, 8)):
            bad = rng.choice(BAD_NAME_BYTES)
            at = off + rng.randrange(length)
            buf[at : at + len(bad)] = bad[: max(0, min(len(bad), len(buf) - at))]
        return f"names: invalid UTF-8 in {label}"
    if how == 1:  # no terminators: every name runs into the next
        for i in range(off, off + length):
            if buf[i] == 0:
                buf[i] = 0x41
        return f"names: NUL terminators removed from {label}"
    if how == 2:  # traversal and control characters where names are
        text = rng.choice((b"../../../etc/passwd", b"/abs/name", b"a\nb\tc\x1b[31m", b"%s%n%x", b"\\\\?\\C:\\x"))
        buf[off : off + min(len(text), length)] = text[:length]
        return f"names: hostile text in {label}"
    for i in range(off, off + length):  # one very long name
        buf[i] = 0x5A
    return f"names: {label} filled with one {length}-byte name"


def _truncate(buf: bytearray, lay: Layout, rng: random.Random) -> str:
    cut = rng.choice(lay.cuts) if lay.cuts and rng.random() < 0.6 else rng.randrange(1, len(buf))
    del buf[cut:]
    return f"truncated at {cut}"


def _flips(buf: bytearray, lay: Layout, rng: random.Random) -> str:
    n = rng.randint(1, 32)
    # Half the time in the first 4 KiB, where the headers the readers trust live.
    span = 4096 if rng.random() < 0.5 else len(buf)
    for _ in range(n):
        i = rng.randrange(min(span, len(buf)))
        buf[i] ^= 1 << rng.randrange(8)
    return f"{n} bit flips within {min(span, len(buf))} bytes"


def _run(buf: bytearray, lay: Layout, rng: random.Random) -> str:
    start = rng.randrange(len(buf))
    n = rng.randint(4, 512)
    fill = rng.choice(("random", "zero", "ff"))
    for i in range(start, min(len(buf), start + n)):
        buf[i] = rng.getrandbits(8) if fill == "random" else (0 if fill == "zero" else 0xFF)
    return f"{fill} run of {n} bytes at {start}"


MUTATIONS: tuple[tuple[Callable[[bytearray, Layout, random.Random], str], int], ...] = (
    (_fields, 50),
    (_names, 12),
    (_truncate, 12),
    (_flips, 16),
    (_run, 10),
)


def mutate(data: bytes, lay: Layout, rng: random.Random) -> tuple[bytes, str]:
    """One mutant of ``data`` and what was done to it."""
    buf = bytearray(data)
    fn = rng.choices([m for m, _ in MUTATIONS], weights=[w for _, w in MUTATIONS])[0]
    what = fn(buf, lay, rng)
    if rng.random() < 0.1:  # now and then a second, different kind of damage
        what += "; " + _flips(buf, lay, rng)
    return bytes(buf), what


def named_cases(fixture_id: str, data: bytes) -> list[tuple[bytes, str]]:
    """The reproductions from issue 17, where the format has them."""
    if data[:4] != b"\x7fELF":
        return []
    lay = elf_layout(data)
    out = []
    phnum = next(f for f in lay.fields if f.name == "e_phnum")
    buf = bytearray(data)
    phnum.write(buf, 0xFFFF)
    out.append((bytes(buf), "fields: e_phnum -> 0xffff"))
    buf = bytearray(data)
    p_offset = next(f for f in lay.fields if f.name == "phdr[1].p_offset")
    p_offset.write(buf, (1 << 64) - 1)
    out.append((bytes(buf), "fields: phdr[1].p_offset -> 2**64-1"))
    return out
