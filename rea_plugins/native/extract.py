"""LIEF to Model: runs inside the parse worker, never in the server process."""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from rea.plugin import open_regular
from rea_plugins.native.declared import host_arch
from rea_plugins.native.model import Import
from rea_plugins.native.model import Linkage
from rea_plugins.native.model import Mitigations
from rea_plugins.native.model import Model
from rea_plugins.native.model import Region
from rea_plugins.native.model import Symbol
from rea_plugins.native.model import WorkerRequest


class ExtractError(Exception):
    """A typed failure the worker reports back (code from rea.errors.CODES)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def load_lief() -> Any:
    import lief

    lief.logging.disable()
    return lief


def extract(req: WorkerRequest) -> Model:
    """Parse ``req.path`` with LIEF, flatten what the provider needs, and drop impossible values."""
    return sanitize(_extract(req))


# Addresses stay below 2**63: the index keeps them in int64 columns (nothing valid lives above).
_ADDRESS_LIMIT = 1 << 63
_SAFE = (1 << 53) - 1  # the integer domain of canonical JSON


def _text(value: Any) -> str:
    if type(value) is str and value.isascii():
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value).encode("utf-8", "replace").decode("utf-8")


def _addr(value: Any) -> int | None:
    return value if isinstance(value, int) and 0 <= value < _ADDRESS_LIMIT else None


def sanitize(m: Model) -> Model:
    """Names as valid UTF-8; regions, sizes and slots inside the address space and JSON's integer domain."""
    dropped = 0

    def regions(items: list[Region]) -> list[Region]:
        nonlocal dropped
        out = []
        for r in items:
            fields = (r.start, r.size, r.file_offset, r.file_size)
            if (
                all(isinstance(v, int) and 0 <= v <= _SAFE for v in fields[1:])
                and _addr(r.start) is not None
                and r.start + r.size <= _ADDRESS_LIMIT
            ):
                out.append(
                    Region(
                        name=_text(r.name),
                        start=r.start,
                        size=r.size,
                        perms=r.perms,
                        file_offset=r.file_offset,
                        file_size=min(r.file_size, r.size) if r.size else 0,
                        kind=r.kind,
                    )
                )
            else:
                dropped += 1
        return out

    segments, sections = regions(m.segments), regions(m.sections)
    # Most symbols are already valid: keep those as they are (10^5 rebuilt structs cost a second).
    symbols = [
        s
        if type(s.name) is str and s.name.isascii() and 0 <= s.size <= _SAFE
        else Symbol(
            name=_text(s.name),
            address=s.address,
            size=s.size if 0 <= s.size <= _SAFE else 0,
            kind=s.kind,
            exported=s.exported,
            source=s.source,
        )
        for s in m.symbols
        if type(s.address) is int and 0 <= s.address < _ADDRESS_LIMIT
    ]
    imports = [
        Import(
            name=_text(i.name), library=None if i.library is None else _text(i.library), slot=_addr(i.slot), data=i.data
        )
        for i in m.imports
    ]
    plt_locals = [Import(name=_text(i.name), slot=i.slot) for i in m.plt_locals if _addr(i.slot) is not None]
    unwind = [
        (a, e)
        for a, e in m.unwind
        if type(a) is int and type(e) is int and 0 <= a <= e < _ADDRESS_LIMIT and e - a <= _SAFE
    ]
    link = m.linkage
    linkage = msgspec.structs.replace(
        link,
        interpreter=None if link.interpreter is None else _text(link.interpreter),
        needed=[_text(x) for x in link.needed],
        rpath=[_text(x) for x in link.rpath],
        runpath=[_text(x) for x in link.runpath],
    )
    limitations = list(m.limitations)
    if dropped:
        limitations.append(f"{dropped} segments/sections with out-of-range addresses or sizes were ignored")
    return Model(
        format=m.format,
        arch=m.arch,
        bits=m.bits,
        endianness=m.endianness,
        entry=_addr(m.entry),
        image_base=_addr(m.image_base) or 0,
        file_base=m.file_base if 0 <= m.file_base <= _SAFE else 0,
        slices=m.slices,
        slice_arch=m.slice_arch,
        segments=segments,
        sections=sections,
        symbols=symbols,
        imports=imports,
        unwind=unwind,
        linkage=linkage,
        mitigations=m.mitigations,
        limitations=limitations,
        plt_locals=plt_locals,
    )


