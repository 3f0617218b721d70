"""Hopper's document as rea's records (``rea.operations.records``), read through the bridge.

The bridge answers raw facts (labels, procedures with their blocks and instructions, references); what they
mean in the contract (kinds, imports, reference kinds) is decided here, where it is tested without Hopper.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import TypeVar

import msgspec

from rea.plugin import Block
from rea.plugin import CallSite
from rea.plugin import Detail
from rea.plugin import Document
from rea.plugin import Instruction
from rea.plugin import Inventory
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Name
from rea.plugin import Procedure
from rea.plugin import Reference
from rea.plugin import ReferenceKind
from rea.plugin import Segment
from rea.plugin import SegmentKind
from rea.plugin import String
from rea.plugin import StringEncoding
from rea.plugin import Target
from rea_plugins.hopper.connection import ProtocolViolation

# Sections whose procedures are import stubs (Mach-O stubs, ELF PLT).
STUB_SECTIONS = frozenset(
    {"__stubs", "__auth_stubs", "__picsymbolstub4", "__symbol_stub", "__symbol_stub1", ".plt", ".plt.sec", ".plt.got"}
)
_CALLS = ("call", "bl", "blr", "blx", "blraa", "blrab")
# Hopper's CallReference types.
CALL_NONE, CALL_UNKNOWN, CALL_DIRECT, CALL_OBJC = 0, 1, 2, 3
UNKNOWN_PERMISSIONS = "---"
# Hopper names a stub after what it reaches: imp___stubs__puts is the stub of _puts.
_STUB_PREFIXES = (
    "imp___stubs_",
    "imp___auth_stubs_",
    "imp___symbol_stub1_",
    "imp___symbolstub1_",
    "imp___picsymbolstub4_",
    "imp___jump_table_",
    "j_",
)

# Sends one bridge request (method, params) and answers the bridge's JSON result.
Call = Callable[[str, JSONObject], JSONValue]
S = TypeVar("S")


# The bridge's answers (bridge.py, which runs in Hopper's Python with the standard library only), decoded into the
# shapes it sends; a missing optional key reads as the default the source always gave it.


class BridgeSection(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None
    start: int
    length: int


class BridgeSegment(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None
    start: int
    length: int
    file_offset: int | None = None
    sections: list[BridgeSection] = []
    procedures: int = 0
    strings: int = 0


class BridgeDocument(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = ""
    entry: int | None = None
    bits64: bool = False
    segments: list[BridgeSegment] = []


class BridgeProcedure(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    name: str | None = None
    end: int
    section: str | None = None
    signature: str | None = None


class BridgeString(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    value: str
    unicode: bool = False
    section: str | None = None


class BridgeName(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    name: str | None


class BridgeBlock(msgspec.Struct, frozen=True, kw_only=True):
    start: int
    end: int
    successors: list[int | None] = []
    count: int = 0


class BridgeInstruction(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    bytes: str = ""
    mnemonic: str
    operands: list[str] = []
    conditional: bool = False
    unconditional: bool = False
    references: list[int] = []


class BridgeCallee(msgspec.Struct, frozen=True, kw_only=True, rename={"source": "from"}):
    # Hopper's CallReference type (CALL_*), the call instruction and the target it names.
    type: int = 0
    source: int
    to: int | None = None


class BridgeDetail(msgspec.Struct, frozen=True, kw_only=True):
    blocks: list[BridgeBlock] = []
    instructions: list[BridgeInstruction] = []
    callees: list[BridgeCallee] = []


class BridgeText(msgspec.Struct, frozen=True, kw_only=True):
    text: str | None = None


class BridgeBookmark(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None


class BridgeAnnotations(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None
    comment: str | None = None
    inline_comment: str | None = None
    bookmark: BridgeBookmark | None = None


class ShutdownAck(msgspec.Struct, frozen=True, kw_only=True):
    analysis_stopped: bool = False
    document_closed: bool = False


def decoded(value: JSONValue, shape: type[S], method: str) -> S:
    """The bridge's answer to ``method`` in the shape it sends; any other shape is a protocol violation."""
    try:
        return msgspec.convert(value, shape, strict=False)
    except msgspec.ValidationError as exc:
        raise ProtocolViolation(f"an answer to {method} of another shape ({exc})"[:200]) from None


def import_name(name: str) -> str:
    """The imported symbol a Hopper stub name stands for."""
    for prefix in _STUB_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


