"""inspect_macho and list_architectures: a Mach-O file's slices, header and load commands, read by LIEF."""

from __future__ import annotations

from typing import Any

from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_str
from rea_plugins.apple import common
from rea_plugins.apple.model import Architectures
from rea_plugins.apple.model import Encryption
from rea_plugins.apple.model import Exported
from rea_plugins.apple.model import Imported
from rea_plugins.apple.model import Library
from rea_plugins.apple.model import LoadCommand
from rea_plugins.apple.model import MachOReport
from rea_plugins.apple.model import MachOSlice
from rea_plugins.apple.model import Platform
from rea_plugins.apple.model import Section
from rea_plugins.apple.model import Segment
from rea_plugins.apple.model import Slice

# Ordinals with a meaning of their own in a two-level namespace (mach-o/nlist.h).
SPECIAL_ORDINALS = {0: "self", 0xFE: "executable", 0xFF: "dynamic-lookup"}


def _version(parts: Any) -> str:
    return ".".join(str(int(p)) for p in parts)


def _prot(value: int) -> str:
    return ("r" if value & 1 else "-") + ("w" if value & 2 else "-") + ("x" if value & 4 else "-")


def _summary(cmd: Any) -> str | None:
    """A load command's own facts in one line, for the commands that have a few."""
    kind = type(cmd).__name__
    if kind == "DylibCommand":
        return str(cmd.name)
    if kind == "RPathCommand":
        return str(cmd.path)
    if kind == "DylinkerCommand":
        return str(cmd.name)
    if kind == "UUIDCommand":
        return bytes(cmd.uuid).hex()
    if kind in ("SegmentCommand", "LinkEdit"):
        return str(cmd.name)
    if kind == "MainCommand":
        return f"entry offset {common.hexa(int(cmd.entrypoint))}"
    if kind in ("BuildVersion", "VersionMin"):
        plat = common.enum_name(cmd.platform) if kind == "BuildVersion" else ""
        return f"{plat} {_version(cmd.minos if kind == 'BuildVersion' else cmd.version)}".strip()
    if kind == "EncryptionInfo":
        return f"cryptid {int(cmd.crypt_id)}"
    if hasattr(cmd, "data_offset") and hasattr(cmd, "data_size"):  # the linkedit_data_command family
        return f"data {common.hexa(int(cmd.data_offset))}+{common.hexa(int(cmd.data_size))}"
    return None


def platform_of(b: Any) -> Platform | None:
    if b.has_build_version:
        bv = b.build_version
        return Platform(platform=common.enum_name(bv.platform).lower(), min_os=_version(bv.minos), sdk=_version(bv.sdk))
    if b.has_version_min:
        vm = b.version_min
        kind = common.enum_name(vm.command).replace("VERSION_MIN_", "").lower()
        return Platform(platform=kind, min_os=_version(vm.version), sdk=_version(vm.sdk))
    return None


def loaded_libraries(b: Any) -> list[Any]:
    """The dylib load commands in order (library ordinals count these; LC_ID_DYLIB is the image's own name)."""
    return [lib for lib in b.libraries if common.enum_name(lib.command) != "ID_DYLIB"]


def install_name(b: Any) -> str | None:
    return next((str(lib.name) for lib in b.libraries if common.enum_name(lib.command) == "ID_DYLIB"), None)


def libraries_and_imports(b: Any) -> tuple[list[Library], list[Imported]]:
    """Dylibs in load order (ordinal 1 first), each with how many symbols it supplies; imports with their library."""
    libs = loaded_libraries(b)
    imported: list[Imported] = []
    counts: dict[str, int] = {}
    for s in b.symbols:
        if common.enum_name(s.category) != "UNDEFINED" or not s.name:
            continue
        ordinal = int(s.library_ordinal)
        if 1 <= ordinal <= len(libs):
            lib: str | None = str(libs[ordinal - 1].name)
        else:
            lib = SPECIAL_ORDINALS.get(ordinal)
        imported.append(Imported(name=str(s.name), library=lib))
        if lib is not None:
            counts[lib] = counts.get(lib, 0) + 1
    out = [
        Library(
            ordinal=n,
            name=str(lib.name),
            command=common.enum_name(lib.command).lower(),
            current_version=_version(lib.current_version),
            compatibility_version=_version(lib.compatibility_version),
            imports=counts.get(str(lib.name), 0),
            weak=common.enum_name(lib.command) == "LOAD_WEAK_DYLIB",
        )
        for n, lib in enumerate(libs, 1)
    ]
    return out, imported


