"""Go binaries' own tables: the build information (``.go.buildinfo``) and the function table (``pclntab``).

No registry package reads these, so rea parses them here, once, from the formats the Go project documents
(``debug/buildinfo``, ``runtime/debug.BuildInfo``'s text form, ``runtime/symtab.go`` and ``debug/gosym``): the
``golang`` plugin's ``inspect_go_binary`` reports both, and the native provider names a stripped Go binary's
procedures from the function table. Every read is bounds-checked; a damaged table is ``GoFormatError``, never an
``IndexError`` or a ``struct.error`` (``tests/kernel/test_golang_fuzz.py`` holds it to that).

The input is the file's bytes and its sections (name, address, file offset, file size), which LIEF or the native
model give for ELF, PE and Mach-O alike; the helpers here never import LIEF.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

import msgspec

BUILDINFO_MAGIC = b"\xff Go buildinf:"
BUILDINFO_ALIGN = 16
BUILDINFO_HEADER = 32
# The version and module strings are bounded: a real one is a few KB (a module with hundreds of deps, ~40 KB).
MAX_BUILDINFO_STRING = 1 << 20
MAX_FUNCTIONS = 2_000_000
MAX_NAME = 4096
MAX_FUNCTION_BYTES = 1 << 32
# pclntab magics (little-endian value of the first word), by the Go release that introduced the layout.
PCLNTAB_VERSIONS = {0xFFFFFFFB: "1.2", 0xFFFFFFFA: "1.16", 0xFFFFFFF0: "1.18", 0xFFFFFFF1: "1.20"}
BUILDINFO_SECTIONS = (".go.buildinfo", "__go_buildinfo")
PCLNTAB_SECTIONS = (".gopclntab", "__gopclntab")


class GoFormatError(ValueError):
    """A Go table that does not decode (truncated, out of bounds, or not the documented layout)."""


class Section(msgspec.Struct, frozen=True):
    """Where a section's bytes are: its link address and its extent in the file."""

    name: str
    address: int
    offset: int
    size: int