def _extract(req: WorkerRequest) -> Model:
    try:
        req.path.encode("utf-8")
    except UnicodeEncodeError:
        # LIEF takes its path as UTF-8 text: a file name that is not UTF-8 is handed over as the descriptor's name.
        fd = open_regular(req.path, code="artifact_changed", what="target")
        try:
            return _parse(req, f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
    return _parse(req, req.path)


def _parse(req: WorkerRequest, path: str) -> Model:
    lief = load_lief()
    if lief.is_elf(path):
        binary = lief.ELF.parse(path)
        if binary is None:
            raise ExtractError("unsupported_target", "LIEF could not parse this ELF file (malformed headers)")
        return _elf(lief, binary, req)
    if lief.is_pe(path):
        cfg = lief.PE.ParserConfig()
        cfg.parse_exceptions = True
        cfg.parse_rsrc = False
        cfg.parse_signature = False
        binary = lief.PE.parse(path, cfg)
        if binary is None:
            raise ExtractError("unsupported_target", "LIEF could not parse this PE file (malformed headers)")
        return _pe(lief, binary, req)
    if lief.is_macho(path):
        fat = lief.MachO.parse(path)
        if fat is None or fat.size == 0:
            raise ExtractError("unsupported_target", "LIEF could not parse this Mach-O file (malformed headers)")
        return _macho(lief, fat, req)
    raise ExtractError("unsupported_target", "not an ELF, PE or Mach-O binary")


def _check_counts(req: WorkerRequest, sections: int, symbols: int) -> None:
    if sections > req.max_sections:
        raise ExtractError(
            "resource_constraint", f"{sections} sections exceed the native provider's limit of {req.max_sections}"
        )
    if symbols > req.max_symbols:
        raise ExtractError(
            "resource_constraint", f"{symbols} symbols exceed the native provider's limit of {req.max_symbols}"
        )


def _perms(r: bool, w: bool, x: bool) -> str:
    return ("r" if r else "-") + ("w" if w else "-") + ("x" if x else "-")


# -- ELF ---------------------------------------------------------------------------------------

_ELF_ARCH = {"X86_64": ("x86_64", 64), "I386": ("x86", 32), "ARM": ("arm", 32), "AARCH64": ("arm64", 64)}


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value)).split(".")[-1]


