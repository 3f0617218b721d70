"""demangle_swift and analyze_swift_types: Swift symbols demangled by demumble (pydemumble, LLVM's and Swift's
demanglers in one library), and the Swift type metadata a Mach-O slice records for reflection.

``__swift5_types`` holds 32-bit relative pointers (low two bits: direct or indirect) to type context descriptors
(Swift ``ABI/Metadata.h``): ``flags`` (kind in the low five bits: 16 class, 17 struct, 18 enum, 3 protocol), then
relative ``parent``, ``name``, ``accessFunction`` and ``fields`` (a field descriptor in ``__swift5_fieldmd``), and
for a class the ``superclassType`` mangled name. A field descriptor is ``mangledTypeName, superclass, kind (u16),
fieldRecordSize (u16), numFields``, then records of ``flags, mangledTypeName, fieldName``. No maintained Python
library reads these; every relative pointer is checked to land inside the image, a bad one skips its type.
"""

from __future__ import annotations

import struct
from typing import Any

from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea_plugins.apple import common
from rea_plugins.apple.model import SwiftField
from rea_plugins.apple.model import SwiftSymbol
from rea_plugins.apple.model import SwiftSymbols
from rea_plugins.apple.model import SwiftType
from rea_plugins.apple.model import SwiftTypes

KINDS = {0: "module", 1: "extension", 2: "anonymous", 3: "protocol", 4: "opaque", 16: "class", 17: "struct", 18: "enum"}
MAX_TYPES = 100_000
MAX_FIELDS = 4096
ANSWER_BYTES = 24 * 1024
SWIFT_PREFIXES = ("$s", "_$s", "$S", "_$S", "_T0", "$e", "_$e")


def demangler() -> Any:
    """pydemumble, or a typed ``provider_unavailable`` naming how to get it (never a guessed name)."""
    try:
        import pydemumble  # type: ignore[import-untyped]
    except ImportError:
        raise ReaError(
            "provider_unavailable",
            "no Swift demangler is installed on this host",
            remediation="Install pydemumble (pip install 'pydemumble>=0.1.3'; wheels for Python 3.12 and later).",
            details={"reason": "demangler_missing"},
        ) from None
    return pydemumble


def demangle(module: Any, name: str) -> str | None:
    out = str(module.demangle(name))
    return out if out and out != name else None


@common.guarded
def demangle_swift(call: ToolCall) -> Evidence:
    module = demangler()
    symbols = arg_strs(call.args, "symbols") or []
    offset = arg_int(call.args, "offset", 0)
    rows: list[SwiftSymbol] = []
    spent = 0
    at = offset
    # Answers stay under ANSWER_BYTES: the rest of a long batch is the next call's (from next_offset).
    while at < len(symbols) and (spent < ANSWER_BYTES or not rows):
        symbol = symbols[at]
        if not symbol.startswith(SWIFT_PREFIXES):
            row = SwiftSymbol(symbol=symbol, status="not-swift")
        else:
            shown = demangle(module, symbol)
            row = SwiftSymbol(symbol=symbol, demangled=shown, status="demangled" if shown else "unrecognized")
        rows.append(row)
        spent += len(symbol) + len(row.demangled or "") + 48
        at += 1
    report = SwiftSymbols(
        demangler=_version(),
        symbols=rows,
        offset=offset,
        total=len(symbols),
        next_offset=at if at < len(symbols) else None,
    )
    return common.evidence(call, None, report)


def _version() -> str:
    from importlib.metadata import version

    return f"pydemumble {version('pydemumble')}"


class _Reader:
    """Reads of one slice by virtual address through LIEF, bounded and checked."""

    def __init__(self, binary: Any) -> None:
        self.b = binary
        self.ranges = [
            (int(s.virtual_address), int(s.virtual_address) + int(s.size))
            for s in binary.sections
            if int(s.size) and common.enum_name(s.type) not in ("ZEROFILL", "GB_ZEROFILL", "THREAD_LOCAL_ZEROFILL")
        ]

    def inside(self, address: int, size: int) -> bool:
        return any(a <= address and address + size <= e for a, e in self.ranges)

    def read(self, address: int, size: int) -> bytes:
        if not self.inside(address, size):
            raise ValueError(f"{address:#x}+{size} lies outside the image")
        return bytes(self.b.get_content_from_virtual_address(address, size))

    def i32(self, address: int) -> int:
        return int(struct.unpack("<i", self.read(address, 4))[0])

    def u32(self, address: int) -> int:
        return int(struct.unpack("<I", self.read(address, 4))[0])

    def relative(self, address: int) -> int | None:
        """The target of the relative pointer at ``address`` (None for 0)."""
        off = self.i32(address)
        return address + off if off else None

    def cstring(self, address: int, limit: int = 1024) -> bytes:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read(address + len(out), 1)
            if chunk == b"\0":
                return bytes(out)
            out += chunk
        raise ValueError(f"string at {address:#x} is not terminated")

    def mangled(self, address: int | None) -> str | None:
        """A mangled type name; one holding symbolic references (bytes 1-0x17 and a 4-byte offset) is shown with them
        as ``<ref>`` (resolving them needs the runtime's context descriptors)."""
        if address is None:
            return None
        raw = bytearray()
        at = address
        while len(raw) < 512:
            byte = self.read(at, 1)[0]
            if byte == 0:
                break
            if 1 <= byte <= 0x17:
                raw += b"<ref>"
                at += 5
                continue
            if 0x18 <= byte <= 0x1F:
                raw += b"<ref>"
                at += 9
                continue
            raw.append(byte)
            at += 1
        return raw.decode("utf-8", "replace")


