"""inspect_managed_native_boundaries: P/Invoke declarations, function-pointer call sites, mixed-mode code."""

from __future__ import annotations

from typing import Any
from typing import Literal

from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea_plugins.managed import common
from rea_plugins.managed import il
from rea_plugins.managed import reader
from rea_plugins.managed import sites
from rea_plugins.managed.artifact import attributes
from rea_plugins.managed.model import BOUNDARIES_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import BoundariesResult
from rea_plugins.managed.model import Crossing
from rea_plugins.managed.model import MixedMode
from rea_plugins.managed.model import ModuleRefRecord
from rea_plugins.managed.model import NativeImport
from rea_plugins.managed.reader import Image
from rea_plugins.managed.reader import token_text
from rea_plugins.managed.sites import Sites
from rea_plugins.managed.sites import opened

_CONVENTIONS = {0x100: "winapi", 0x200: "cdecl", 0x300: "stdcall", 0x400: "thiscall", 0x500: "fastcall"}
_CHARSETS = {0x0: "none", 0x2: "ansi", 0x4: "unicode", 0x6: "auto"}
LIBRARY_IMPORT = "System.Runtime.InteropServices.LibraryImportAttribute"
MARSHAL = "System.Runtime.InteropServices.Marshal::"
NATIVE_LIBRARY = "System.Runtime.InteropServices.NativeLibrary::"
SCANNED = il.CALL_OPCODES | {"calli"}
CrossingKind = Literal["calli", "delegate-for-function-pointer", "function-pointer-for-delegate", "native-library"]


def imports(image: Image) -> list[NativeImport]:
    out = []
    for row in image.rows("ImplMap"):
        forwarded = row.MemberForwarded
        rid = reader._rid(forwarded)
        if reader._table_name(forwarded) != "MethodDef" or not rid:
            continue
        flags = int(row.struct.MappingFlags)
        scope = image.row("ModuleRef", reader._rid(row.ImportScope))
        entry = image.text(row, "ImportName", "ImplMap") or image.method_name(rid)
        out.append(
            NativeImport(
                method=image.method_key(rid),
                token=token_text(0x06000000 | rid),
                declared_by="DllImport",
                module=image.text(scope, "Name", "ModuleRef") if scope is not None else "",
                entry_point=entry,
                calling_convention=_CONVENTIONS.get(flags & 0x700),
                charset=_CHARSETS.get(flags & 0x6),
                set_last_error=bool(flags & 0x40),
            )
        )
    declared = {i.method for i in out}
    # LibraryImport is a source-generator attribute: the generated stub holds the DllImport, the attribute the name.
    for attr in attributes(image):
        if attr.type == LIBRARY_IMPORT and attr.parent not in declared and "::" in attr.parent:
            module = attr.arguments[0] if attr.arguments and isinstance(attr.arguments[0], str) else ""
            named = attr.named or {}
            declared_entry = named.get("EntryPoint")
            name = attr.parent.split("::", 1)[1].split("(", 1)[0]
            out.append(
                NativeImport(
                    method=attr.parent,
                    token="",
                    declared_by="LibraryImport",
                    module=module,
                    entry_point=declared_entry if isinstance(declared_entry, str) else name,
                    calling_convention=None,
                    charset=None,
                    set_last_error=bool(named.get("SetLastError", False)),
                )
            )
    return out


def _crossing_kind(opcode: str, operand: str) -> CrossingKind | None:
    if opcode == "calli":
        return "calli"
    if opcode not in il.CALL_OPCODES:
        return None
    if operand.startswith(MARSHAL + "GetDelegateForFunctionPointer"):
        return "delegate-for-function-pointer"
    if operand.startswith(MARSHAL + "GetFunctionPointerForDelegate"):
        return "function-pointer-for-delegate"
    if operand.startswith(NATIVE_LIBRARY):
        return "native-library"
    return None


def crossings(image: Image, found: Sites) -> list[Crossing]:
    """Call sites that cross into native code, from the assembly's token sites (``sites.scan``)."""
    out: list[Crossing] = []
    wanted = [i for i, name in enumerate(found.opcodes) if name in SCANNED]
    for i in range(len(found)):
        code = found.opcode[i]
        if code not in wanted:
            continue
        opcode = found.opcodes[code]
        target = found.name(image, found.token[i])
        kind = _crossing_kind(opcode, target)
        if kind is not None:
            out.append(
                Crossing(method=image.method_key(found.method[i]), offset=found.offset[i], kind=kind, target=target)
            )
    return out


def mixed_mode(image: Image) -> MixedMode:
    flags = int(image.net.struct.Flags)
    dlls = sorted(
        {
            entry.dll.decode("ascii", "replace")
            for entry in getattr(image.pe, "DIRECTORY_ENTRY_IMPORT", [])
            if isinstance(entry.dll, bytes)
        }
    )
    return MixedMode(
        native_code=not flags & 0x1,
        vtable_fixups=bool(int(image.net.struct.VTableFixupsSize)),
        pe_imports=[d for d in dlls if d.lower() != "mscoree.dll"],
    )


@common.guarded
def handle(call: ToolCall) -> Evidence:
    chosen = common.selection(call.args)
    keep = common.selector(chosen)
    with opened(call) as (target, image, entry):
        scanned = sites.sites(entry, call.ctx)
        return _answer(call, target, image, scanned, chosen, keep)


def _answer(call: ToolCall, target: Any, image: Image, scanned: Sites, chosen: Any, keep: Any) -> Evidence:
    found = imports(image)
    calls, undecoded = crossings(image, scanned), scanned.undecoded
    # Counted over every import, listed as narrowed (pattern and namespace name the declaring method).
    found_all, found = found, [i for i in found if keep(i.method)]
    calls = [c for c in calls if keep(c.method)]
    counts: dict[str, int] = {}
    for item in (i for i in found_all if i.declared_by == "DllImport"):
        counts[item.module] = counts.get(item.module, 0) + 1
    module_refs = [
        ModuleRefRecord(name=name, imports=counts.pop(name, 0))
        for name in (image.text(r, "Name", "ModuleRef") for r in image.rows("ModuleRef"))
    ]
    result = BoundariesResult(
        schema_version=SCHEMA_VERSION,
        assembly=image.assembly_name(),
        imports=common.paged(found, call.args, "import", 100),
        module_refs=common.paged(module_refs, call.args, "module_ref", 100),
        implementations=common.paged(calls, call.args, "implementation", 100),
        mixed_mode=mixed_mode(image),
        selection=chosen,
    )
    limitations = [f"{undecoded} method bodies did not decode; their call sites are not listed."] if undecoded else []
    call.ctx.finish(f"{len(found)} native imports")
    return common.static_evidence(call, BOUNDARIES_OPERATION, target, result, limitations)
