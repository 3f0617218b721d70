"""Function-level operations over radare2's analysis: blocks, instructions, calls, references, pseudo-C."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections import defaultdict
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import CalleeItem
from rea.plugin import CallerItem
from rea.plugin import InsnRow
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import ReferenceKind
from rea.plugin import SentReferenceItem
from rea.plugin import XrefItem
from rea.plugin import answers
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import callgraph
from rea_plugins.radare2.engine import integer
from rea_plugins.radare2.engine import list_of
from rea_plugins.radare2.facts import Indirect
from rea_plugins.radare2.facts import Symbolizer
from rea_plugins.radare2.options import PSEUDO_CODE
from rea_plugins.radare2.program import MAX_BLOCK_BYTES
from rea_plugins.radare2.program import Proc
from rea_plugins.radare2.program import Program
from rea_plugins.radare2.rows import CalleeKind
from rea_plugins.radare2.types import Applied

MAX_ASSEMBLY_INSTRUCTIONS = 20_000
CACHED_FUNCTIONS = 256
# radare2's instruction types (RAnalOp type names).
CALLS = frozenset({"call", "ucall", "rcall", "icall", "ircall", "ccall", "uccall"})
DIRECT_CALLS = frozenset({"call", "ccall"})
DIRECT_JUMPS = frozenset({"jmp", "cjmp"})
INDIRECT_JUMPS = frozenset({"ujmp", "rjmp", "ijmp", "irjmp", "mjmp", "ucjmp"})
_CONVENTIONS = {
    "amd64": "sysv",
    "ms": "ms-x64",
    "arm64": "aapcs64",
    "arm32": "aapcs",
    "arm16": "aapcs",
    "cdecl": "cdecl",
    "stdcall": "stdcall",
    "fastcall": "fastcall",
    "thiscall": "thiscall",
}


# What one instruction calls: (address, name, kind); the address is None for a computed target.
Callee = tuple[int | None, str | None, CalleeKind]


class Incoming(msgspec.Struct, frozen=True):
    """One radare2 reference to an address (``axtj``): its source, the contract's kind, the procedure it is in and
    the source instruction's text."""

    src: int
    kind: ReferenceKind
    proc: Proc | None
    opcode: str


class Insn:
    """One decoded instruction as radare2 reports it (``pDj``)."""

    __slots__ = (
        "addr",
        "bytes",
        "jump",
        "kind",
        "mnemonic",
        "operands",
        "ptr",
        "refptr",
        "refs",
        "symbolized",
        "symbols",
        "text",
    )

    def __init__(self, item: JSONObject) -> None:
        # One instruction of radare2's ``pDj``/``pdj`` JSON (its ``offset`` checked an integer by the caller).
        self.addr = integer(item.get("offset")) or 0
        self.kind = str(item.get("type") or "")
        self.text = str(item.get("opcode") or ("invalid" if self.kind == "invalid" else ""))
        mnemonic, _, operands = self.text.partition(" ")
        self.mnemonic, self.operands = mnemonic, operands.strip()
        self.bytes = str(item.get("bytes") or "")
        self.jump = integer(item.get("jump"))
        self.ptr = integer(item.get("ptr"))
        self.refptr = bool(item.get("refptr"))
        self.refs = [
            (addr, str(r.get("type") or ""), str(r.get("perm") or ""))
            for r in list_of(item.get("refs"))
            if (addr := integer(r.get("addr"))) is not None
        ]
        self.symbolized: str | None = None
        self.symbols: list[JSONObject] | None = None

    def item(self) -> InsnRow:
        return InsnRow(
            address=hex(self.addr),
            bytes=self.bytes,
            mnemonic=self.mnemonic,
            operands=self.operands,
            text=self.text,
            symbolized=self.symbolized,
            symbols=self.symbols,
        )

    def symbolize(self, symbolizer: Symbolizer, pages: dict[str, int]) -> None:
        self.symbolized, self.symbols = symbolizer.annotate(
            self.mnemonic, self.operands, self.kind, self.jump, self.ptr, pages
        )


