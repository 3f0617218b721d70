"""Function-level operations over angr's CFG: blocks, instructions, calls, references, pseudo code."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import Arguments
from rea.plugin import CalleeItem
from rea.plugin import CallerItem
from rea.plugin import InsnRow
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import SentReferenceItem
from rea.plugin import XrefItem
from rea.plugin import answers
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import callgraph
from rea_plugins.angr import slots
from rea_plugins.angr import types
from rea_plugins.angr.insight import Symbolizer
from rea_plugins.angr.insight import operand_text
from rea_plugins.angr.model import UNRESOLVED
from rea_plugins.angr.model import Analysis
from rea_plugins.angr.model import imm_target

MAX_ASSEMBLY_INSTRUCTIONS = 20_000
_CC_NAMES = {
    "SimCCSystemVAMD64": "sysv",
    "SimCCMicrosoftAMD64": "ms-x64",
    "SimCCCdecl": "cdecl",
    "SimCCStdcall": "stdcall",
    "SimCCFastcall": "fastcall",
    "SimCCMicrosoftThiscall": "thiscall",
    "SimCCARM": "aapcs",
    "SimCCARMHF": "aapcs-vfp",
    "SimCCAArch64": "aapcs64",
}


ReferenceKind = Literal["call", "jump", "data", "read", "write", "indirect", "computed", "external"]
CalleeKind = Literal["direct", "tail", "import", "indirect"]


class UserTypes(Record):
    """The analyst's types as the decompiler took them: what angr refused is in ``problems``."""

    applied: bool
    problems: list[str]


class PseudoCodeRaw(Record):
    """angr's own facts of a decompilation: its address for the procedure, how far it mapped the image."""

    angr_address: str
    address_delta: str
    user_types: UserTypes | None = None


class Ref(msgspec.Struct, frozen=True):
    """One reference: angr addresses, or ``None`` where the target is unknown."""

    src: int
    dst: int | None
    kind: ReferenceKind
    from_proc: int | None
    to_name: str | None


class CallSite(msgspec.Struct, frozen=True, kw_only=True):
    caller: int
    insn: int
    # None stands for a target angr could not resolve.
    targets: tuple[int | None, ...]
    direct: bool
    # A jump to another procedure's start (a tail call), counted as a call by callers and callees.
    tail: bool = False
    # How an indirect site's targets were found: "pointer-table" (a bounded slot load through a table of
    # function pointers), "import" (through an import slot), "unresolved", or "" (a call's own resolution).
    via: str = ""


