"""A PE file's import directory read from its own bytes (pure Python): each DLL as the file spells it, and each
import by name (or ``#ordinal``) with its IAT slot, for providers whose engine reports them otherwise (radare2
lower-cases DLL names and names no library per import).

Malformed input reads as no imports: every offset is bounds-checked, every walk is bounded.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

MAX_DLLS = 4096
MAX_IMPORTS_PER_DLL = 65536


class PeImport(NamedTuple):
    library: str
    name: str
    slot: int  # virtual address of its IAT entry


def _u16(data: bytes, at: int) -> int:
    return struct.unpack_from("<H", data, at)[0] if 0 <= at <= len(data) - 2 else 0


def _u32(data: bytes, at: int) -> int:
    return struct.unpack_from("<I", data, at)[0] if 0 <= at <= len(data) - 4 else 0


def _u64(data: bytes, at: int) -> int:
    return struct.unpack_from("<Q", data, at)[0] if 0 <= at <= len(data) - 8 else 0


def _cstring(data: bytes, at: int, limit: int = 512) -> str:
    if not 0 <= at < len(data):
        return ""
    end = data.find(b"\0", at, at + limit)
    return data[at : end if end >= 0 else at].decode("latin-1")


def pe_imports(data: bytes) -> tuple[list[str], list[PeImport]]:
    """(DLLs in directory order, imports) of a PE image's bytes; ([], []) when it has none or is malformed."""
    if data[:2] != b"MZ":
        return [], []
    pe = _u32(data, 0x3C)
    if data[pe : pe + 4] != b"PE\0\0":
        return [], []
    sections_count = _u16(data, pe + 6)
    optional_size = _u16(data, pe + 20)
    optional = pe + 24
    magic = _u16(data, optional)
    wide = magic == 0x20B
    if magic not in (0x10B, 0x20B):
        return [], []
    image_base = _u64(data, optional + 24) if wide else _u32(data, optional + 28)
    directories = optional + (112 if wide else 96)
    import_rva = _u32(data, directories + 8)
    table = optional + optional_size
    sections = [
        (_u32(data, s + 12), max(_u32(data, s + 8), _u32(data, s + 16)), _u32(data, s + 20))
        for s in (table + 40 * i for i in range(min(sections_count, 96)))
    ]

    def offset(rva: int) -> int:
        for va, size, raw in sections:
            if va <= rva < va + size:
                return raw + rva - va
        return -1

    dlls: list[str] = []
    imports: list[PeImport] = []
    at = offset(import_rva) if import_rva else -1
    word, ordinal_flag = (8, 1 << 63) if wide else (4, 1 << 31)
    read_word = _u64 if wide else _u32
    for _ in range(MAX_DLLS):
        if at < 0 or at + 20 > len(data):
            break
        lookup, name_rva, iat = _u32(data, at), _u32(data, at + 12), _u32(data, at + 16)
        if not (lookup or name_rva or iat):
            break
        library = _cstring(data, offset(name_rva))
        at += 20
        if not library:
            continue
        dlls.append(library)
        thunks = offset(lookup or iat)
        for i in range(MAX_IMPORTS_PER_DLL):
            entry = read_word(data, thunks + i * word) if thunks >= 0 else 0
            if not entry:
                break
            # By ordinal, or by name: the hint/name entry's name follows its two-byte hint.
            by_ordinal = bool(entry & ordinal_flag)
            name = f"#{entry & 0xFFFF}" if by_ordinal else _cstring(data, offset((entry & 0x7FFFFFFF) + 2))
            if name:
                imports.append(PeImport(library, name, image_base + iat + i * word))
    return dlls, imports
