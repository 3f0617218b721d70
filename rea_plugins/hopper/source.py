"""Hopper's document as rea's records (``rea.operations.records``), read through the bridge.

The bridge answers raw facts (labels, procedures with their blocks and instructions, references); what they
mean in the contract (kinds, imports, reference kinds) is decided here, where it is tested without Hopper.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from rea.plugin import (
    Block,
    CallSite,
    Detail,
    Document,
    Instruction,
    Inventory,
    Name,
    Procedure,
    Reference,
    Segment,
    String,
    Target,
)

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

Call = Callable[[str, dict[str, Any]], Any]


def import_name(name: str) -> str:
    """The imported symbol a Hopper stub name stands for."""
    for prefix in _STUB_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


def _is_call(mnemonic: str) -> bool:
    return mnemonic.lower().split(".")[0] in _CALLS


class HopperSource:
    """A ``model.Source`` whose facts come from one bridge session (``call`` sends one request)."""

    def __init__(self, target: Target, call: Call) -> None:
        self.target = target
        self.call = call
        self._inventory: Inventory | None = None
        self._details: dict[int, Detail] = {}
        self._raw: dict[int, dict[str, Any]] = {}
        self._starts: list[int] = []
        self._procs: list[Procedure] = []
        self._names: dict[int, str] = {}

    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = self._read()
        return self._inventory

    def _pages(self, method: str, segment: int, total: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while len(items) < total:
            page = self.call(method, {"segment": segment, "offset": len(items)})
            if not page:
                break
            items.extend(page)
        return items

    def _read(self) -> Inventory:
        doc = self.call("document", {})
        t = self.target
        document = Document(
            name=t.name,
            format=t.format,
            architecture=t.architecture or "unknown",
            sha256=t.sha256,
            entry=doc.get("entry"),
            bits=64 if doc.get("bits64") else 32,
            endianness="little",
            engine_format="hopper",
            language=str(doc.get("name", "")),
        )
        segments: list[Segment] = []
        procedures: list[Procedure] = []
        names: list[Name] = []
        strings: list[String] = []
        for index, seg in enumerate(doc.get("segments", [])):
            start, length, offset = int(seg["start"]), int(seg["length"]), seg.get("file_offset")
            file_offset = int(offset) if isinstance(offset, int) and offset >= 0 else None
            segments.append(
                Segment(
                    name=str(seg["name"]),
                    start=start,
                    end=start + length,
                    permissions=UNKNOWN_PERMISSIONS,
                    file_offset=file_offset,
                    file_size=length if file_offset is not None else 0,
                    kind="segment",
                )
            )
            for sec in seg.get("sections", []):
                s_start, s_len = int(sec["start"]), int(sec["length"])
                s_offset = None if file_offset is None else file_offset + (s_start - start)
                segments.append(
                    Segment(
                        name=str(sec["name"]),
                        start=s_start,
                        end=s_start + s_len,
                        permissions=UNKNOWN_PERMISSIONS,
                        file_offset=s_offset,
                        file_size=s_len if s_offset is not None else 0,
                        kind="section",
                    )
                )
            for p in self._pages("procedures", index, int(seg.get("procedures", 0))):
                address = int(p["address"])
                section = p.get("section")
                stub = section in STUB_SECTIONS
                name = str(p.get("name") or f"sub_{address:x}")
                procedures.append(
                    Procedure(
                        address=address,
                        name=import_name(name) if stub else name,
                        end=int(p["end"]),
                        kind="import" if stub else "local",
                        section=section,
                        signature=p.get("signature") or None,
                        thunk_of=import_name(name) if stub else None,
                    )
                )
            for s in self._pages("strings", index, int(seg.get("strings", 0))):
                value = str(s["value"])
                wide = bool(s.get("unicode"))
                encoding = "utf-16le" if wide else "ascii" if value.isascii() else "utf-8"
                strings.append(
                    String(
                        address=int(s["address"]),
                        value=value,
                        encoding=encoding,
                        byte_length=len(value.encode("utf-16le" if wide else "utf-8")),
                        section=s.get("section"),
                    )
                )
            # Labels have no count of their own in the document summary: page until a short page.
            offset = 0
            while True:
                page = self.call("names", {"segment": index, "offset": offset})
                for n in page:
                    self._names.setdefault(int(n["address"]), str(n["name"]))
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

    def _raw_detail(self, proc: Procedure) -> dict[str, Any]:
        if proc.address not in self._raw:
            self._raw[proc.address] = self.call("procedure", {"address": proc.address})
        return self._raw[proc.address]

    def detail(self, proc: Procedure) -> Detail:
        if proc.address in self._details:
            return self._details[proc.address]
        self.inventory()
        raw = self._raw_detail(proc)
        insns = raw.get("instructions", [])
        by_address = {int(i["address"]): i for i in insns}
        blocks = []
        for b in raw.get("blocks", []):
            start, end = int(b["start"]), int(b["end"])
            successors = tuple(int(s) for s in b.get("successors", []) if s is not None)
            last = max((a for a in by_address if start <= a < end), default=None)
            info = by_address.get(last) if last is not None else None
            kinds = []
            for s in successors:
                if info is not None and info.get("conditional"):
                    kinds.append("fallthrough" if s == end else "conditional")
                elif info is not None and info.get("unconditional"):
                    kinds.append("jump")
                else:
                    kinds.append("fallthrough")
            blocks.append(
                Block(
                    start=start,
                    end=end,
                    instruction_count=int(b.get("count", 0)),
                    successors=successors,
                    edge_kinds=tuple(kinds),
                )
            )
        bodies = [(b.start, b.end) for b in blocks] or [(proc.address, proc.end)]
        instructions, outgoing = [], []
        for i in insns:
            src = int(i["address"])
            mnemonic = str(i["mnemonic"]).lower()
            instructions.append(
                Instruction(
                    address=src,
                    bytes=str(i.get("bytes", "")),
                    mnemonic=mnemonic,
                    operands=", ".join(str(o) for o in i.get("operands", [])),
                )
            )
            jump = bool(i.get("conditional") or i.get("unconditional"))
            for dst in i.get("references", []):
                dst = int(dst)
                inside = any(s <= dst < e for s, e in bodies)
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
        for c in raw.get("callees", []):
            ctype, target = int(c.get("type", CALL_NONE)), c.get("to")
            if ctype == CALL_NONE:
                continue
            if ctype == CALL_UNKNOWN or target is None:
                calls.append(CallSite(insn=int(c["from"]), target=None, name=None, kind="indirect"))
                continue
            target = int(target)
            kind = "import" if self._kind_at(target) == "import" else ("indirect" if ctype == CALL_OBJC else "direct")
            calls.append(CallSite(insn=int(c["from"]), target=target, name=self._names.get(target), kind=kind))
        detail = Detail(
            blocks=tuple(blocks), instructions=tuple(instructions), outgoing=tuple(outgoing), calls=tuple(calls)
        )
        self._details[proc.address] = detail
        return detail

    def incoming(self, address: int) -> list[Reference]:
        out = []
        for src in self.call("references_to", {"address": address}):
            src = int(src)
            owner = self.containing(src)
            kind = "data"
            if owner is not None:
                insn = next(
                    (i for i in self._raw_detail(owner).get("instructions", []) if int(i["address"]) == src), None
                )
                if insn is not None:
                    mnemonic = str(insn["mnemonic"]).lower()
                    kind = (
                        "call"
                        if _is_call(mnemonic)
                        else "jump"
                        if (insn.get("conditional") or insn.get("unconditional"))
                        else "data"
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

        text = self.call("decompile", {"address": procedure.address}).get("text")
        if not text:
            raise ReaError(
                "execution_failure",
                f"Hopper's decompiler produced no code for {procedure.name}",
                remediation="Read procedure_assembly for this procedure instead.",
                details={"procedure": hex(procedure.address), "reason": "no_output"},
            )
        return str(text)