class Code:
    """The function-level operations of one analysed Program."""

    def __init__(self, program: Program) -> None:
        self.p = program
        self._insns: OrderedDict[int, list[Insn]] = OrderedDict()
        # radare2's whole reference list (axj), built on first use: targets, and sources with their targets.
        self._targets: list[int] | None = None
        self._sources: list[int] = []
        self.symbolizer = Symbolizer(program)
        self.indirect = Indirect(program)
        self.types = Applied()

    # -- instructions --------------------------------------------------------------------

    def instructions(self, f: Proc) -> list[Insn]:
        """Every instruction of ``f``'s blocks, by address; a bounded cache keeps recent procedures."""
        cached = self._insns.get(f.addr)
        if cached is not None:
            self._insns.move_to_end(f.addr)
            return cached
        seen: dict[int, Insn] = {}
        for start, size, *_ in f.blocks:
            for item in list_of(self.p.core.cmdj(f"pDj {min(size, MAX_BLOCK_BYTES)} @ {start}")):
                at = integer(item.get("offset"))
                if at is not None and at not in seen:
                    seen[at] = Insn(item)
        insns = [seen[a] for a in sorted(seen)]
        starts = {b[0] for b in f.blocks}
        pages: dict[str, int] = {}  # arm64 registers holding an adrp page, within a block
        for insn in insns:
            if insn.addr in starts:
                pages = {}
            insn.symbolize(self.symbolizer, pages)
        self._insns[f.addr] = insns
        if len(self._insns) > CACHED_FUNCTIONS:
            self._insns.popitem(last=False)
        return insns

    def kind_of(self, ref_type: str, perm: str, insn_kind: str, text: str, target: int | None) -> ReferenceKind:
        """The contract's reference kind of one radare2 reference, from its type and the source instruction."""
        mnemonic, _, operands = text.partition(" ")
        through_slot = target is not None and target in self.p.import_slots
        if ref_type == "CALL":
            return "external" if through_slot and "[" in operands else "call"
        if ref_type == "CODE":
            if insn_kind in INDIRECT_JUMPS or (not insn_kind and "[" in operands):
                return "external" if through_slot else "computed"
            return "jump"
        if "w" in perm:
            return "write"
        if mnemonic == "lea" or mnemonic.startswith("adr") or "[" not in operands:
            return "data"
        return "read"

    # -- operations ----------------------------------------------------------------------

    def info(self, params: Arguments) -> tuple[Any, Any]:
        p = self.p
        f = p.select(params)
        convention = _CONVENTIONS.get(f.calltype or "") if f.kind != "import" else None
        if convention is None and f.kind == "local":
            convention = answers.DEFAULT_ABI.get((p.format, p.arch))
        result = {
            "address": hex(f.addr),
            "name": f.name,
            "size": f.size,
            "kind": f.kind,
            "end": hex(f.end),
            "section": p.section_of(f.addr),
            "basic_block_count": len(f.blocks),
            "instruction_count": f.ninstrs,
            "signature": f.signature,
            "calling_convention": convention,
        }
        return result, {"radare2_name": f.r2name, "calltype": f.calltype}

    def blocks(self, params: Arguments) -> tuple[Any, Any]:
        f = self.p.select(params)
        blocks, edges = [], []
        for start, size, count, jump, fail, cases in f.blocks:
            end = start + size
            successors: list[int] = []
            if jump is not None:
                kind = "conditional" if fail is not None else ("fallthrough" if jump == end else "jump")
                edges.append({"from": hex(start), "to": hex(jump), "kind": kind})
                successors.append(jump)
            if fail is not None:
                edges.append({"from": hex(start), "to": hex(fail), "kind": "fallthrough"})
                successors.append(fail)
            for case in cases:
                if case not in successors:
                    edges.append({"from": hex(start), "to": hex(case), "kind": "jump"})
                    successors.append(case)
            blocks.append(
                {
                    "start": hex(start),
                    "end": hex(end),
                    "instruction_count": count,
                    "successors": [hex(s) for s in successors],
                }
            )
        return {"address": hex(f.addr), "name": f.name, "blocks": blocks, "edges": edges}, None

    def assembly(self, params: Arguments) -> tuple[Any, Any]:
        f = self.p.select(params)
        cap = answers.int_param(params, "max_instructions", MAX_ASSEMBLY_INSTRUCTIONS, 1, MAX_ASSEMBLY_INSTRUCTIONS)
        insns = self.instructions(f)
        return {
            "address": hex(f.addr),
            "name": f.name,
            "instructions": [i.item() for i in insns[:cap]],
            "truncated": len(insns) > cap,
        }, None

    def read_instructions(self, params: Arguments) -> tuple[Any, Any]:
        f = self.p.select(params)
        result = answers.page("instructions", self.instructions(f), params, Insn.item)
        return {"address": hex(f.addr), "name": f.name, **result}, None

    def _call_targets(self, f: Proc, insn: Insn) -> list[Callee]:
        """What one instruction calls: (address, name, kind) entries; tail jumps count, switch jumps do not."""
        p = self.p
        if insn.kind in CALLS:
            if insn.kind in DIRECT_CALLS and insn.jump is not None:
                return [self._callee(insn.jump)]
            slot = self._import_slot(insn)
            if slot is not None:
                return [self._slot_callee(slot)]
            return [(None, None, "indirect"), *self._table_callees(f, insn)]
        if insn.kind in DIRECT_JUMPS and insn.jump is not None and insn.jump != f.addr and insn.jump in p.by_addr:
            return [self._callee(insn.jump)]
        if insn.kind in INDIRECT_JUMPS:
            slot = self._import_slot(insn)
            if slot is not None:
                return [self._slot_callee(slot)]
            site = self.indirect.sites(f, self.instructions(f)).get(insn.addr)
            # A resolved jump table is control flow inside the procedure; any other indirect jump leaves it
            # for a target only known at run time (and the targets of its pointer table, where resolved).
            if site is not None and site.kind != "jump-table":
                return [(None, None, "indirect"), *self._table_callees(f, insn)]
        return []

    def _import_slot(self, insn: Insn) -> int | None:
        """The import slot ``insn`` calls or jumps through (its pointer, else one it references), if any."""
        slots = self.p.import_slots
        return insn.ptr if insn.ptr in slots else next((a for a, _, _ in insn.refs if a in slots), None)

    def _table_callees(self, f: Proc, insn: Insn) -> list[Callee]:
        site = self.indirect.sites(f, self.instructions(f)).get(insn.addr)
        if site is None or site.kind != "pointer-table":
            return []
        return [(t, self.p.name_at(t), "indirect") for t in site.targets]

    def _callee(self, target: int) -> Callee:
        q = self.p.by_addr.get(target)
        if q is None:
            return target, self.p.name_at(target), "direct"
        return target, q.name, "import" if q.kind in ("import", "thunk") else "direct"

    def _slot_callee(self, slot: int) -> Callee:
        name = self.p.import_slots[slot]
        return self.p.imports.get(name, slot), name, "import"

    def callees(self, params: Arguments) -> tuple[Any, Any]:
        f = self.p.select(params)
        return {"procedure": f.ref(), "callees": self._callees(f)}, None

    def _callees(self, f: Proc) -> list[CalleeItem]:
        groups: dict[Callee, set[int]] = defaultdict(set)
        for insn in self.code_of(f):
            for target in self._call_targets(f, insn):
                groups[target].add(insn.addr)
        ordered = sorted(groups.items(), key=lambda g: (g[0][0] is None, g[0][0] or 0, g[0][2], min(g[1])))
        return [
            CalleeItem(address=answers.hexa(a), name=n, kind=k, call_sites=[hex(s) for s in sorted(sites)])
            for (a, n, k), sites in ordered
        ]

    def program_call_graph(self, params: Arguments) -> tuple[Any, Any]:
        """Every procedure's callees as one paged edge list (the same items ``callees`` answers)."""
        callgraph.check(params)
        edges = []
        for f in self.p.procs:
            edges.extend(callgraph.edges_of(f.addr, [msgspec.structs.asdict(c) for c in self._callees(f)]))
        names = {f.addr: f.name for f in self.p.procs}
        return callgraph.answer(edges, names, len(self.p.procs), params), None

    def _incoming(self, addr: int) -> list[Incoming]:
        """radare2's references to ``addr`` (``axtj``), with the contract's kind and source procedure."""
        p = self.p
        out = []
        for x in list_of(p.core.cmdj(f"axtj @ {addr}")):
            src = integer(x.get("from"))
            if src is None:
                continue
            kind = self.kind_of(str(x.get("type")), str(x.get("perm") or ""), "", str(x.get("opcode") or ""), addr)
            owner = integer(x.get("fcn_addr"))
            proc = p.by_addr.get(owner) if owner is not None else None
            proc = proc or p.containing(src)
            out.append(Incoming(src, kind, proc, str(x.get("opcode") or "")))
        have = {(r.src, r.kind) for r in out}
        for slot in self.indirect.slots_to(addr):
            if (slot, "data") not in have:
                out.append(Incoming(slot, "data", p.containing(slot), ""))
        out.sort(key=lambda r: (r.src, r.kind))
        return out

    def callers(self, params: Arguments) -> tuple[Any, Any]:
        p = self.p
        f = p.select(params)
        by_caller: dict[int, set[int]] = defaultdict(set)
        outside: set[int] = set()
        for r in self._incoming(f.addr):
            caller = r.proc
            operands = r.opcode.partition(" ")[2]
            tail = r.kind == "jump" and caller is not None and caller.addr != f.addr and "[" not in operands
            through_slot = r.kind == "external" and f.addr in p.import_slots
            if r.kind == "call" or tail or through_slot:
                # A call from code radare2 put in no function has no caller to name: the raw result keeps it.
                (outside if caller is None else by_caller[caller.addr]).add(r.src)
        callers = [
            CallerItem(address=hex(addr), name=p.by_addr[addr].name, call_sites=[hex(s) for s in sorted(sites)])
            for addr, sites in sorted(by_caller.items())
        ]
        raw = {"call_sites_outside_procedures": [hex(s) for s in sorted(outside)]}
        return {"procedure": f.ref(), "callers": callers}, raw

    def _outgoing(self, f: Proc) -> list[SentReferenceItem]:
        p = self.p
        refs: dict[tuple[int, int | None, str], SentReferenceItem] = {}

        def add(src: int, dst: int | None, kind: ReferenceKind) -> None:
            refs.setdefault(
                (src, dst, kind),
                SentReferenceItem(
                    source=hex(src),
                    to=answers.hexa(dst),
                    kind=kind,
                    from_procedure=hex(f.addr),
                    to_name=None if dst is None else p.name_at(dst),
                ),
            )

        sites = self.indirect.sites(f, self.instructions(f))
        for insn in self.code_of(f):
            site = sites.get(insn.addr)
            resolved = site is not None and site.kind == "jump-table"
            for t in site.targets if site is not None else ():
                add(
                    insn.addr,
                    t,
                    "computed"
                    if site is not None and site.kind == "jump-table"
                    else "call"
                    if insn.kind in CALLS
                    else "jump",
                )
            for dst, ref_type, perm in insn.refs:
                if ref_type in ("CALL", "CODE"):
                    if dst == 0 or not p.mapped(dst):
                        continue
                elif not p.mapped(dst):
                    continue  # an immediate radare2 took for an address: no section holds it
                kind = self.kind_of(ref_type, perm, insn.kind, insn.text, dst)
                add(insn.addr, dst, kind)
                if kind == "external":
                    name = p.import_slots[dst]
                    add(insn.addr, p.imports.get(name, dst), "call" if insn.kind in CALLS else "jump")
                resolved = resolved or ref_type in ("CALL", "CODE")
            if not resolved and (insn.kind in CALLS or insn.kind in INDIRECT_JUMPS) and insn.jump is None:
                add(insn.addr, None, "indirect")
            elif not resolved and insn.jump is not None and (insn.kind in DIRECT_CALLS or insn.kind in DIRECT_JUMPS):
                add(insn.addr, insn.jump, "call" if insn.kind in CALLS else "jump")
        return [refs[k] for k in sorted(refs, key=lambda k: (k[0], k[1] is None, k[1] or 0, k[2]))]

    def references(self, params: Arguments) -> tuple[Any, Any]:
        p = self.p
        f = p.select(params)
        direction = arg_str(params, "direction") or "outgoing"
        if direction == "outgoing":
            refs = self._outgoing(f)
        elif direction == "incoming":
            targets = sorted({t for t in self._targets_in(f) if f.addr <= t < f.end})
            found: list[tuple[int, int, SentReferenceItem]] = []
            for t in targets:
                for r in self._incoming(t):
                    if r.proc is None or r.proc.addr != f.addr:
                        row = SentReferenceItem(
                            source=hex(r.src),
                            to=hex(t),
                            kind=r.kind,
                            from_procedure=None if r.proc is None else hex(r.proc.addr),
                            to_name=p.name_at(t),
                        )
                        found.append((r.src, t, row))
            refs = [row for _, _, row in sorted(found, key=lambda x: (x[0], x[1], x[2].kind))]
        else:
            raise answers.bad("direction", "direction must be 'incoming' or 'outgoing'")
        result = answers.page("references", refs, params, _same)
        return {"procedure": f.ref(), "direction": direction, **result}, None

    def _targets_in(self, f: Proc) -> list[int]:
        """Addresses in ``f``'s extent that radare2 records references to."""
        index = self._reference_index()
        return index[bisect.bisect_left(index, f.addr) : bisect.bisect_left(index, f.end)]

    def _reference_index(self) -> list[int]:
        if self._targets is None:
            targets: set[int] = set()
            sources: set[int] = set()
            for x in list_of(self.p.core.cmdj("axj")):
                src, dst = integer(x.get("from")), integer(x.get("addr"))
                if src is not None and dst is not None:
                    targets.add(dst)
                    sources.add(src)
            targets.update(self.indirect.pointed())
            self._targets, self._sources = sorted(targets), sorted(sources)
        return self._targets

    def unreached(self, f: Proc) -> list[Insn]:
        """Instructions in ``f``'s extent that radare2 found references from (its linear reference pass) but
        did not put in any block of ``f``: code behind a jump table it could not resolve."""
        self._reference_index()
        covered = {i.addr for i in self.instructions(f)}
        lo, hi = bisect.bisect_left(self._sources, f.addr), bisect.bisect_left(self._sources, f.end)
        out = []
        for src in self._sources[lo:hi]:
            if src in covered or self.p.containing(src) is not f:
                continue
            item = list_of(self.p.core.cmdj(f"pdj 1 @ {src}"))
            if item and integer(item[0].get("offset")) == src:
                out.append(Insn(item[0]))
        return out

    def code_of(self, f: Proc) -> list[Insn]:
        """``f``'s instructions for calls and references: its blocks', then those of its unreached code."""
        return self.instructions(f) + self.unreached(f)

    def xrefs(self, params: Arguments) -> tuple[Any, Any]:
        p = self.p
        p.require_analysis()
        at = answers.parse_address(params.get("address"))
        refs = [
            XrefItem(
                source=hex(r.src),
                from_procedure=None if r.proc is None else hex(r.proc.addr),
                kind=r.kind,
                to=hex(at),
            )
            for r in self._incoming(at)
        ]
        return {"address": hex(at), "references": refs}, None

    def pseudo_code(self, params: Arguments) -> tuple[Any, Any]:
        f = self.p.select(params)
        if f.kind == "import" and not f.blocks:
            raise ReaError(
                "invalid_request",
                f"{f.name} is an import: it has no code in this binary",
                details={
                    "issues": [
                        {"path": "procedure", "reason": "invalid_value", "message": "an import has no code here"}
                    ]
                },
            )
        # The analyst's types and prototypes first (radare2 keeps them; a new set replaces them).
        problems = self.types.apply(self.p.core, arg_object(params, "types"))
        text = self.p.core.cmd(f"pdc @ {f.addr}")
        if not text.strip():
            raise ReaError(
                "execution_failure",
                f"radare2's pdc produced no pseudo-C for {f.name}",
                remediation="Read procedure_assembly for this procedure instead.",
                details={"procedure": hex(f.addr), "reason": "no_output"},
            )
        return {
            "address": hex(f.addr),
            "name": f.name,
            "language": "c",
            "text": self.p.in_rea_names(text),
            "decompiler": "radare2-pdc",
            "dialect": PSEUDO_CODE["dialect"],
        }, {"command": "pdc", **({"user_types": {"problems": problems}} if self.types.key else {})}


def _same(row: SentReferenceItem) -> SentReferenceItem:
    return row