class CodeIndex:
    """Call sites and references of the whole binary, built once from the CFG."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.sites: list[CallSite] = []
        self.refs: list[Ref] = []
        # Indirect jumps that are not jump tables, and resolved jump tables (procedure, targets), by instruction.
        self.dispatch: dict[int, CallSite] = {}
        self.tables: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._build_calls()
        self._build_refs()
        self.out_by_proc: dict[int, list[Ref]] = defaultdict(list)
        self.in_by_addr: dict[int, list[Ref]] = defaultdict(list)
        for r in sorted(self.refs, key=_ref_order):
            if r.from_proc is not None:
                self.out_by_proc[r.from_proc].append(r)
            if r.dst is not None:
                self.in_by_addr[r.dst].append(r)
        self.sites_of: dict[int, list[CallSite]] = defaultdict(list)  # by calling procedure, in site order
        self.callers_of: dict[int, list[CallSite]] = defaultdict(list)
        for s in self.sites:
            self.sites_of[s.caller].append(s)
            for t in s.targets:
                if t is not None:
                    self.callers_of[t].append(s)

    def _node(self, addr: int) -> Any:
        return self.a.cfg.model.get_any_node(addr)

    def _target_name(self, addr: int) -> str | None:
        f = self.a.known.get(addr)
        return None if f is None else self.a.fname(f)

    def _resolved(self, addr: int | None) -> bool:
        return addr is not None and self._target_name(addr) not in UNRESOLVED

    def _decode(self, addr: int) -> Any | None:
        """One capstone instruction at ``addr`` (capstone detail on), or None where nothing decodes."""
        try:
            code = self.a.proj.loader.memory.load(addr, 16)
        except KeyError:
            return None
        insns = list(self.a.arch.capstone.disasm(code, addr, 1))
        return insns[0] if insns else None

    def _nodes(self, f: Any) -> list[Any]:
        # A part (``f.cold``) that jumps back into its parent has the parent's blocks in its graph too: only
        # blocks inside its extent are its own.
        end = self.a.func_end(f)
        blocks = {b for g in self.a.members(f) for b in g.block_addrs_set if b < end or b == f.addr}
        nodes = (self._node(b) for b in sorted(blocks))
        return [n for n in nodes if n is not None and n.instruction_addrs]

    def _call_edges(self, f: Any) -> dict[int, tuple[int | None, set[int]]]:
        """Call blocks of procedure ``f``: block address -> (call instruction, target addresses).

        Read from the function graphs' call edges: angr's per-function call-site table is not kept when
        the function manager spills a function to disk (past ~1000 functions), its graph is.
        """
        calls: dict[int, tuple[int | None, set[int]]] = {}
        end = self.a.func_end(f)
        for g in self.a.members(f):
            for src, dst, data in g.transition_graph.edges(data=True):
                if data.get("type") != "call" or (src.addr >= end and src.addr != f.addr):
                    continue
                ins, targets = calls.setdefault(src.addr, (data.get("ins_addr"), set()))
                targets.add(dst.addr)
                if ins is None and data.get("ins_addr") is not None:
                    calls[src.addr] = (data["ins_addr"], targets)
        return calls

    def _build_calls(self) -> None:
        a, graph = self.a, self.a.cfg.graph
        for f in a.funcs:
            if f.is_plt:
                continue
            for block, (insn_addr, targets) in sorted(self._call_edges(f).items()):
                if insn_addr is None:
                    node = self._node(block)
                    if node is None or not node.instruction_addrs:
                        continue
                    insn_addr = node.instruction_addrs[-1]
                resolved: list[int | None] = [t for t in sorted(targets) if self._resolved(t)]
                insn = self._decode(insn_addr)
                direct = insn is not None and imm_target(insn) is not None
                self.sites.append(
                    CallSite(caller=f.addr, insn=insn_addr, targets=tuple(resolved or [None]), direct=direct)
                )
            # A jump to another procedure's start is a tail call: callers and callees count it.
            for node in self._nodes(f):
                edges, last = _jumps_from(graph, node)
                if last is None:
                    continue
                insn = self._decode(last)
                if insn is not None and _is_jump(insn) and imm_target(insn) is None:
                    self._dispatch(f, last, [d.addr for d, _ in edges])
                    continue
                for d, data in edges:
                    if d.addr == f.addr or d.addr not in a.by_addr:
                        continue
                    src = data.get("ins_addr") or node.instruction_addrs[-1]
                    insn = self._decode(src)
                    self.sites.append(
                        CallSite(
                            caller=f.addr,
                            insn=src,
                            targets=(d.addr,),
                            tail=True,
                            direct=insn is not None and imm_target(insn) is not None,
                        )
                    )

    def _dispatch(self, f: Any, src: int, dsts: list[int]) -> None:
        """An indirect jump of ``f``: a jump table (targets inside ``f``: not a call), else an indirect site."""
        a = self.a
        targets = sorted({t for t in dsts if self._resolved(t)})
        outside = [t for t in targets if t in a.by_addr and t != f.addr]
        external = [t for t in targets if not a.main.contains_addr(t)]
        if targets and len(outside) == len(targets):
            site = CallSite(
                caller=f.addr, insn=src, targets=tuple(outside), direct=False, tail=True, via="pointer-table"
            )
        elif targets and len(external) == len(targets):
            site = CallSite(caller=f.addr, insn=src, targets=tuple(external), direct=False, tail=True, via="import")
        elif not targets:
            site = CallSite(caller=f.addr, insn=src, targets=(None,), direct=False, tail=True, via="unresolved")
        else:
            self.tables[src] = (f.addr, tuple(t for t in targets if a.main.contains_addr(t)))
            return
        self.sites.append(site)
        self.dispatch[src] = site

    def _access_kind(self, ins: int) -> ReferenceKind:
        # CFGFast's data references say where an instruction points, not how it uses the memory there; the
        # operand's access flags (capstone detail) tell read from write at the cost of one decode.
        insn = self._decode(ins)
        return "data" if insn is None else _access(insn)

    def _emit(self, src: int, dst: int | None, kind: ReferenceKind, proc: int | None) -> None:
        a = self.a
        if dst is None or a.main.contains_addr(dst):
            self.refs.append(Ref(src, dst, kind, proc, None if dst is None else a.name_at(dst)))
            self._seen.add((src, dst))
            return
        # A SimProcedure in cle's extern object: the name is real, its address is angr's invention. The
        # reference reads the import's slot and reaches the import procedure (PLT stub, else the slot).
        name = self._target_name(dst)
        slot, stub = a.import_slot(name), a.import_stub(name)
        if slot is not None:
            self.refs.append(Ref(src, slot, "external", proc, name))
            self._seen.add((src, slot))
        if stub is not None or slot is not None:
            self.refs.append(Ref(src, stub if stub is not None else slot, kind, proc, name))
        else:
            self.refs.append(Ref(src, None, "external", proc, name))

    def _build_refs(self) -> None:
        a = self.a
        self._seen: set[tuple[int, int | None]] = set()
        for s in self.sites:
            if s.tail:
                continue  # the jump pass below records tail calls as jumps
            # A computed call keeps an explicit unknown target besides whatever angr's resolvers found.
            targets = s.targets if s.direct else (None, *(t for t in s.targets if t is not None))
            for t in targets:
                self._emit(s.insn, t, "call" if t is not None else "indirect", s.caller)
        graph = a.cfg.graph
        for f in a.funcs:
            if f.is_plt:
                continue
            members = {g.addr for g in a.members(f)}
            for node in self._nodes(f):
                edges, src = _jumps_from(graph, node)
                if src is None:
                    continue
                site = self.dispatch.get(src)
                if site is not None:
                    # A dispatch through a table of function pointers (or an import slot): each target it
                    # reaches, and the unknown target the instruction computes at run time.
                    for t in site.targets:
                        if t is not None:
                            self._emit(src, t, "jump", f.addr)
                    self._emit(src, None, "indirect", f.addr)
                    continue
                insn = self._decode(src)
                computed = insn is not None and _is_jump(insn) and imm_target(insn) is None
                if computed:
                    resolved = sorted({d.addr for d, _ in edges if self._resolved(d.addr)})
                    for t in resolved:
                        self._emit(src, t, "computed" if a.main.contains_addr(t) else "jump", f.addr)
                    if not resolved:
                        self._emit(src, None, "indirect", f.addr)
                    continue
                for d, _ in edges:
                    if d.function_address not in members and self._resolved(d.addr):
                        self._emit(src, d.addr, "jump", f.addr)
        kinds: dict[str, ReferenceKind] = {"read": "read", "write": "write"}
        for ins, xrefs in a.proj.kb.xrefs.xrefs_by_ins_addr.items():
            if ins is None:
                continue
            owner = None
            for x in xrefs:
                if not isinstance(x.dst, int) or not a.mapped(x.dst) or (ins, x.dst) in self._seen:
                    continue
                owner = owner or a.containing(ins)
                if owner is not None and owner.is_plt:
                    continue
                self._seen.add((ins, x.dst))
                kind = kinds.get(x.type_string) or self._access_kind(ins)
                self.refs.append(Ref(ins, x.dst, kind, None if owner is None else owner.addr, a.name_at(x.dst)))
        word = a.arch.bytes
        for d in a.cfg.memory_data.values():
            if d.sort != "pointer-array" or not a.mapped(d.addr):
                continue
            for slot in range(d.addr, d.addr + d.size - word + 1, word):
                value = a.proj.loader.memory.unpack_word(slot)
                if a.mapped(value) and (slot, value) not in self._seen:
                    self._seen.add((slot, value))
                    self.refs.append(Ref(slot, value, "data", None, a.name_at(value)))
        # Pointer slots in data: relocations, .init_array/.fini_array, and plain pointers of a fixed image.
        self.slots = slots.data_slots(a)
        for slot, value in self.slots.items():
            if (slot, value) not in self._seen:
                self._seen.add((slot, value))
                self.refs.append(Ref(slot, value, "data", None, a.name_at(value)))


def _jumps_from(graph: Any, node: Any) -> tuple[list[tuple[Any, Any]], int | None]:
    """A CFG node's plain jump edges (``Ijk_Boring``: successor and edge data), and the instruction they leave
    from (None without any)."""
    edges = [(d, data) for _, d, data in graph.out_edges(node, data=True) if data.get("jumpkind") == "Ijk_Boring"]
    if not edges:
        return edges, None
    return edges, int(edges[0][1].get("ins_addr") or node.instruction_addrs[-1])


def _is_jump(insn: Any) -> bool:
    import capstone

    try:
        return bool(insn.group(capstone.CS_GRP_JUMP)) and not insn.group(capstone.CS_GRP_CALL)
    except capstone.CsError:
        return False


def _access(insn: Any) -> ReferenceKind:
    """``read`` or ``write`` for an instruction whose memory operand is accessed that way, else ``data``."""
    import capstone

    try:
        if insn.mnemonic == "lea":
            return "data"
        for operand in insn.operands:
            if operand.type == capstone.CS_OP_MEM:
                if operand.access & capstone.CS_AC_WRITE:
                    return "write"
                if operand.access & capstone.CS_AC_READ:
                    return "read"
    except (capstone.CsError, AttributeError):
        pass
    return "data"


def _ref_order(r: Ref) -> tuple[int, int, str]:
    return (r.src, -1 if r.dst is None else r.dst, r.kind)


class Code:
    """The function-level operations; the index is built on first use."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self._index: CodeIndex | None = None
        self._insns: dict[int, list[InsnRow]] = {}
        # Pseudo code by (procedure, digest of the analyst's types it was decompiled with).
        self._pseudo: dict[tuple[int, str], str] = {}
        self.types = types.Applied()
        self.symbolizer = Symbolizer(a)

    @property
    def index(self) -> CodeIndex:
        if self._index is None:
            self._index = CodeIndex(self.a)
        return self._index

    def _blocks(self, f: Any) -> list[Any]:
        return [n for n, _ in self._member_nodes(f)]

    def _member_nodes(self, f: Any) -> list[tuple[Any, Any]]:
        """Each block of procedure ``f`` (fragments included) with the function graph it belongs to."""
        seen: dict[int, tuple[Any, Any]] = {}
        end = self.a.func_end(f)
        for g in self.a.members(f):
            graph = g.graph
            for n in graph.nodes():
                if n.addr < end or n.addr == f.addr:
                    seen.setdefault(n.addr, (n, graph))
        return [seen[k] for k in sorted(seen)]

    def instructions(self, f: Any) -> list[InsnRow]:
        if f.addr not in self._insns:
            seen: dict[int, InsnRow] = {}
            for node in self._blocks(f):
                pages: dict[int, int] = {}  # arm64 registers holding an adrp page, within the block
                for i in self.a.proj.factory.block(node.addr, size=node.size).capstone.insns:
                    if i.address not in seen:
                        operands = operand_text(self.a, i)
                        symbolized, symbols = self.symbolizer.annotate(i, pages)
                        seen[i.address] = InsnRow(
                            address=self.a.out(i.address),
                            bytes=bytes(i.insn.bytes).hex(),
                            mnemonic=i.mnemonic,
                            operands=operands,
                            text=f"{i.mnemonic} {operands}".strip(),
                            symbolized=symbolized,
                            symbols=symbols,
                        )
            self._insns[f.addr] = [seen[k] for k in sorted(seen)]
        return self._insns[f.addr]

    def info(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        f = a.select(params)
        end = a.func_end(f)
        # Without a calling-convention analysis angr's default for the architecture and OS applies.
        conv = (
            f.calling_convention
            if f.calling_convention is not None
            else (a.proj.factory.cc() if a.func_kind(f) == "local" else None)
        )
        cc = None if conv is None else _CC_NAMES.get(type(conv).__name__, type(conv).__name__)
        if cc == "aapcs64" and a.format == "mach-o":
            cc = "darwin-aapcs64"
        result = {
            "address": a.out(f.addr),
            "name": a.fname(f),
            "size": end - f.addr,
            "end": a.out(end),
            "kind": a.func_kind(f),
            "section": a.section_of(f.addr),
            "basic_block_count": len(self._blocks(f)),
            "instruction_count": len(self.instructions(f)),
            "signature": None if f.prototype is None else str(f.prototype),
            "calling_convention": cc,
        }
        return result, a.proc_raw(f)

    def blocks(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        f = a.select(params)
        blocks, edges = [], []
        for n, graph in self._member_nodes(f):
            out = sorted(graph.out_edges(n, data=True), key=lambda e: e[1].addr)
            transitions = [e for e in out if e[2].get("type") == "transition"]
            end = n.addr + n.size
            for _, d, data in out:
                if data.get("type") == "fake_return" or (d.addr == end and len(transitions) <= 2):
                    kind = "fallthrough"
                elif len(transitions) == 2:
                    kind = "conditional"
                else:
                    kind = "jump"
                edges.append({"from": a.out(n.addr), "to": a.out(d.addr), "kind": kind})
            count = len(self.a.proj.factory.block(n.addr, size=n.size).capstone.insns)
            blocks.append(
                {
                    "start": a.out(n.addr),
                    "end": a.out(end),
                    "instruction_count": count,
                    "successors": [a.out(d.addr) for _, d, _ in out],
                }
            )
        return {"address": a.out(f.addr), "name": a.fname(f), "blocks": blocks, "edges": edges}, None

    def assembly(self, params: Arguments) -> tuple[Any, Any]:
        f = self.a.select(params)
        cap = answers.int_param(params, "max_instructions", MAX_ASSEMBLY_INSTRUCTIONS, 1, MAX_ASSEMBLY_INSTRUCTIONS)
        insns = self.instructions(f)
        return {
            "address": self.a.out(f.addr),
            "name": self.a.fname(f),
            "instructions": insns[:cap],
            "truncated": len(insns) > cap,
        }, None

    def read_instructions(self, params: Arguments) -> tuple[Any, Any]:
        f = self.a.select(params)
        result = answers.page("instructions", self.instructions(f), params, _same)
        return {"address": self.a.out(f.addr), "name": self.a.fname(f), **result}, None

    def callers(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        f = a.select(params)
        by_caller: dict[int, set[int]] = defaultdict(set)
        for s in self.index.callers_of.get(f.addr, []):
            by_caller[s.caller].add(s.insn)
        callers = [
            CallerItem(address=a.out(c), name=a.fname(a.by_addr[c]), call_sites=[a.out(x) for x in sorted(sites)])
            for c, sites in sorted(by_caller.items())
        ]
        return {"procedure": a.proc_ref(f), "callers": callers}, None

    def callees(self, params: Arguments) -> tuple[Any, Any]:
        f = self.a.select(params)
        callees, raw = self._callees(f)
        return {"procedure": self.a.proc_ref(f), "callees": callees}, {"call_sites": raw}

    def _callees(self, f: Any) -> tuple[list[CalleeItem], list[JSONObject]]:
        """``f``'s callees, and angr's call sites as the raw result lists them."""
        a = self.a
        groups: dict[tuple[CalleeKind, int | None, str | None], set[int]] = defaultdict(set)
        raw: list[JSONObject] = []
        for s in self.index.sites_of.get(f.addr, ()):
            raw.append({"call_site": hex(s.insn), "targets": [None if t is None else hex(t) for t in s.targets]})
            # An indirect site is a callee of unknown address, unless it only reads import slots.
            if not s.direct and not all(t is not None and not a.main.contains_addr(t) for t in s.targets):
                groups["indirect", None, None].add(s.insn)
            for t in s.targets:
                target_f = None if t is None else a.known.get(t)
                if t is None or target_f is None:
                    groups["indirect", t, None].add(s.insn)
                elif target_f.is_plt or target_f.is_simprocedure or not a.main.contains_addr(t):
                    groups["import", t if a.main.contains_addr(t) else None, a.fname(target_f)].add(s.insn)
                else:
                    groups["direct" if s.direct else "indirect", t, a.fname(target_f)].add(s.insn)
        ordered = sorted(groups.items(), key=lambda g: (min(g[1]), -1 if g[0][1] is None else g[0][1], g[0][0]))
        callees = [
            CalleeItem(address=a.opt(t), name=name, kind=kind, call_sites=[a.out(x) for x in sorted(sites)])
            for (kind, t, name), sites in ordered
        ]
        return callees, raw

    def program_call_graph(self, params: Arguments) -> tuple[Any, Any]:
        """Every procedure's callees as one paged edge list (the same items ``callees`` answers)."""
        callgraph.check(params)
        a = self.a
        edges = []
        for f in a.funcs:
            at = a.out(f.addr)  # the contract's link-time address
            callees = self._callees(a.select({"procedure": at}))[0]
            edges.extend(callgraph.edges_of(int(at, 16), [msgspec.structs.asdict(c) for c in callees]))
        names = {int(a.out(f.addr), 16): a.fname(f) for f in a.funcs}
        return callgraph.answer(edges, names, len(a.funcs), params), None

    def _ref_item(self, r: Ref) -> SentReferenceItem:
        return SentReferenceItem(
            source=self.a.out(r.src),
            to=self.a.opt(r.dst),
            kind=r.kind,
            from_procedure=self.a.opt(r.from_proc),
            to_name=r.to_name,
        )

    def references(self, params: Arguments) -> tuple[Any, Any]:
        f = self.a.select(params)
        direction = arg_str(params, "direction") or "outgoing"
        if direction not in ("incoming", "outgoing"):
            raise answers.bad("direction", "direction must be 'incoming' or 'outgoing'")
        refs = (
            self.index.out_by_proc.get(f.addr, []) if direction == "outgoing" else self.index.in_by_addr.get(f.addr, [])
        )
        result = answers.page("references", refs, params, self._ref_item)
        return {"procedure": self.a.proc_ref(f), "direction": direction, **result}, None

    def xrefs(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        at = a.inn(params.get("address"))
        refs = [
            XrefItem(source=a.out(r.src), from_procedure=a.opt(r.from_proc), kind=r.kind, to=a.out(at))
            for r in self.index.in_by_addr.get(at, [])
        ]
        return {"address": a.out(at), "references": refs}, None

    def _decompile(self, f: Any) -> Any:
        a = self.a
        if not self.types.key:
            return a.proj.analyses.Decompiler(f, cfg=a.cfg.model)
        from angr.knowledge_base import KnowledgeBase

        # With the analyst's types, variables are recovered afresh: none of an untyped run's guesses
        # (its struct_N types) carry over.
        kb = KnowledgeBase(a.proj)  # type: ignore[no-untyped-call]
        return a.proj.analyses.Decompiler(f, cfg=a.cfg.model, variable_kb=kb)

    def pseudo_code(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        f = a.select(params)
        problems = self.types.apply(a, arg_object(params, "types"))
        key = (f.addr, self.types.key)
        if key not in self._pseudo:
            try:
                dec = self._decompile(f)
            except (ReaError, RecursionError, MemoryError):
                raise
            except Exception as exc:
                words = str(exc) or "the decompiler gave no reason"
                raise ReaError(
                    "execution_failure",
                    f"angr's decompiler failed on {a.fname(f)}: {words}",
                    details={"procedure": a.out(f.addr), "engine_error": words},
                ) from None
            if dec.codegen is None or not dec.codegen.text:
                raise ReaError(
                    "execution_failure",
                    f"angr's decompiler produced no code for {a.fname(f)}",
                    remediation="Read procedure_assembly for this procedure instead.",
                    details={"procedure": a.out(f.addr), "reason": "no_output"},
                )
            self.types.name_arguments(f, dec)
            self._pseudo[key] = a.rebase_text(str(dec.codegen.text))
        raw = PseudoCodeRaw(
            angr_address=hex(f.addr),
            address_delta=hex(a.delta),
            user_types=UserTypes(applied=True, problems=problems) if self.types.key else None,
        )
        return {
            "address": a.out(f.addr),
            "name": a.fname(f),
            "language": "c",
            "text": self._pseudo[key],
            "decompiler": "angr",
        }, raw


def _same(row: InsnRow) -> InsnRow:
    return row