class GoReplacement(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a replace directive put in a module's place: another module version, or a local folder."""

    path: str
    version: str = ""
    sum: str = ""


class GoModule(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A module of the build list: path, version and go.sum hash (absent for the main module and local
    replacements), and what a replace directive put in its place."""

    path: str
    version: str = ""
    sum: str = ""
    replaced_by: GoReplacement | None = None


class GoSetting(msgspec.Struct, frozen=True):
    """One build setting (``-compiler=gc``, ``CGO_ENABLED=1``, ``GOOS=linux``, ``vcs.revision=...``)."""

    key: str
    value: str


class GoBuildInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What ``go version -m`` prints: the toolchain, the main package's path, its module, deps and settings."""

    go_version: str
    path: str = ""
    main: GoModule | None = None
    deps: list[GoModule] = []
    settings: list[GoSetting] = []


class GoFunction(msgspec.Struct, frozen=True, array_like=True):
    """A function of the table: its name and ``[start, end)`` addresses."""

    name: str
    start: int
    end: int


class GoFunctionTable(msgspec.Struct, frozen=True, kw_only=True):
    """The decoded ``pclntab``: its layout version, word size, instruction quantum, text start and functions."""

    layout: str
    pointer_size: int
    quantum: int
    text_start: int
    offset: int  # file offset of the table
    functions: list[GoFunction]


# -- build information ---------------------------------------------------------------------------------------


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(10):
        if pos + i >= len(data):
            raise GoFormatError("a length runs past the end of the build information")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + i + 1
        shift += 7
    raise GoFormatError("a length is not a valid varint")


def _varstring(data: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _uvarint(data, pos)
    if n > MAX_BUILDINFO_STRING or pos + n > len(data):
        raise GoFormatError("a build information string runs past its bounds")
    return data[pos : pos + n], pos + n


def _strip_sentinels(mod: bytes) -> bytes:
    # cmd/go wraps the module text in 16-byte sentinels; debug/buildinfo strips them this way.
    if len(mod) >= 33 and mod[-17] == ord("\n"):
        return mod[16:-16]
    return b""


def _unquote(value: str) -> str:
    """A setting value cmd/go quoted (strconv.Quote) because it held spaces, quotes or controls."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = msgspec.json.decode(value.encode(), type=str)
        except msgspec.DecodeError:
            return value
        return decoded
    return value


def _module(fields: list[str]) -> GoModule:
    return GoModule(
        path=fields[0] if fields else "",
        version=fields[1] if len(fields) > 1 else "",
        sum=fields[2] if len(fields) > 2 else "",
    )


def parse_modinfo(text: str, go_version: str) -> GoBuildInfo:
    """``runtime/debug.BuildInfo``'s text form (``path``, ``mod``, ``dep``, ``=>``, ``build`` lines)."""
    path = ""
    main: GoModule | None = None
    deps: list[GoModule] = []
    settings: list[GoSetting] = []
    last: str = ""
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        fields = rest.split("\t") if rest else []
        if kind == "path":
            path = rest
        elif kind == "mod":
            main = _module(fields)
            last = "mod"
        elif kind == "dep":
            deps.append(_module(fields))
            last = "dep"
        elif kind == "=>":
            found = _module(fields)
            replacement = GoReplacement(path=found.path, version=found.version, sum=found.sum)
            if last == "dep" and deps:
                deps[-1] = msgspec.structs.replace(deps[-1], replaced_by=replacement)
            elif last == "mod" and main is not None:
                main = msgspec.structs.replace(main, replaced_by=replacement)
        elif kind == "build":
            key, _, value = rest.partition("=")
            settings.append(GoSetting(_unquote(key), _unquote(value)))
    return GoBuildInfo(go_version=go_version, path=path, main=main, deps=deps, settings=settings)


def parse_buildinfo(blob: bytes, read_at: Callable[[int, int], bytes | None] | None = None) -> GoBuildInfo:
    """The build information whose 32-byte header starts ``blob``.

    Go 1.18 and later put the two strings inline after the header (flag bit 2); earlier releases put two pointers
    to Go string headers there, which ``read_at(address, length)`` (bytes at a link address, or None) resolves.
    """
    if len(blob) < BUILDINFO_HEADER or not blob.startswith(BUILDINFO_MAGIC):
        raise GoFormatError("no Go build information header")
    pointer_size, flags = blob[14], blob[15]
    if flags & 0x2:
        version, pos = _varstring(blob, BUILDINFO_HEADER)
        mod, _ = _varstring(blob, pos)
    else:
        if pointer_size not in (4, 8) or read_at is None:
            raise GoFormatError("the build information uses pointers rea cannot follow here")
        order = ">" if flags & 0x1 else "<"
        word = "I" if pointer_size == 4 else "Q"

        def pointer(raw: bytes | None) -> int:
            if raw is None or len(raw) < pointer_size:
                raise GoFormatError("a build information pointer is not in the file")
            return int(struct.unpack(order + word, raw[:pointer_size])[0])

        def string_at(address: int) -> bytes:
            header = read_at(address, 2 * pointer_size)
            data, length = pointer(header), pointer(None if header is None else header[pointer_size:])
            if length > MAX_BUILDINFO_STRING:
                raise GoFormatError("a build information string is too long")
            raw = read_at(data, length) if length else b""
            if raw is None or len(raw) < length:
                raise GoFormatError("a build information string is not in the file")
            return raw[:length]

        head = blob[16 : 16 + 2 * pointer_size]
        version = string_at(pointer(head))
        mod = string_at(pointer(head[pointer_size:]))
    go_version = version.decode("utf-8", "replace")
    if not go_version.startswith("go") and not go_version.startswith("devel"):
        raise GoFormatError("the build information's version string is not a Go version")
    return parse_modinfo(_strip_sentinels(mod).decode("utf-8", "replace"), go_version)


# -- function table ------------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, big_endian: bool, pointer_size: int) -> None:
        self.data = data
        self.order = ">" if big_endian else "<"
        self.pointer_size = pointer_size

    def u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.data):
            raise GoFormatError("the function table is truncated")
        return int(struct.unpack_from(self.order + "I", self.data, pos)[0])

    def i32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.data):
            raise GoFormatError("the function table is truncated")
        return int(struct.unpack_from(self.order + "i", self.data, pos)[0])

    def word(self, pos: int) -> int:
        if self.pointer_size == 4:
            return self.u32(pos)
        if pos < 0 or pos + 8 > len(self.data):
            raise GoFormatError("the function table is truncated")
        return int(struct.unpack_from(self.order + "Q", self.data, pos)[0])

    def cstring(self, pos: int) -> str:
        if pos < 0 or pos >= len(self.data):
            raise GoFormatError("a function name lies outside the table")
        end = self.data.find(b"\0", pos, pos + MAX_NAME)
        if end < 0:
            raise GoFormatError("a function name is not terminated")
        return self.data[pos:end].decode("utf-8", "replace")


def _layout(data: bytes) -> tuple[str, bool]:
    if len(data) < 8:
        raise GoFormatError("the function table header is truncated")
    for big_endian in (False, True):
        magic = int(struct.unpack_from(">I" if big_endian else "<I", data, 0)[0])
        layout = PCLNTAB_VERSIONS.get(magic)
        if layout is not None:
            break
    else:
        raise GoFormatError("no Go function table magic")
    if data[4] != 0 or data[5] != 0 or data[6] not in (1, 2, 4) or data[7] not in (4, 8):
        raise GoFormatError("the function table header is not Go's")
    return layout, big_endian


def parse_pclntab(
    data: bytes, text_start: int = 0, offset: int = 0, max_functions: int = MAX_FUNCTIONS
) -> GoFunctionTable:
    """The functions of the ``pclntab`` that starts ``data`` (names and address ranges).

    ``text_start`` is the address of ``runtime.text`` for the 1.16 layout (1.18 and later record it in the header,
    1.2 records absolute entries); ``offset`` is only reported back.
    """
    layout, big_endian = _layout(data)
    quantum, pointer_size = data[6], data[7]
    r = _Reader(data, big_endian, pointer_size)

    def header_word(i: int) -> int:
        return r.word(8 + i * pointer_size)

    nfunc = header_word(0)
    if nfunc > max_functions:
        raise GoFormatError(f"the function table claims {nfunc} functions, over the bound of {max_functions}")
    if layout in ("1.18", "1.20"):
        text_start = header_word(2)
        names_base, functab = header_word(3), header_word(7)
        field = 4
    elif layout == "1.16":
        names_base, functab = header_word(2), header_word(6)
        field = pointer_size
    else:
        names_base, functab = 0, 8 + pointer_size
        field = pointer_size
    funcdata = 0 if layout == "1.2" else functab
    if functab + (2 * nfunc + 1) * field > len(data) or names_base > len(data):
        raise GoFormatError("the function table runs past its section")
    entry = r.u32 if field == 4 else r.word

    def address(raw: int) -> int:
        return text_start + raw if layout in ("1.18", "1.20") else raw

    functions: list[GoFunction] = []
    for i in range(nfunc):
        at = functab + 2 * i * field
        start, func_offset, end = address(entry(at)), entry(at + field), address(entry(at + 2 * field))
        if end < start:
            raise GoFormatError("the function table's entries are not in address order")
        if end - start > MAX_FUNCTION_BYTES:
            raise GoFormatError("a function of the table is larger than any code section")
        record = funcdata + func_offset
        # _func: entry (a uint32 offset from 1.18 on, a pointer before), then nameOff int32.
        name_offset = r.i32(record + (4 if layout in ("1.18", "1.20") else pointer_size))
        name = r.cstring(names_base + name_offset)
        functions.append(GoFunction(name, start, end))
    return GoFunctionTable(
        layout=layout,
        pointer_size=pointer_size,
        quantum=quantum,
        text_start=text_start,
        offset=offset,
        functions=functions,
    )


# -- finding the tables in a binary --------------------------------------------------------------------------


def _slice(data: Any, section: Section) -> bytes:
    lo = max(0, section.offset)
    return bytes(data[lo : min(len(data), lo + max(0, section.size))])


def _read_at(data: Any, sections: Sequence[Section]) -> Callable[[int, int], bytes | None]:
    def read(address: int, length: int) -> bytes | None:
        for s in sections:
            if s.address <= address and address + length <= s.address + s.size and s.offset > 0:
                lo = s.offset + (address - s.address)
                return bytes(data[lo : lo + length]) if lo + length <= len(data) else None
        return None

    return read


def _aligned(data: Any, needle: bytes, section: Section, align: int) -> Iterable[int]:
    """File offsets of ``needle`` inside ``section``, ``align``-aligned from its start (``data`` is bytes or an
    mmap: both search in place, so a large section is never copied to be searched)."""
    lo = max(0, section.offset)
    hi = min(len(data), lo + max(0, section.size))
    pos = data.find(needle, lo, hi)
    while pos >= 0:
        if (pos - lo) % align == 0:
            yield pos
        pos = data.find(needle, pos + 1, hi)


def _tail(data: Any, section: Section, pos: int) -> bytes:
    return bytes(data[pos : min(len(data), max(0, section.offset) + max(0, section.size))])


def find_buildinfo(data: Any, sections: Sequence[Section]) -> GoBuildInfo | None:
    """The binary's build information, or None when it has none; ``GoFormatError`` when it is damaged.

    The named section first (ELF, Mach-O), else the first 16-byte aligned magic in a data section (PE), as
    ``debug/buildinfo`` looks for it."""
    named = [s for s in sections if s.name.rsplit(",", 1)[-1] in BUILDINFO_SECTIONS]
    candidates = named or [s for s in sections if s.size >= BUILDINFO_HEADER]
    read = _read_at(data, sections)
    for s in candidates:
        for pos in _aligned(data, BUILDINFO_MAGIC, s, BUILDINFO_ALIGN):
            return parse_buildinfo(_tail(data, s, pos), read)
    return None


def _text_start(sections: Sequence[Section]) -> int:
    for s in sections:
        if s.name.rsplit(",", 1)[-1] in (".text", "__text"):
            return s.address
    return 0


def find_pclntab(data: Any, sections: Sequence[Section], max_functions: int = MAX_FUNCTIONS) -> GoFunctionTable | None:
    """The binary's function table, or None when it has none (not a Go binary).

    The named section first (ELF, Mach-O); else, in a binary with Go build information, a header with a known magic
    in any section whose table decodes and names its first functions (a PE, whose table sits in ``.rdata``)."""
    text_start = _text_start(sections)
    named = [s for s in sections if s.name.rsplit(",", 1)[-1] in PCLNTAB_SECTIONS]
    for s in named:
        return parse_pclntab(_slice(data, s), text_start, s.offset, max_functions)
    # Without a section of its own the table is searched by magic, only in a binary that carries Go's build
    # information (every Go release since 1.13): other binaries' data holds such words too, and the search is slow.
    if not any(next(iter(_aligned(data, BUILDINFO_MAGIC, s, BUILDINFO_ALIGN)), None) is not None for s in sections):
        return None
    magics = [struct.pack(order, m) for m in PCLNTAB_VERSIONS for order in ("<I", ">I")]
    for s in sections:
        for magic in magics:
            for pos in _aligned(data, magic + b"\0\0", s, 4):
                try:
                    table = parse_pclntab(_tail(data, s, pos), text_start, pos, max_functions)
                except GoFormatError:
                    continue
                # A stray magic in other data decodes to nothing or to garbage names: the first few must read.
                if table.functions and all(f.name.isprintable() and f.name for f in table.functions[:8]):
                    return table
    return None


def lief_sections(binary: Any) -> list[Section]:
    """The sections of a LIEF ELF, PE or Mach-O binary as this module takes them (a PE's at their link address)."""
    out: list[Section] = []
    kind = type(binary).__module__ + "." + type(binary).__name__
    base = int(binary.optional_header.imagebase) if ".PE." in kind else 0
    for s in binary.sections:
        # Sections without file bytes (.bss, zero-fill) would otherwise read whatever lies at their offset.
        if ".ELF." in kind and str(s.type).endswith("NOBITS"):
            continue
        if ".MachO." in kind and int(s.offset) == 0:
            continue
        if ".PE." in kind:
            out.append(Section(str(s.name), base + int(s.virtual_address), int(s.offset), int(s.size)))
        elif ".MachO." in kind:
            out.append(Section(f"{s.segment_name},{s.name}", int(s.virtual_address), int(s.offset), int(s.size)))
        else:
            out.append(Section(str(s.name), int(s.virtual_address), int(s.file_offset), int(s.size)))
    return out