def _region(name: str | None, start: int, length: int, file_offset: int | None, kind: SegmentKind) -> Segment:
    """A segment or section of the document (Hopper does not say permissions); no file bytes without an offset."""
    return Segment(
        name=str(name),
        start=start,
        end=start + length,
        permissions=UNKNOWN_PERMISSIONS,
        file_offset=file_offset,
        file_size=length if file_offset is not None else 0,
        kind=kind,
    )


def _is_call(mnemonic: str) -> bool:
    return mnemonic.lower().split(".")[0] in _CALLS


class HopperSource:
    """A ``model.Source`` whose facts come from one bridge session (``call`` sends one request)."""

    def __init__(self, target: Target, call: Call) -> None:
        self.target = target
        self.call = call
        self._inventory: Inventory | None = None
        self._details: dict[int, Detail] = {}
        self._raw: dict[int, BridgeDetail] = {}
        self._starts: list[int] = []
        self._procs: list[Procedure] = []
        self._names: dict[int, str] = {}

    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = self._read()
        return self._inventory

    def _pages(self, method: str, shape: type[list[S]], segment: int, total: int) -> list[S]:
        items: list[S] = []
        while len(items) < total:
            page = decoded(self.call(method, {"segment": segment, "offset": len(items)}), shape, method)
            if not page:
                break
            items.extend(page)
        return items

    def _read(self) -> Inventory:
        doc = decoded(self.call("document", {}), BridgeDocument, "document")
        t = self.target
        document = Document(
            name=t.name,
            format=t.format,
            architecture=t.architecture or "unknown",
            sha256=t.sha256,
            entry=doc.entry,
            bits=64 if doc.bits64 else 32,
            endianness="little",
            engine_format="hopper",
            language=str(doc.name),
        )
        segments: list[Segment] = []
        procedures: list[Procedure] = []
        names: list[Name] = []
        strings: list[String] = []
        for index, seg in enumerate(doc.segments):
            start, length, offset = seg.start, seg.length, seg.file_offset
            file_offset = offset if offset is not None and offset >= 0 else None
            segments.append(_region(seg.name, start, length, file_offset, "segment"))
            for sec in seg.sections:
                s_offset = None if file_offset is None else file_offset + (sec.start - start)
                segments.append(_region(sec.name, sec.start, sec.length, s_offset, "section"))
            for p in self._pages("procedures", list[BridgeProcedure], index, seg.procedures):
                address = p.address
                section = p.section
                stub = section in STUB_SECTIONS
                name = str(p.name or f"sub_{address:x}")
                procedures.append(
                    Procedure(
                        address=address,
                        name=import_name(name) if stub else name,
                        end=p.end,
                        kind="import" if stub else "local",
                        section=section,
                        signature=p.signature or None,
                        thunk_of=import_name(name) if stub else None,
                    )
                )
            for s in self._pages("strings", list[BridgeString], index, seg.strings):
                value = s.value
                wide = s.unicode
                encoding: StringEncoding = "utf-16le" if wide else "ascii" if value.isascii() else "utf-8"
                strings.append(
                    String(
                        address=s.address,
                        value=value,
                        encoding=encoding,
                        byte_length=len(value.encode("utf-16le" if wide else "utf-8")),
                        section=s.section,
                    )
                )
            # Labels have no count of their own in the document summary: page until a short page.
            offset = 0
            while True:
                page = decoded(self.call("names", {"segment": index, "offset": offset}), list[BridgeName], "names")
                for n in page:
                    self._names.setdefault(n.address, str(n.name))
                if len(page) < 5000:
                    break
                offset += len(page)
        procedures.sort(key=lambda p: (p.address, p.name))
        self._procs = procedures
        self._starts = [p.address for p in procedures]
        kinds = {p.address: p.kind for p in procedures}
        for proc in procedures:
            if proc.kind == "import":
                self._names[proc.address] = proc.name
        for address, name in sorted(self._names.items()):
            kind = kinds.get(address)
            names.append(
                Name(
                    address=address,
                    name=name,
                    kind="import" if kind == "import" else "function" if kind == "local" else "label",
                    external=kind == "import",
                )
            )
        return Inventory(
            document=document,
            segments=tuple(segments),
            procedures=tuple(procedures),
            names=tuple(names),
            strings=tuple(strings),
        )

    def containing(self, address: int) -> Procedure | None:
        self.inventory()
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and self._procs[i].address <= address < self._procs[i].end:
            return self._procs[i]
        return None

    def _kind_at(self, address: int) -> str | None:
        i = bisect.bisect_left(self._starts, address)
        if i < len(self._starts) and self._starts[i] == address:
            return self._procs[i].kind
        return None

    def _raw_detail(self, proc: Procedure) -> BridgeDetail:
        if proc.address not in self._raw:
            answer = self.call("procedure", {"address": proc.address})
            self._raw[proc.address] = decoded(answer, BridgeDetail, "procedure")
        return self._raw[proc.address]

    def detail(self, proc: Procedure) -> Detail:
        if proc.address in self._details:
            return self._details[proc.address]
        self.inventory()
        raw = self._raw_detail(proc)
        insns = raw.instructions
        by_address = {i.address: i for i in insns}
        blocks = []
        for b in raw.blocks:
            start, end = b.start, b.end
            successors = tuple(s for s in b.successors if s is not None)
            last = max((a for a in by_address if start <= a < end), default=None)
            info = by_address.get(last) if last is not None else None
            kinds = []
            for s in successors:
                if info is not None and info.conditional:
                    kinds.append("fallthrough" if s == end else "conditional")
                elif info is not None and info.unconditional:
                    kinds.append("jump")
                else:
                    kinds.append("fallthrough")
            blocks.append(
                Block(
                    start=start,
                    end=end,
                    instruction_count=b.count,
                    successors=successors,
                    edge_kinds=tuple(kinds),
                )
            )
        bodies = [(b.start, b.end) for b in blocks] or [(proc.address, proc.end)]
        instructions, outgoing = [], []
        for i in insns:
            src = i.address
            mnemonic = i.mnemonic.lower()
            instructions.append(
                Instruction(address=src, bytes=i.bytes, mnemonic=mnemonic, operands=", ".join(i.operands))
            )
            jump = i.conditional or i.unconditional
            for dst in i.references:
                inside = any(s <= dst < e for s, e in bodies)
                kind: ReferenceKind
                if _is_call(mnemonic):
                    kind = "call"
                elif jump:
                    if inside:
                        continue  # flow inside the procedure, not a reference
                    kind = "jump"
                else:
                    kind = "data"
                outgoing.append(
                    Reference(src=src, dst=dst, kind=kind, from_procedure=proc.address, to_name=self._names.get(dst))
                )
        calls = []
        for c in raw.callees:
            ctype, target = c.type, c.to
            if ctype == CALL_NONE:
                continue
            if ctype == CALL_UNKNOWN or target is None:
                calls.append(CallSite(insn=c.source, target=None, name=None, kind="indirect"))
                continue
            how = "import" if self._kind_at(target) == "import" else ("indirect" if ctype == CALL_OBJC else "direct")
            calls.append(CallSite(insn=c.source, target=target, name=self._names.get(target), kind=how))
        detail = Detail(
            blocks=tuple(blocks), instructions=tuple(instructions), outgoing=tuple(outgoing), calls=tuple(calls)
        )
        self._details[proc.address] = detail
        return detail

    def incoming(self, address: int) -> list[Reference]:
        out = []
        for src in decoded(self.call("references_to", {"address": address}), list[int], "references_to"):
            owner = self.containing(src)
            kind: ReferenceKind = "data"
            if owner is not None:
                insn = next((i for i in self._raw_detail(owner).instructions if i.address == src), None)
                if insn is not None:
                    mnemonic = insn.mnemonic.lower()
                    kind = (
                        "call" if _is_call(mnemonic) else "jump" if (insn.conditional or insn.unconditional) else "data"
                    )
            out.append(
                Reference(
                    src=src,
                    dst=address,
                    kind=kind,
                    from_procedure=None if owner is None else owner.address,
                    to_name=self._names.get(address),
                )
            )
        return out

    def pseudo_code(self, procedure: Procedure, timeout_s: int) -> str:
        from rea.plugin import ReaError

        text = decoded(self.call("decompile", {"address": procedure.address}), BridgeText, "decompile").text
        if not text:
            raise ReaError(
                "execution_failure",
                f"Hopper's decompiler produced no code for {procedure.name}",
                remediation="Read procedure_assembly for this procedure instead.",
                details={"procedure": hex(procedure.address), "reason": "no_output"},
            )
        return str(text)