def _elf(lief: Any, b: Any, req: WorkerRequest) -> Model:
    machine = _enum_name(b.header.machine_type)
    if machine not in _ELF_ARCH:
        raise ExtractError("unsupported_target", f"ELF machine {machine} is not supported by the native provider")
    arch, bits = _ELF_ARCH[machine]
    sections_raw = list(b.sections)
    _check_counts(req, len(sections_raw), 0)
    limitations: list[str] = []
    segments: list[Region] = []
    for i, seg in enumerate(b.segments):
        if _enum_name(seg.type) != "LOAD":
            continue
        flags = int(seg.flags)
        segments.append(
            Region(
                name=f"LOAD{i}",
                start=seg.virtual_address,
                size=seg.virtual_size,
                perms=_perms(bool(flags & 4), bool(flags & 2), bool(flags & 1)),
                file_offset=seg.file_offset,
                file_size=seg.physical_size,
                kind="segment",
            )
        )
    sections: list[Region] = []
    for s in sections_raw:
        flags = int(s.flags)
        if not flags & 0x2 or s.virtual_address == 0:  # SHF_ALLOC
            continue
        nobits = _enum_name(s.type) == "NOBITS"
        sections.append(
            Region(
                name=s.name,
                start=s.virtual_address,
                size=s.size,
                perms=_perms(True, bool(flags & 0x1), bool(flags & 0x4)),
                file_offset=s.offset,
                file_size=0 if nobits else s.size,
                kind="section",
            )
        )
    dynsyms = list(b.dynamic_symbols)
    symtab = list(b.symtab_symbols)
    _check_counts(req, len(sections_raw), len(dynsyms) + len(symtab))
    thumb = arch == "arm"
    binding, types = lief.ELF.Symbol.BINDING, lief.ELF.Symbol.TYPE
    # Enum members are singletons: identity tests, not hashing (a Python-level call per symbol).
    is_global, is_weak = binding.GLOBAL, binding.WEAK
    t_func, t_ifunc, t_object = types.FUNC, types.GNU_IFUNC, types.OBJECT
    skipped = (types.SECTION, types.FILE, types.TLS)
    by_key: dict[tuple[str, int], Symbol] = {}
    for source, table in (("symtab", symtab), ("dynsym", dynsyms)):
        for s in table:
            name = s.name
            raw_type = s.type
            if not name or raw_type is skipped[0] or raw_type is skipped[1] or raw_type is skipped[2] or s.shndx == 0:
                continue  # shndx 0: undefined, an import
            addr = int(s.value)
            is_func = raw_type is t_func or raw_type is t_ifunc
            if thumb and raw_type is t_func:
                addr &= ~1
            if addr == 0:
                continue
            kind = "function" if is_func else "data" if raw_type is t_object else "label"
            bound = s.binding if source == "dynsym" else None
            exported = bound is is_global or bound is is_weak
            key = (name, addr)
            prev = by_key.get(key)
            if prev is not None:
                if exported and not prev.exported:
                    by_key[key] = Symbol(
                        name=name,
                        address=addr,
                        size=prev.size or int(s.size),
                        kind=prev.kind,
                        exported=True,
                        source=prev.source,
                    )
                continue
            by_key[key] = Symbol(name=name, address=addr, size=int(s.size), kind=kind, exported=exported, source=source)
    symbols = list(by_key.values())
    imports: list[Import] = []
    slots: dict[str, int] = {}
    for r in b.pltgot_relocations:
        if r.has_symbol and r.symbol.name:
            slots.setdefault(r.symbol.name, int(r.address))
    seen_imports: set[str] = set()
    for s in dynsyms:
        if s.shndx == 0 and s.name and s.name not in seen_imports:
            seen_imports.add(s.name)
            slot = slots.get(s.name)
            if slot is None:
                # GOT slots (GLOB_DAT): ask per import, not by walking every (mostly RELATIVE) relocation.
                reloc = b.get_relocation(s.name)
                slot = int(reloc.address) if reloc is not None and reloc.address else None
            # A variable, or an untyped name only a GOT slot reaches (no PLT stub): data, not code.
            data = s.type is t_object or (s.type is types.NOTYPE and s.name not in slots)
            imports.append(Import(name=s.name, library=None, slot=slot, data=data))
    # A variable an executable copies from its library (R_*_COPY into .bss: stdout, stderr, environ) is that
    # library's data, reached at the copy: a data import whose slot is the copy, not a symbol this binary defines.
    copied: set[str] = set()
    if b.has_interpreter:
        for s in dynsyms:
            if (
                s.shndx == 0
                or s.type is not t_object
                or not s.name
                or s.name in seen_imports
                or not 0 < s.shndx < len(sections_raw)
                or _enum_name(sections_raw[s.shndx].type) != "NOBITS"
            ):
                continue
            reloc = b.get_relocation(s.name)
            if reloc is not None and reloc.address and _enum_name(reloc.type).endswith("_COPY"):
                seen_imports.add(s.name)
                copied.add(s.name)
                imports.append(Import(name=s.name, library=None, slot=int(reloc.address), data=True))
    if copied:
        symbols = [s for s in symbols if s.name not in copied]
    # A library calls its own exported functions through the PLT too (interposition): those slots name
    # symbols it defines, and their stubs are thunks to local code.
    plt_locals = [
        Import(name=name, library=None, slot=slot) for name, slot in slots.items() if name not in seen_imports
    ]
    unwind = [(int(f.address), int(f.address) + int(f.size)) for f in b.functions if f.address]
    if not unwind:
        unwind = _eh_frame(b, bits)
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    bind_now = False
    for d in b.dynamic_entries:
        tag = _enum_name(d.tag)
        if tag == "NEEDED":
            needed.append(d.name)
        elif tag in ("RPATH", "RUNPATH"):
            (rpath if tag == "RPATH" else runpath).extend(list(d.paths))
        elif tag == "BIND_NOW" or (tag == "FLAGS" and int(d.value) & 0x8) or (tag == "FLAGS_1" and int(d.value) & 0x1):
            bind_now = True
    phdr_types = {_enum_name(s.type): s for s in b.segments}
    stack = phdr_types.get("GNU_STACK")
    import_names = {i.name for i in imports}
    all_names = import_names | {s.name for s in symbols}
    cet_ibt, cet_shstk, bti = _gnu_properties(lief, b, arch)
    mitigations = Mitigations(
        nx=(not bool(int(stack.flags) & 1)) if stack is not None else False,
        pie=_enum_name(b.header.file_type) == "DYN" and b.has_interpreter,
        relro=("full" if bind_now else "partial") if "GNU_RELRO" in phdr_types else "none",
        canary=bool({"__stack_chk_fail", "__stack_chk_guard", "__stack_chk_fail_local"} & all_names),
        fortify=any(n.startswith("__") and n.endswith("_chk") and n != "__stack_chk_fail" for n in import_names),
        cet_ibt=cet_ibt,
        cet_shstk=cet_shstk,
        bti=bti,
    )
    linkage = Linkage(
        interpreter=b.interpreter if b.has_interpreter else None, needed=needed, rpath=rpath, runpath=runpath
    )
    if thumb:
        limitations.append("ARM (32-bit) code is decoded in ARM mode; Thumb functions are listed but decoded as ARM.")
    if machine == "I386" or arch == "arm":
        limitations.append("32-bit PLT stubs are resolved only when they use absolute GOT addressing.")
    entry = int(b.entrypoint) or None
    if thumb and entry:
        entry &= ~1
    return Model(
        format="elf",
        arch=arch,
        bits=bits,
        endianness="little" if _enum_name(b.header.identity_data) in ("LSB", "ELFDATA2LSB") else "big",
        entry=entry,
        image_base=int(b.imagebase),
        file_base=0,
        slices=[],
        slice_arch=None,
        segments=segments,
        sections=sections,
        symbols=symbols,
        imports=imports,
        unwind=unwind,
        linkage=linkage,
        mitigations=mitigations,
        limitations=limitations,
        plt_locals=plt_locals,
    )


