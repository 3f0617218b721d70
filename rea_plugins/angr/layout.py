"""The file's own tables (worker process only): load segments, sections, imports, needed libraries, exports.

Read from the file (pyelftools for ELF, pefile for PE: the parsers cle itself uses; cle for Mach-O) with the
conventions every provider follows (docs/native-operations.md): an ELF segment is a ``PT_LOAD`` named after
its program-header index, a PE import names its DLL and IAT slot, libraries come from ``DT_NEEDED``, the
import directory or the load commands. cle's own segments split an ELF load segment at the RELRO page.
Addresses are link-time.
"""

from __future__ import annotations

from typing import Any
from typing import Literal

import msgspec

from rea.plugin import Record

_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4
_PF_X, _PF_W, _PF_R = 0x1, 0x2, 0x4
_SCN_EXECUTE, _SCN_READ, _SCN_WRITE = 0x20000000, 0x40000000, 0x80000000


class Region(msgspec.Struct, frozen=True, kw_only=True):
    """A load segment or an allocated section; ``end`` exclusive."""

    name: str
    start: int
    end: int
    permissions: str
    file_offset: int
    file_size: int
    kind: Literal["segment", "section"]


class Import(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    library: str | None = None
    slot: int | None = None


class Export(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    address: int


class Linkage(Record, omit_defaults=False):
    """How the binary links (binary_layout sends every field but an unset one); a PE also says whether it is a
    DLL."""

    interpreter: str | None = None
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    dll: bool | msgspec.UnsetType = msgspec.UNSET


class Mitigations(Record, omit_defaults=False):
    """The hardening the file's headers declare, ``"unknown"`` where they cannot say (binary_layout sends every field
    but an unset one); a PE adds its ``cfg`` and ``high_entropy_va`` flags."""

    nx: bool | str = "unknown"
    pie: bool | str = "unknown"
    relro: str = "unknown"
    canary: bool | str = "unknown"
    fortify: bool | str = "unknown"
    cet_ibt: bool | str = "unknown"
    cet_shstk: bool | str = "unknown"
    bti: bool | str = "unknown"
    cfg: bool | msgspec.UnsetType = msgspec.UNSET
    high_entropy_va: bool | msgspec.UnsetType = msgspec.UNSET


class Tables(msgspec.Struct, frozen=True, kw_only=True):
    """What the file's headers say; empty where the format has no such table (PE has no segments)."""

    segments: tuple[Region, ...] = ()
    sections: tuple[Region, ...] = ()
    imports: tuple[Import, ...] = ()
    exports: tuple[Export, ...] = ()
    image_base: int = 0
    linkage: Linkage = Linkage()
    mitigations: Mitigations = Mitigations()


def perms(r: bool, w: bool, x: bool) -> str:
    return ("r" if r else "-") + ("w" if w else "-") + ("x" if x else "-")


def _hardening(imports: set[str], names: set[str], prefix: str = "") -> tuple[bool, bool]:
    """``canary`` and ``fortify``: whether the stack protector's and the fortified functions' names are there."""
    return (
        bool(
            {
                f"{prefix}__stack_chk_fail",
                f"{prefix}__stack_chk_guard",
                "__stack_chk_fail_local",
                "__security_cookie",
                "__security_check_cookie",
            }
            & names
        ),
        any(n.startswith(f"{prefix}__") and n.endswith("_chk") and n != f"{prefix}__stack_chk_fail" for n in imports),
    )


def read_tables(path: str, fmt: str, main: Any) -> Tables:
    """The tables of the file at ``path`` (``main``: cle's object, read for Mach-O); unreadable parts stay empty."""
    try:
        if fmt == "elf":
            return _elf(path)
        if fmt == "pe":
            return _pe(path)
        return _macho(path, main)
    except (RecursionError, MemoryError):
        raise
    except Exception:  # pyelftools and pefile surface a malformed file as many exception types (construct's too)
        return Tables()  # no linkage, every mitigation unknown


def _elf(path: str) -> Tables:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection
    from elftools.elf.sections import SymbolTableSection

    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            segments: list[Region] = []
            phdrs: dict[str, Any] = {}  # p_type -> pyelftools' segment (an untyped library object)
            for i, seg in enumerate(elf.iter_segments()):
                phdrs.setdefault(seg["p_type"], seg)
                if seg["p_type"] != "PT_LOAD":
                    continue
                flags = int(seg["p_flags"])
                start = int(seg["p_vaddr"])
                segments.append(
                    Region(
                        name=f"LOAD{i}",
                        start=start,
                        end=start + int(seg["p_memsz"]),
                        permissions=perms(bool(flags & _PF_R), bool(flags & _PF_W), bool(flags & _PF_X)),
                        file_offset=int(seg["p_offset"]),
                        file_size=int(seg["p_filesz"]),
                        kind="segment",
                    )
                )
            sections = []
            for sec in elf.iter_sections():
                flags = int(sec["sh_flags"])
                if not flags & _SHF_ALLOC or not sec["sh_addr"]:
                    continue
                start, size = int(sec["sh_addr"]), int(sec["sh_size"])
                nobits = sec["sh_type"] == "SHT_NOBITS"
                sections.append(
                    Region(
                        name=sec.name,
                        start=start,
                        end=start + size,
                        permissions=perms(True, bool(flags & _SHF_WRITE), bool(flags & _SHF_EXECINSTR)),
                        file_offset=int(sec["sh_offset"]),
                        file_size=0 if nobits else size,
                        kind="section",
                    )
                )
            dynsym = elf.get_section_by_name(".dynsym")
            symbols = list(dynsym.iter_symbols()) if isinstance(dynsym, SymbolTableSection) else []
            wanted = [s.name for s in symbols if s["st_shndx"] == "SHN_UNDEF" and s.name]
            # Slots: the PLT's jump slots first, then any other relocation naming the symbol (GLOB_DAT).
            plt_slots: dict[str, int] = {}
            other_slots: dict[str, int] = {}
            for sec in elf.iter_sections():
                if not isinstance(sec, RelocationSection) or sec["sh_link"] == 0:
                    continue
                table = elf.get_section(sec["sh_link"])
                if not isinstance(table, SymbolTableSection) or table.name != ".dynsym":
                    continue
                slots = plt_slots if sec["sh_flags"] & 0x40 or sec.name.endswith(".plt") else other_slots
                for reloc in sec.iter_relocations():
                    index = int(reloc["r_info_sym"])
                    if 0 < index < len(symbols) and symbols[index].name:
                        slots.setdefault(symbols[index].name, int(reloc["r_offset"]))
            imports, seen = [], set()
            for name in wanted:
                if name not in seen:
                    seen.add(name)
                    imports.append(Import(name=name, slot=plt_slots.get(name, other_slots.get(name))))
            exports = sorted(
                {
                    (s.name, int(s["st_value"]))
                    for s in symbols
                    if s.name
                    and s["st_shndx"] != "SHN_UNDEF"
                    and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                    and s["st_info"]["type"] not in ("STT_TLS", "STT_FILE")
                    and s["st_value"]
                },
                key=lambda e: (e[1], e[0]),
            )
            interp = phdrs.get("PT_INTERP")
            needed: list[str] = []
            rpath: list[str] = []
            runpath: list[str] = []
            bind_now = False
            for sec in elf.iter_sections():
                if not isinstance(sec, DynamicSection):
                    continue
                tag: Any
                for tag in sec.iter_tags():
                    kind = tag.entry.d_tag
                    if kind == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif kind == "DT_RPATH":
                        rpath.extend(p for p in tag.rpath.split(":") if p)
                    elif kind == "DT_RUNPATH":
                        runpath.extend(p for p in tag.runpath.split(":") if p)
                    elif (
                        kind == "DT_BIND_NOW"
                        or (kind == "DT_FLAGS" and int(tag.entry.d_val) & 0x8)
                        or (kind == "DT_FLAGS_1" and int(tag.entry.d_val) & 0x1)
                    ):
                        bind_now = True
                break
            stack = phdrs.get("PT_GNU_STACK")
            import_names = set(wanted)
            canary, fortify = _hardening(import_names, import_names | {n for n, _ in exports})
            cet_ibt, cet_shstk, bti = _gnu_properties(elf, elf["e_machine"])
            mitigations = Mitigations(
                nx=not bool(int(stack["p_flags"]) & _PF_X) if stack is not None else False,
                pie=elf["e_type"] == "ET_DYN" and interp is not None,
                relro=("full" if bind_now else "partial") if "PT_GNU_RELRO" in phdrs else "none",
                canary=canary,
                fortify=fortify,
                cet_ibt=cet_ibt,
                cet_shstk=cet_shstk,
                bti=bti,
            )
            interpreter = interp.get_interp_name() if interp is not None else None
            linkage = Linkage(interpreter=interpreter, needed=needed, rpath=rpath, runpath=runpath)
            loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            base = min((int(s["p_vaddr"]) - int(s["p_offset"]) for s in loads), default=0)
            return Tables(
                segments=tuple(segments),
                sections=tuple(sorted(sections, key=lambda r: (r.start, r.name))),
                imports=tuple(imports),
                exports=tuple(Export(name=n, address=a) for n, a in exports),
                image_base=max(base, 0),
                linkage=linkage,
                mitigations=mitigations,
            )
    except ELFError as exc:
        raise ValueError(str(exc)) from None


def _gnu_properties(elf: Any, machine: str) -> tuple[bool | str, bool | str, bool | str]:
    """CET's IBT and SHSTK (x86) and BTI (arm64) from the GNU property note; absent means the feature is off,
    ``"unknown"`` on an architecture without it."""
    from elftools.elf.sections import NoteSection

    found = False
    cet_ibt: bool | str = "unknown"
    cet_shstk: bool | str = "unknown"
    bti: bool | str = "unknown"
    for sec in elf.iter_sections():
        if not isinstance(sec, NoteSection):
            continue
        for note in sec.iter_notes():
            if note["n_type"] != "NT_GNU_PROPERTY_TYPE_0":
                continue
            for prop in note["n_desc"]:
                kind, data = prop.get("pr_type"), prop.get("pr_data")
                if kind == "GNU_PROPERTY_X86_FEATURE_1_AND" and isinstance(data, int):
                    found = True
                    cet_ibt, cet_shstk = bool(data & 1), bool(data & 2)
                elif kind == "GNU_PROPERTY_AARCH64_FEATURE_1_AND" and isinstance(data, int):
                    found = True
                    bti = bool(data & 1)
    if machine in ("EM_X86_64", "EM_386") and not found:
        cet_ibt = cet_shstk = False
    if machine == "EM_AARCH64" and bti == "unknown":
        bti = False
    return cet_ibt, cet_shstk, bti


def _pe(path: str) -> Tables:
    import pefile  # type: ignore[import-untyped]

    try:
        pe = pefile.PE(path, fast_load=True)
    except pefile.PEFormatError as exc:
        raise ValueError(str(exc)) from None
    try:
        pe.parse_data_directories(
            directories=[
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"],
            ]
        )
        base = int(pe.OPTIONAL_HEADER.ImageBase)
        sections = []
        for s in pe.sections:
            ch = int(s.Characteristics)
            vsize = int(s.Misc_VirtualSize) or int(s.SizeOfRawData)
            start = base + int(s.VirtualAddress)
            sections.append(
                Region(
                    name=s.Name.rstrip(b"\0").decode("utf-8", "replace"),
                    start=start,
                    end=start + vsize,
                    permissions=perms(bool(ch & _SCN_READ), bool(ch & _SCN_WRITE), bool(ch & _SCN_EXECUTE)),
                    file_offset=int(s.PointerToRawData),
                    file_size=min(int(s.SizeOfRawData), vsize),
                    kind="section",
                )
            )
        imports, needed = [], []
        for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []):
            dll = entry.dll.decode("utf-8", "replace")
            needed.append(dll)
            for imp in entry.imports:
                name = imp.name.decode("utf-8", "replace") if imp.name else f"{dll}#{imp.ordinal}"
                imports.append(Import(name=name, library=dll, slot=None if imp.address is None else int(imp.address)))
        exports = []
        directory = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        for sym in directory.symbols if directory is not None else []:
            if sym.name and not sym.forwarder:
                exports.append(Export(name=sym.name.decode("utf-8", "replace"), address=base + int(sym.address)))
        dllc = int(pe.OPTIONAL_HEADER.DllCharacteristics)
        import_names = {i.name for i in imports}
        canary, fortify = _hardening(import_names, import_names | {e.name for e in exports})
        mitigations = Mitigations(
            nx=bool(dllc & 0x100),
            pie=bool(dllc & 0x40),
            canary=canary,
            fortify=fortify,
            cfg=bool(dllc & 0x4000),
            high_entropy_va=bool(dllc & 0x20),
        )
        linkage = Linkage(needed=needed, dll=bool(int(pe.FILE_HEADER.Characteristics) & 0x2000))
        return Tables(
            sections=tuple(sections),
            imports=tuple(imports),
            exports=tuple(exports),
            image_base=base,
            linkage=linkage,
            mitigations=mitigations,
        )
    finally:
        pe.close()


_ZEROFILL = frozenset({0x1, 0xC, 0x12})  # S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
_CODE = 0x80000400  # S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS
_MH_ALLOW_STACK_EXECUTION, _MH_PIE = 0x20000, 0x200000
_LC_LOAD_DYLINKER = 0xE


def _macho(path: str, main: Any) -> Tables:
    delta = int(main.mapped_base) - int(main.linked_base)
    segments, seg_perms = [], {}
    for seg in getattr(main, "segments", []) or []:
        name = str(getattr(seg, "segname", "") or "")
        seg_perms[name] = perms(seg.is_readable, seg.is_writable, seg.is_executable)
        if not seg.memsize:
            continue
        segments.append(
            Region(
                name=name,
                start=int(seg.vaddr) - delta,
                end=int(seg.vaddr) + int(seg.memsize) - delta,
                permissions=seg_perms[name],
                file_offset=int(seg.offset),
                file_size=int(seg.filesize),
                kind="segment",
            )
        )
    sections = []
    for sec in getattr(main, "sections", []) or []:
        segname, flags = str(sec.segname), int(getattr(sec, "flags", 0) or 0)
        allowed = seg_perms.get(segname, "r--")
        # Only sections that hold instructions are code, whatever their segment allows.
        permissions = allowed[:2] + ("x" if flags & _CODE and "x" in allowed else "-")
        start = int(sec.vaddr) - delta
        sections.append(
            Region(
                name=f"{segname},{sec.sectname}",
                start=start,
                end=start + int(sec.memsize),
                permissions=permissions,
                file_offset=int(sec.offset),
                file_size=0 if flags & 0xFF in _ZEROFILL else int(sec.memsize),
                kind="section",
            )
        )
    slots: dict[str, int] = {}
    for reloc in getattr(main, "relocs", []) or []:
        bound = getattr(getattr(reloc, "symbol", None), "name", None)
        if bound:
            slots.setdefault(str(bound), int(reloc.rebased_addr) - delta)
    imports, exports, seen = [], [], set()
    for sym in getattr(main, "symbols", []) or []:
        if sym.is_import and sym.name and sym.name not in seen:
            seen.add(sym.name)
            library = getattr(sym, "library_name", None)
            imports.append(
                Import(
                    name=str(sym.name), library=None if library is None else str(library), slot=slots.get(str(sym.name))
                )
            )
        elif sym.is_export and sym.name:
            exports.append(Export(name=str(sym.name), address=int(sym.rebased_addr) - delta))
    import_names = {i.name for i in imports}
    flags = int(getattr(main, "flags", 0) or 0)
    canary, fortify = _hardening(import_names, import_names, "_")
    mitigations = Mitigations(
        nx=not flags & _MH_ALLOW_STACK_EXECUTION, pie=bool(flags & _MH_PIE), canary=canary, fortify=fortify
    )
    # cle numbers libraries from 1 with "Self" at 0 (the image's own ordinal): not a library it needs.
    libraries = getattr(main, "imported_libraries", None) or getattr(main, "deps", []) or []
    linkage = Linkage(interpreter=_dylinker(path), needed=[str(d) for d in libraries if d != "Self"])
    return Tables(
        segments=tuple(segments),
        sections=tuple(sections),
        imports=tuple(imports),
        exports=tuple(exports),
        image_base=int(main.linked_base),
        linkage=linkage,
        mitigations=mitigations,
    )


def _dylinker(path: str) -> str | None:
    """The ``LC_LOAD_DYLINKER`` path of a thin 64-bit little-endian Mach-O file (cle does not keep it)."""
    with open(path, "rb") as fh:
        head = fh.read(32)
        if len(head) < 32 or head[:4] != b"\xcf\xfa\xed\xfe":
            return None
        count, size = int.from_bytes(head[16:20], "little"), int.from_bytes(head[20:24], "little")
        commands = fh.read(min(size, 1 << 20))
    at = 0
    for _ in range(count):
        if at + 12 > len(commands):
            break
        cmd, cmdsize = (
            int.from_bytes(commands[at : at + 4], "little"),
            int.from_bytes(commands[at + 4 : at + 8], "little"),
        )
        if cmdsize < 8:
            break
        if cmd == _LC_LOAD_DYLINKER:
            offset = int.from_bytes(commands[at + 8 : at + 12], "little")
            raw = commands[at + offset : at + cmdsize]
            return raw.split(b"\0", 1)[0].decode("utf-8", "replace") or None
        at += cmdsize
    return None