def _descriptor(r: _Reader, address: int) -> tuple[int, str, list[str]]:
    """(kind, name, parent names outermost first) of a context descriptor."""
    flags = r.u32(address)
    name_at = r.relative(address + 8)
    name = r.cstring(name_at).decode("utf-8", "replace") if name_at else ""
    parents: list[str] = []
    at = address
    for _ in range(16):
        parent = r.relative(at + 4)
        if parent is None:
            break
        parent &= ~1  # the low bit marks an indirect parent: the descriptor's address is at parent
        if r.i32(at + 4) & 1:
            parent = int(struct.unpack("<Q", r.read(parent, 8))[0])
        p_name = r.relative(parent + 8)
        parents.insert(0, r.cstring(p_name).decode("utf-8", "replace") if p_name else "?")
        at = parent
    return flags & 0x1F, name, parents


def read_types(binary: Any, module: Any | None) -> tuple[list[SwiftType], list[str]]:
    section = binary.get_section("__swift5_types")
    if section is None:
        return [], []
    r = _Reader(binary)
    start, count = int(section.virtual_address), min(int(section.size) // 4, MAX_TYPES)
    out: list[SwiftType] = []
    problems: list[str] = []

    def shown(mangled: str | None) -> str | None:
        if mangled is None or module is None or "<ref>" in mangled:
            return None
        return demangle(module, "$s" + mangled)

    for i in range(count):
        slot = start + 4 * i
        try:
            raw = r.i32(slot)
            target = slot + (raw & ~3)
            if raw & 3 == 1:  # indirect: the slot points to a pointer to the descriptor
                target = int(struct.unpack("<Q", r.read(target, 8))[0])
            kind, name, parents = _descriptor(r, target)
            fields_at = r.relative(target + 16) if kind in (16, 17, 18) else None
            superclass = r.mangled(r.relative(target + 20)) if kind == 16 else None
            fields: list[SwiftField] = []
            mangled = None
            if fields_at is not None:
                mangled = r.mangled(r.relative(fields_at))
                record_size = struct.unpack("<H", r.read(fields_at + 10, 2))[0]
                n = r.u32(fields_at + 12)
                if n > MAX_FIELDS or record_size < 12:
                    raise ValueError(f"{n} fields of {record_size} bytes")
                for k in range(n):
                    rec = fields_at + 16 + k * record_size
                    flags = r.u32(rec)
                    type_mangled = r.mangled(r.relative(rec + 4))
                    fname_at = r.relative(rec + 8)
                    fields.append(
                        SwiftField(
                            name=r.cstring(fname_at).decode("utf-8", "replace") if fname_at else "",
                            type=shown(type_mangled),
                            type_mangled=type_mangled,
                            var=bool(flags & 2),
                            indirect=bool(flags & 1),
                        )
                    )
            out.append(
                SwiftType(
                    name=".".join([*parents, name]),
                    kind=KINDS.get(kind, f"kind-{kind}"),
                    mangled=mangled,
                    superclass=shown(superclass) or superclass,
                    fields=fields,
                )
            )
        except (ValueError, struct.error, TypeError, OverflowError) as exc:
            if len(problems) < 20:
                problems.append(f"type record {i}: {exc}")
    return out, problems


@common.guarded
def analyze_swift_types(call: ToolCall) -> Evidence:
    target, f = common.load_macho(call)
    index = f.pick(arg_str(call.args, "architecture"))[0]
    try:
        module: Any | None = demangler()
        note = None
    except ReaError as exc:
        module, note = None, f"type names are shown mangled: {exc.message} ({exc.remediation})"
    types, problems = read_types(f.binaries[index], module)
    keep = common.name_filter(call.args)
    types = [t for t in types if keep(t.name)]
    chosen, info = common.page(types, call.args, "", 40)
    counts: dict[str, int] = {}
    for t in types:
        counts[t.kind] = counts.get(t.kind, 0) + 1
    report = SwiftTypes(
        cpu_type=f.cpu(index),
        types=chosen,
        page=info,
        counts=counts,
        demangler=_version() if module is not None else None,
        problems=problems,
    )
    limits = [note] if note else []
    if not f.binaries[index].has_section("__swift5_types"):
        limits.append("the slice has no __swift5_types section: no Swift types are recorded for reflection")
    return common.evidence(call, target, report, limits)