def _eh_frame(b: Any, bits: int) -> list[tuple[int, int]]:
    """Function extents from the ``.eh_frame`` section's FDEs, where LIEF finds none: it reads them through the
    ``PT_GNU_EH_FRAME`` segment, which a static executable (``gcc -static``) does not have."""
    from rea.plugin import fde_ranges

    section = b.get_section(".eh_frame")
    if section is None or _enum_name(section.type) == "NOBITS" or not section.virtual_address:
        return []
    little = _enum_name(b.header.identity_data) in ("LSB", "ELFDATA2LSB")
    return sorted(set(fde_ranges(bytes(section.content), int(section.virtual_address), bits // 8, little)))


def _gnu_properties(lief: Any, b: Any, arch: str) -> tuple[bool | str, bool | str, bool | str]:
    """CET's IBT and SHSTK and AArch64's BTI as the GNU property notes declare them (``"unknown"`` where they
    cannot say: no note is read as absent only on the architectures that define it)."""
    found = False
    cet_ibt: bool | str = "unknown"
    cet_shstk: bool | str = "unknown"
    bti: bool | str = "unknown"
    for note in b.notes:
        if not isinstance(note, lief.ELF.NoteGnuProperty):
            continue
        for prop in note.properties:
            if isinstance(prop, lief.ELF.X86Features):
                found = True
                feats = {_enum_name(f) for _, f in prop.features}
                cet_ibt = "IBT" in feats
                cet_shstk = "SHSTK" in feats
            elif isinstance(prop, lief.ELF.AArch64Feature):
                found = True
                bti = any(_enum_name(f) == "BTI" for f in prop.features)
    if arch in ("x86_64", "x86") and not found:
        cet_ibt = cet_shstk = False
    if arch == "arm64" and bti == "unknown":
        bti = False
    return cet_ibt, cet_shstk, bti


# -- PE ----------------------------------------------------------------------------------------

_PE_ARCH = {
    "AMD64": ("x86_64", 64),
    "I386": ("x86", 32),
    "ARM64": ("arm64", 64),
    "ARMNT": ("arm", 32),
    "ARM": ("arm", 32),
    "THUMB": ("arm", 32),
}


# The variables the Microsoft C runtimes export (msvcrt.def marks them DATA; MinGW's import library gives them no
# code stub): an import of one is a name with its IAT slot, never a procedure.
_CRT_DATA = frozenset(
    {
        "_HUGE",
        "__argc",
        "__argv",
        "__badioinfo",
        "__initenv",
        "__lc_codepage",
        "__lc_collate_cp",
        "__lc_handle",
        "__mb_cur_max",
        "__pioinfo",
        "__setlc_active",
        "__unguarded_readlc_active",
        "__wargv",
        "__winitenv",
        "_acmdln",
        "_aexit_rtn",
        "_commode",
        "_daylight",
        "_dstbias",
        "_environ",
        "_fileinfo",
        "_fmode",
        "_iob",
        "_mbcasemap",
        "_mbctype",
        "_osplatform",
        "_osver",
        "_pctype",
        "_pgmptr",
        "_pwctype",
        "_sys_errlist",
        "_sys_nerr",
        "_timezone",
        "_tzname",
        "_wcmdln",
        "_wenviron",
        "_winmajor",
        "_winminor",
        "_winver",
        "_wpgmptr",
    }
)
_CRT_DLL = re.compile(r"^(?:msvcrt\w*|msvcr\d+\w*|crtdll|ucrtbase\w*|api-ms-win-crt-[\w-]+)\.dll$", re.I)


# IMAGE_COR20_HEADER.Flags & COMIMAGE_FLAGS_ILONLY: a .NET assembly whose code is all IL. Its only native code is
# the loader stub at the entry point (jmp [_CorExeMain]); a sweep of .text would decode IL and metadata as machine
# code and invent procedures, so none is discovered there (program.Program.discovery).
IL_ONLY_NOTE = (
    "A .NET assembly with IL only: its methods are IL, which this provider does not decode, so the procedures "
    "listed are the loader stub and import slots. Read its code with the managed tools (inspect_managed_members, "
    "search_managed_strings, managed_references_to, inspect_managed_method)."
)


def _clr(b: Any, base: int) -> str | None:
    """``il-only`` or ``mixed`` for a PE with a CLI header, else None."""
    for d in b.data_directories:
        if _enum_name(d.type) == "CLR_RUNTIME_HEADER" and int(d.rva) and int(d.size) >= 20:
            raw = bytes(b.get_content_from_virtual_address(base + int(d.rva) + 16, 4))
            if len(raw) != 4:
                return None
            return "il-only" if int.from_bytes(raw, "little") & 0x1 else "mixed"
    return None


def _pe(lief: Any, b: Any, req: WorkerRequest) -> Model:
    machine = _enum_name(b.header.machine)
    if machine not in _PE_ARCH:
        raise ExtractError("unsupported_target", f"PE machine {machine} is not supported by the native provider")
    arch, bits = _PE_ARCH[machine]
    base = int(b.optional_header.imagebase)
    raw_sections = list(b.sections)
    _check_counts(req, len(raw_sections), 0)
    sections: list[Region] = []
    for s in raw_sections:
        ch = int(s.characteristics)
        vsize = int(s.virtual_size) or int(s.sizeof_raw_data)
        sections.append(
            Region(
                name=s.name,
                start=base + int(s.virtual_address),
                size=vsize,
                perms=_perms(bool(ch & 0x40000000), bool(ch & 0x80000000), bool(ch & 0x20000000)),
                file_offset=int(s.pointerto_raw_data),
                file_size=min(int(s.sizeof_raw_data), vsize),
                kind="section",
            )
        )
    symbols: list[Symbol] = []
    seen: set[tuple[str, int]] = set()
    coff = list(b.symbols)
    _check_counts(req, len(raw_sections), len(coff))
    for s in coff:
        idx = int(s.section_idx)
        name = s.name
        if idx <= 0 or idx > len(raw_sections) or not name or name.startswith(".") or name.startswith("__imp_"):
            continue
        addr = base + int(raw_sections[idx - 1].virtual_address) + int(s.value)
        is_func = _enum_name(s.complex_type) == "FUNCTION"
        key = (name, addr)
        if key in seen:
            continue
        seen.add(key)
        symbols.append(Symbol(name=name, address=addr, size=0, kind="function" if is_func else "label", source="coff"))
    if b.has_exports:
        for e in b.get_export().entries:
            if not e.name or getattr(e, "is_extern", False):
                continue
            addr = base + int(e.address)
            key = (e.name, addr)
            if key in seen:
                symbols = [
                    x
                    if (x.name, x.address) != key
                    else Symbol(
                        name=x.name, address=x.address, size=x.size, kind=x.kind, exported=True, source=x.source
                    )
                    for x in symbols
                ]
                continue
            seen.add(key)
            symbols.append(Symbol(name=e.name, address=addr, size=0, kind="label", exported=True, source="export"))
    imports: list[Import] = []
    for imp in b.imports:
        for e in imp.entries:
            name = e.name if not e.is_ordinal else f"{imp.name}#{e.ordinal}"
            if not name:
                continue
            data = name in _CRT_DATA and _CRT_DLL.match(imp.name or "") is not None
            imports.append(Import(name=name, library=imp.name, slot=base + int(e.iat_address), data=data))
    unwind = [(base + int(e.rva_start), base + int(e.rva_end)) for e in b.exceptions]
    dllc = int(b.optional_header.dll_characteristics)
    import_names = {i.name for i in imports}
    names = import_names | {s.name for s in symbols}
    mitigations = Mitigations(
        nx=bool(dllc & 0x100),
        pie=bool(dllc & 0x40),
        relro="unknown",
        canary=bool({"__security_cookie", "__stack_chk_fail", "__security_check_cookie"} & names),
        fortify=any(n.startswith("__") and n.endswith("_chk") and n != "__stack_chk_fail" for n in import_names),
        cfg=bool(dllc & 0x4000),
        high_entropy_va=bool(dllc & 0x20),
    )
    is_dll = any(_enum_name(c) == "DLL" for c in b.header.characteristics_list)
    entry_rva = int(b.optional_header.addressof_entrypoint)
    clr = _clr(b, base)
    linkage = Linkage(
        interpreter=None,
        needed=[imp.name for imp in b.imports],
        clr=msgspec.UNSET if clr is None else clr,
        dll=is_dll,
    )
    return Model(
        format="pe",
        arch=arch,
        bits=bits,
        endianness="little",
        entry=(base + entry_rva) if entry_rva else None,
        image_base=base,
        file_base=0,
        slices=[],
        slice_arch=None,
        segments=[],
        sections=sections,
        symbols=symbols,
        imports=imports,
        unwind=unwind,
        linkage=linkage,
        mitigations=mitigations,
        limitations=[IL_ONLY_NOTE] if clr == "il-only" else [],
    )


# -- Mach-O ------------------------------------------------------------------------------------

_MACHO_ARCH = {
    "X86_64": ("x86_64", 64),
    "x86": ("x86", 32),
    "X86": ("x86", 32),
    "ARM64": ("arm64", 64),
    "ARM": ("arm", 32),
}


def _objc_names(b: Any, named: set[int], code: list[tuple[int, int]]) -> list[Symbol]:
    """Objective-C method implementations the symbol table leaves unnamed (a stripped app), named ``-[Class selector]``
    from the class metadata by the kernel's reader (rea.operations.objc)."""
    from rea.plugin import implementation_names

    return [
        Symbol(name=name, address=addr, size=0, kind="function", source="objc")
        for addr, name in sorted(implementation_names(b).items())
        if addr not in named and any(a <= addr < e for a, e in code)
    ]


def _macho(lief: Any, fat: Any, req: WorkerRequest) -> Model:
    slices = []
    for i in range(fat.size):
        cpu = _enum_name(fat.at(i).header.cpu_type)
        slices.append(_MACHO_ARCH.get(cpu, ("unknown", 0))[0])
    prefer = req.prefer_arch or host_arch()
    index = slices.index(prefer) if prefer in slices else 0
    b = fat.at(index)
    cpu = _enum_name(b.header.cpu_type)
    if cpu not in _MACHO_ARCH:
        raise ExtractError("unsupported_target", f"Mach-O CPU {cpu} is not supported by the native provider")
    arch, bits = _MACHO_ARCH[cpu]
    file_base = int(getattr(b, "fat_offset", 0) or 0) if fat.size > 1 else 0
    limitations: list[str] = []
    if fat.size > 1:
        limitations.append(f"universal binary: analysed slice {index} ({arch}) of {', '.join(slices)}")
    raw_sections = list(b.sections)
    _check_counts(req, len(raw_sections), 0)
    segments: list[Region] = []
    seg_perm: dict[str, str] = {}
    for seg in b.segments:
        prot = int(seg.init_protection)
        perms = _perms(bool(prot & 1), bool(prot & 2), bool(prot & 4))
        seg_perm[seg.name] = perms
        if seg.virtual_size == 0:
            continue
        segments.append(
            Region(
                name=seg.name,
                start=int(seg.virtual_address),
                size=int(seg.virtual_size),
                perms=perms,
                file_offset=file_base + int(seg.file_offset),
                file_size=int(seg.file_size),
                kind="segment",
            )
        )
    sections: list[Region] = []
    for s in raw_sections:
        zerofill = _enum_name(s.type) in ("ZEROFILL", "GB_ZEROFILL", "THREAD_LOCAL_ZEROFILL")
        perms = seg_perm.get(s.segment_name, "r--")
        # Only sections holding instructions are code, whatever their segment allows.
        has_code = bool(int(s.flags) & 0x80000400)
        perms = perms[:2] + ("x" if has_code and "x" in perms else "-")
        sections.append(
            Region(
                name=f"{s.segment_name},{s.name}",
                start=int(s.virtual_address),
                size=int(s.size),
                perms=perms,
                file_offset=file_base + int(s.offset),
                file_size=0 if zerofill else int(s.size),
                kind="section",
            )
        )
    raw_symbols = list(b.symbols)
    _check_counts(req, len(raw_sections), len(raw_symbols))
    exec_ranges = [(r.start, r.end) for r in sections if r.executable]
    symbols: list[Symbol] = []
    imports: list[Import] = []
    seen: set[tuple[str, int]] = set()
    for s in raw_symbols:
        cat = _enum_name(s.category)
        if not s.name or cat == "UNDEFINED" or s.numberof_sections == 0 or _enum_name(s.type) != "SECTION":
            continue
        addr = int(s.value)
        key = (s.name, addr)
        if key in seen:
            continue
        seen.add(key)
        in_code = any(a <= addr < e for a, e in exec_ranges)
        symbols.append(
            Symbol(
                name=s.name,
                address=addr,
                size=0,
                kind="function" if in_code else "data",
                exported=bool(s.has_export_info),
                source="symtab",
            )
        )
    symbols += _objc_names(b, {a for _, a in seen}, exec_ranges)
    slots: dict[str, tuple[int, str | None]] = {}
    for bind in b.bindings:
        if bind.has_symbol and bind.symbol.name:
            lib = bind.library.name if getattr(bind, "has_library", False) and bind.library is not None else None
            slots.setdefault(bind.symbol.name, (int(bind.address), lib))
    for s in raw_symbols:
        if _enum_name(s.category) == "UNDEFINED" and s.name:
            slot, lib = slots.get(s.name, (None, None))
            imports.append(Import(name=s.name, library=lib, slot=slot))
    text_base = next((int(seg.virtual_address) for seg in b.segments if seg.name == "__TEXT"), 0)
    unwind: list[tuple[int, int]] = []
    if b.has_function_starts:
        unwind = [(text_base + int(off), text_base + int(off)) for off in b.function_starts.functions]
    flags = {_enum_name(f) for f in b.header.flags_list}
    import_names = {i.name for i in imports}
    mitigations = Mitigations(
        nx="ALLOW_STACK_EXECUTION" not in flags,
        pie="PIE" in flags,
        relro="unknown",
        canary="___stack_chk_fail" in import_names or "___stack_chk_guard" in import_names,
        fortify=any(n.startswith("___") and n.endswith("_chk") and n != "___stack_chk_fail" for n in import_names),
    )
    linkage = Linkage(
        interpreter=b.dylinker.name if b.has_dylinker else None,
        needed=[lib.name for lib in b.libraries],
        rpath=[r.path for r in b.rpaths] if hasattr(b, "rpaths") else [],
    )
    entry = int(b.entrypoint) or None
    return Model(
        format="mach-o",
        arch=arch,
        bits=bits,
        endianness="little",
        entry=entry,
        image_base=int(b.imagebase),
        file_base=file_base,
        slices=slices if fat.size > 1 else [],
        slice_arch=arch if fat.size > 1 else None,
        segments=segments,
        sections=sections,
        symbols=symbols,
        imports=imports,
        unwind=unwind,
        linkage=linkage,
        mitigations=mitigations,
        limitations=limitations,
    )