def slice_report(call: ToolCall, f: common.MachOFile, index: int) -> MachOSlice:
    b = f.binaries[index]
    args = call.args
    commands = [
        LoadCommand(
            index=i,
            command=common.enum_name(c.command).lower(),
            offset=int(c.command_offset),
            size=int(c.size),
            summary=_summary(c),
        )
        for i, c in enumerate(b.commands)
    ]
    cmds, cmds_page = common.page(commands, args, "commands", 40)
    segments = [
        Segment(
            name=str(s.name),
            address=common.hexa(int(s.virtual_address)),
            vm_size=common.hexa(int(s.virtual_size)),
            file_offset=common.safe(int(s.file_offset), f"segment {s.name} file offset"),
            file_size=common.safe(int(s.file_size), f"segment {s.name} file size"),
            max_protection=_prot(int(s.max_protection)),
            init_protection=_prot(int(s.init_protection)),
            sections=len(s.sections),
        )
        for s in b.segments
    ]
    sections = [
        Section(
            segment=str(s.segment_name),
            name=str(s.name),
            address=common.hexa(int(s.virtual_address)),
            size=common.hexa(int(s.size)),
            offset=int(s.offset),
            type=common.enum_name(s.type).lower(),
        )
        for s in b.sections
    ]
    secs, secs_page = common.page(sections, args, "sections", 40)
    libs, imported = libraries_and_imports(b)
    imps, imps_page = common.page(sorted(imported, key=lambda i: (i.library or "", i.name)), args, "imports", 40)
    exported = sorted(
        (
            Exported(
                name=str(s.name),
                address=common.hexa(int(s.value)),
                kind=common.enum_name(s.export_info.kind).lower() if s.has_export_info else "symbol",
            )
            for s in b.exported_symbols
        ),
        key=lambda e: e.name,
    )
    exps, exps_page = common.page(exported, args, "exports", 40)
    enc = None
    if b.has_encryption_info:
        e = b.encryption_info
        enc = Encryption(
            crypt_id=int(e.crypt_id),
            crypt_offset=int(e.crypt_offset),
            crypt_size=int(e.crypt_size),
            encrypted=int(e.crypt_id) != 0,
        )
    return MachOSlice(
        index=index,
        cpu_type=f.cpu(index),
        file_type=common.enum_name(b.header.file_type).lower(),
        flags=sorted(common.enum_name(x).lower() for x in b.header.flags_list),
        install_name=install_name(b),
        uuid=bytes(b.uuid.uuid).hex() if b.has_uuid else None,
        platform=platform_of(b),
        entry=common.hexa(int(b.entrypoint)) if b.has_main_command else None,
        encryption=enc,
        rpaths=[str(r.path) for r in b.rpaths],
        code_signature=bool(b.has_code_signature),
        load_commands=cmds,
        load_commands_page=cmds_page,
        segments=segments,
        sections=secs,
        sections_page=secs_page,
        libraries=libs,
        imports=imps,
        imports_page=imps_page,
        exports=exps,
        exports_page=exps_page,
    )


@common.guarded
def inspect_macho(call: ToolCall) -> Evidence:
    target, f = common.load_macho(call)
    chosen = f.pick(arg_str(call.args, "architecture"))
    report = MachOReport(
        universal=f.fat is not None,
        slices=[slice_report(call, f, i) for i in chosen],
        architectures=[f.cpu(i) for i in range(len(f.binaries))],
    )
    return common.evidence(call, target, report)


@common.guarded
def list_architectures(call: ToolCall) -> Evidence:
    target, f = common.load_macho(call)
    slices = []
    for i, b in enumerate(f.binaries):
        start, size = f.slice_span(i)
        slices.append(
            Slice(
                index=i,
                cpu_type=f.cpu(i),
                cpu_subtype=int(b.header.cpu_subtype) & 0xFFFFFF,
                offset=start,
                size=size,
                align=f.fat[i].align if f.fat is not None else None,
            )
        )
    return common.evidence(call, target, Architectures(universal=f.fat is not None, slices=slices))
