"""The native provider's operations: Program facts to the normalized shapes of docs/native-operations.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence

import msgspec

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import ExportRow
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import Shape
from rea.plugin import Target
from rea.plugin import answers
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import hexa
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import looks_like_address
from rea.plugin import matcher as search_matcher
from rea.plugin import page
from rea.plugin import paging
from rea.plugin import parse_address
from rea.plugin import split_operands
from rea.plugin import symbolized_text
from rea.plugin import symbols_of
from rea_plugins.native import fingerprints
from rea_plugins.native import graph
from rea_plugins.native import rows as R
from rea_plugins.native.declared import OPERATIONS
from rea_plugins.native.disasm import Insn
from rea_plugins.native.dispatch import WINDOW
from rea_plugins.native.dispatch import pointer_table
from rea_plugins.native.model import Region
from rea_plugins.native.program import Proc
from rea_plugins.native.program import Program
from rea_plugins.native.program import Ref
from rea_plugins.native.program import StringItem

MAX_ASSEMBLY = 20_000
_IMMEDIATE = re.compile(r"^#?-?(0x[0-9a-fA-F]+|\d+)$")
_FROM_DATA = ("data", "read", "write")


def owner(r: Ref) -> str | None:
    """The procedure a reference comes from; None for a reference from data (a pointer slot)."""
    return hexa(r.proc) if r.proc >= 0 else None


class Operations:
    """Operation handlers over one Program; each returns an OperationResult."""

    def __init__(self, program: Program, target: Target) -> None:
        self.p = program
        self.target = target

    # -- helpers -------------------------------------------------------------------------------

    def proc(self, params: Arguments, path: str = "procedure") -> Proc:
        sel = params.get(path)
        if not isinstance(sel, str) or not sel:
            raise invalid_request(f"{path} is required", [issue(path, "missing_argument", "name or address")])
        found = self.p.procedure(parse_address(sel, path)) if looks_like_address(sel) else self.p.by_name(sel)
        if found is None:
            raise invalid_request(
                f"no procedure named or starting at {sel!r}",
                [issue(path, "invalid_value", "unknown procedure name or address", value=sel)],
            )
        return found

    def proc_row(self, p: Proc) -> R.ProcRow:
        end = self.p.end_of(p)
        return R.ProcRow(
            address=hexa(p.address),
            name=p.name,
            size=end - p.address,
            kind=p.kind,
            end=hexa(end),
            name_source=p.name_source,
            part_of=hexa(p.part_of),
            library=self.library_match(p.address) if p.name_source == "signature" else msgspec.UNSET,
        )

    def library_match(self, address: int) -> R.LibraryRow | None:
        """Where a procedure named by a library signature comes from (library, object, confidence), else None."""
        match = (self.p.library or {}).get(address)
        if match is None:
            return None
        return R.LibraryRow(library=match.library, object=match.object, confidence=match.confidence)

    def insn_row(self, insn: Insn, refs: Sequence[Ref] = ()) -> R.InsnRow:
        """An instruction row; with its references, the symbolized text and the addresses its operands denote."""
        raw = self.p.read(insn.address, insn.size) or b""
        details, branch = self._operand_details(insn, refs)
        return R.InsnRow(
            address=hexa(insn.address),
            bytes=raw.hex(),
            mnemonic=insn.mnemonic,
            operands=insn.op_str,
            text=f"{insn.mnemonic} {insn.op_str}".strip(),
            symbolized=symbolized_text(insn.mnemonic, details, branch),
            symbols=symbols_of(details),
        )

    def insn_rows(self, p: Proc, insns: Sequence[Insn]) -> list[R.InsnRow]:
        """Rows of ``insns`` (instructions of ``p``), symbolized from the procedure's own references."""
        by_src: dict[int, list[Ref]] = {}
        if insns:
            for r in self.p.instruction_refs(p):
                by_src.setdefault(r.src, []).append(r)
        return [self.insn_row(i, by_src.get(i.address, ())) for i in insns]

    def _operand_details(self, insn: Insn, refs: Sequence[Ref]) -> tuple[list[JSONObject], bool]:
        """Operand texts and kinds; the one operand that denotes an address gets it, named (and its string)."""
        # JSON objects, not a Struct: the kernel's symbolizer (symbolized_text, symbols_of) reads every provider's
        # operand details by key.
        details: list[JSONObject] = [
            {"text": t, "kind": "memory" if "[" in t else "immediate" if _IMMEDIATE.match(t) else "register"}
            for t in split_operands(insn.op_str, 0)
        ]
        if not details or not refs:
            return details, False
        flow = next((r for r in refs if r.kind in ("call", "jump") and r.dst is not None), None)
        memory = next((i for i, d in enumerate(details) if d["kind"] == "memory"), None)
        branch = flow is not None
        target: tuple[int, int, str | None] | None = None  # operand, address, name
        if flow is not None and flow.dst is not None and details[-1]["kind"] == "immediate":
            target = (len(details) - 1, flow.dst, flow.name)
        elif (slot := next((r for r in refs if r.kind == "external" and r.dst is not None), None)) is not None:
            assert slot.dst is not None
            target = (memory if memory is not None else len(details) - 1, slot.dst, slot.name)
        elif (datum := next((r for r in refs if r.kind in _FROM_DATA and r.dst is not None), None)) is not None:
            assert datum.dst is not None
            target = (memory if memory is not None else len(details) - 1, datum.dst, datum.name)
        if target is not None:
            index, address, name = target
            d = details[index]
            d["address"] = hexa(address)
            d["name"] = name or self.p.name_at(address)
            s = self.p.string_at(address)
            if s is not None:
                d["string"] = self.p.string_value(s)[0]
        return details, branch

    def ref_row(self, r: Ref) -> R.RefRow:
        return R.RefRow(source=hexa(r.src), to=hexa(r.dst), kind=r.kind, from_procedure=owner(r), to_name=r.name)

    def _result(self, normalized: object, limitations: list[str] | None = None) -> OperationResult:
        """The answer (a Struct, or the kernel's page of Struct rows) as the JSON objects the binary plugin reads,
        with the Program's limitations first; a kernel shape (the lean call graph's rows) is handed over as it is,
        which the binary plugin tells from a complete page by its type."""
        lims = list(self.p.limitations) + list(limitations or [])
        plain = normalized if isinstance(normalized, Shape) else msgspec.to_builtins(normalized)
        return OperationResult(normalized=plain, limitations=lims)

    # -- inventory -----------------------------------------------------------------------------

    def list_documents(self, params: Arguments, ctx: CallContext) -> OperationResult:
        m = self.p.model
        doc = R.DocumentRow(
            name=self.target.name,
            format=self.target.format,
            architecture=m.arch,
            sha256=self.target.sha256,
            entry=hexa(m.entry),
            bits=m.bits,
            endianness=m.endianness,
            slice=m.slice_arch if m.slices else msgspec.UNSET,
            slices=list(m.slices) if m.slices else msgspec.UNSET,
        )
        return self._result(R.Documents(documents=[doc]))

    def list_segments(self, params: Arguments, ctx: CallContext) -> OperationResult:
        m = self.p.model
        rows = [_region(r, kind=True) for r in _ordered(m.segments)] + [
            _region(r, kind=True) for r in _ordered(m.sections)
        ]
        return self._result(R.Segments(segments=rows))

    def list_procedures(self, params: Arguments, ctx: CallContext) -> OperationResult:
        paging(params)  # a bad page is refused before the work, in every listing below
        procs = self.p.procedures(ctx)
        return self._result(page("procedures", procs, params, self.proc_row), self._discovery_note())

    def _discovery_note(self) -> list[str]:
        if self.p.discovery:
            return []
        return ["procedures come from symbols, the entry point, exception tables and import stubs only"]

    def search_procedures(self, params: Arguments, ctx: CallContext) -> OperationResult:
        paging(params)
        match = search_matcher(params)
        hits = [p for p in self.p.procedures(ctx) if match(p.name)]
        return self._result(page("procedures", hits, params, self.proc_row), self._discovery_note())

    def _string_row(self, s: StringItem) -> R.StringRow:
        value, truncated = self.p.string_value(s)
        return R.StringRow(
            address=hexa(s.address),
            value=value,
            encoding=s.encoding,
            byte_length=s.byte_length,
            truncated=truncated,
            section=s.section,
        )

    def list_strings(self, params: Arguments, ctx: CallContext) -> OperationResult:
        paging(params)
        items: Sequence[StringItem] = self.p.strings(ctx)
        if params.get("address") is not None:
            items = self.p.strings(ctx).at(parse_address(params["address"]))
        return self._result(page("strings", items, params, self._string_row))

    def search_strings(self, params: Arguments, ctx: CallContext) -> OperationResult:
        paging(params)
        match = search_matcher(params)
        hits = []
        for i, s in enumerate(self.p.strings(ctx)):
            if i % 4096 == 0:
                ctx.check("searching strings")
            if match(self.p.string_value(s)[0]):
                hits.append(s)
        return self._result(page("strings", hits, params, self._string_row))

    def list_names(self, params: Arguments, ctx: CallContext) -> OperationResult:
        paging(params)
        items = self.p.names()
        if params.get("address") is not None:
            addr = parse_address(params["address"])
            items = [n for n in items if n[0] == addr]

        def row(n: tuple[int | None, str, str, bool]) -> R.NameRow:
            match = self.library_match(n[0]) if n[0] is not None and n[2] == "function" else None
            if match is None:
                return R.NameRow(address=hexa(n[0]), name=n[1], kind=n[2], external=n[3])
            return R.NameRow(
                address=hexa(n[0]), name=n[1], kind=n[2], external=n[3], name_source="signature", library=match
            )

        return self._result(page("names", items, params, row))

    def address_name(self, params: Arguments, ctx: CallContext) -> OperationResult:
        addr = parse_address(params.get("address"))
        return self._result(R.ProcRef(address=hexa(addr), name=self.p.name_at(addr)))

    def procedure_address(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        return self._result(
            R.ProcedureAddress(procedure=arg_str(params, "procedure"), address=hexa(p.address), name=p.name)
        )

    def resolve_containing_procedure(self, params: Arguments, ctx: CallContext) -> OperationResult:
        addr = parse_address(params.get("address"))
        p = self.p.containing(addr)
        body = None
        if p is not None:
            end = self.p.end_of(p)
            body = R.Extent(address=hexa(p.address), name=p.name, size=end - p.address, end=hexa(end))
        return self._result(R.Containing(address=hexa(addr), procedure=body))

    # -- function facts ------------------------------------------------------------------------

    def procedure_info(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        row = self.proc_row(p)
        n_blocks, n_insns = self.p.block_counts(p) if p.kind in ("local", "thunk") else (0, 0)
        region = self.p.region_at(p.address)
        m = self.p.model
        parent = self.p.procedure(p.part_of) if p.part_of is not None else None
        info = R.ProcInfo(
            # The listing's row, its parent named rather than only placed.
            **{
                **msgspec.structs.asdict(row),
                "part_of": None if parent is None else R.ProcRef(address=hexa(parent.address), name=parent.name),
            },
            section=region.name if region else None,
            basic_block_count=n_blocks,
            instruction_count=n_insns,
            signature=None,
            calling_convention=answers.DEFAULT_ABI.get((m.format, m.arch)) if p.kind == "local" else None,
            source=p.source,
            parts=[
                R.PartRow(address=hexa(q.address), name=q.name, end=hexa(self.p.end_of(q))) for q in self.p.parts_of(p)
            ],
        )
        lims = ["signature: the native provider recovers no types"]
        if p.name_source == "entry-heuristic":
            lims.append(f"{p.name}: named from the argument the entry point passes to the C runtime, not a symbol")
        match = self.library_match(p.address) if p.name_source == "signature" else None
        if match is not None:
            lims.append(
                f"{p.name}: named by a signature of {match.library} ({match.object}, {match.confidence} "
                "confidence), not a symbol"
            )
        return self._result(info, lims)

    def procedure_blocks(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        blocks = self.p.blocks(p) if p.kind in ("local", "thunk") else []
        edges = [R.EdgeRow(source=hexa(b.start), to=hexa(t), kind=k) for b in blocks for t, k in b.successors]
        return self._result(
            R.Blocks(
                address=hexa(p.address),
                name=p.name,
                blocks=[
                    R.BlockRow(
                        start=hexa(b.start),
                        end=hexa(b.end),
                        instruction_count=b.n_insns,
                        successors=[hexa(t) for t, _ in b.successors],
                    )
                    for b in blocks
                ],
                edges=edges,
            )
        )

    def procedure_assembly(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        # 0 (which the schema refuses) reads as no cap given, as it always has.
        cap = arg_int(params, "max_instructions") or MAX_ASSEMBLY
        insns = self.p.instructions(p)
        return self._result(
            R.Assembly(
                address=hexa(p.address),
                name=p.name,
                instructions=self.insn_rows(p, insns[:cap]),
                truncated=len(insns) > cap,
            )
        )

    def read_function_instructions(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        offset, limit = paging(params)
        window, more = self.p.window(p, offset, limit)
        # total is exact only once the procedure is decoded; decoding the window alone keeps this cheap.
        total = len(self.p.instructions(p)) if more else offset + len(window)
        return self._result(
            R.InstructionPage(
                instructions=self.insn_rows(p, window),
                offset=offset,
                limit=limit,
                total=total,
                next_offset=offset + limit if more else None,
                address=hexa(p.address),
                name=p.name,
            )
        )

    def _outgoing(self, p: Proc, ctx: CallContext, data: bool = True) -> list[Ref]:
        return self.p.outgoing(p, ctx, data)

    def _home(self, address: int) -> int:
        """The procedure a reference source belongs to: a split-off part counts as its parent."""
        q = self.p.procedure(address)
        return q.part_of if q is not None and q.part_of is not None else address

    def _is_call(self, r: Ref) -> bool:
        """A call, or a tail jump to another procedure's start (not a jump between a procedure's parts)."""
        if r.kind == "call":
            return True
        if r.kind != "jump" or r.dst is None or r.proc == r.dst:
            return False
        target = self.p.procedure(r.dst)
        return target is not None and self._home(r.dst) != self._home(r.proc)

    def procedure_callees(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        groups: dict[tuple[int | None, str | None, str], list[int]] = {}
        refs = [r for q in (p, *self.p.parts_of(p)) for r in self._outgoing(q, ctx, data=False)]
        # A register call that register loads resolve: its targets, kind indirect, and no unknown callee.
        through = {r.src for r in refs if r.kind == "indirect"}
        resolved = {r.src for r in refs if r.src in through and r.dst is not None and r.kind in ("call", "jump")}
        for r in refs:
            if r.kind == "indirect" and r.src in resolved:
                continue
            if self._is_call(r):
                target = self.p.procedure(r.dst) if r.dst is not None else None
                if target is not None and target.kind in ("import", "thunk"):
                    kind = "import"
                elif r.src in resolved:
                    kind = "indirect"
                else:
                    kind = "tail" if r.kind == "jump" else "direct"
                name = target.name if target is not None else r.name
                groups.setdefault((r.dst, name, kind), []).append(r.src)
            elif r.kind == "indirect" or (r.kind == "computed" and r.dst is None):
                # A call or jump through a register that is no resolved jump table: its targets are unknown.
                groups.setdefault((None, None, "indirect"), []).append(r.src)
        callees = [
            R.CalleeRow(address=hexa(a), name=n, kind=k, call_sites=[hexa(s) for s in sorted(set(sites))])
            for (a, n, k), sites in sorted(groups.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][2]))
        ]
        return self._result(R.Callees(procedure=R.ProcRef(address=hexa(p.address), name=p.name), callees=callees))

    def program_call_graph(self, params: Arguments, ctx: CallContext) -> OperationResult:
        """Every call edge of the program, paged (ordered by caller, then callee); names of the page's procedures."""
        offset, limit = answers.whole_program_paging(params)
        edges = self.p.call_graph(ctx)
        by_addr = self.p.an.by_addr

        def name_of(address: int) -> str | None:
            q = by_addr.get(address)
            return q.name if q is not None else None

        if arg_str(params, "detail") == "lean":
            # The lean rows straight from the columns (get_call_graph's default): no dict per edge.
            return self._result(graph.lean_answer(edges, offset, limit, self.p.name_of_target))
        return self._result(graph.answer(edges, offset, limit, name_of, self.p.name_of_target))

    def procedure_callers(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        groups: dict[int, list[int]] = {}
        for r in self.p.incoming(p.address, ctx, data=False):
            if self._is_call(r):
                groups.setdefault(self._home(r.proc), []).append(r.src)
        callers = []
        for addr in sorted(groups):
            caller = self.p.procedure(addr)
            callers.append(
                R.CallerRow(
                    address=hexa(addr),
                    name=caller.name if caller else None,
                    call_sites=[hexa(s) for s in sorted(set(groups[addr]))],
                )
            )
        return self._result(R.Callers(procedure=R.ProcRef(address=hexa(p.address), name=p.name), callers=callers))

    def procedure_references(self, params: Arguments, ctx: CallContext) -> OperationResult:
        p = self.proc(params)
        paging(params)
        direction = arg_str(params, "direction", "outgoing")
        if direction == "outgoing":
            refs = sorted(self._outgoing(p, ctx), key=lambda r: (r.src, r.dst is None, r.dst or 0, r.kind))
        elif direction == "incoming":
            end = self.p.end_of(p)
            refs = sorted(
                (r for r in self.p.incoming_range(p.address, end, ctx) if r.proc != p.address),
                key=lambda r: (r.src, r.dst or 0, r.kind),
            )
        else:
            raise invalid_request(
                "direction must be incoming or outgoing", [issue("direction", "invalid_value", "incoming|outgoing")]
            )
        body = page("references", refs, params, self.ref_row)
        return self._result(
            {**body, "procedure": R.ProcRef(address=hexa(p.address), name=p.name), "direction": direction}
        )

    def xrefs(self, params: Arguments, ctx: CallContext) -> OperationResult:
        addr = parse_address(params.get("address"))
        refs = sorted(self.p.incoming(addr, ctx), key=lambda r: (r.src, r.kind))
        return self._result(
            R.Xrefs(
                address=hexa(addr),
                references=[
                    R.XrefRow(source=hexa(r.src), from_procedure=owner(r), kind=r.kind, to=hexa(r.dst)) for r in refs
                ],
            )
        )

    def resolve_native_call_targets(self, params: Arguments, ctx: CallContext) -> OperationResult:
        """Every call and dispatch site of a procedure with its targets; a register dispatch through a bounded
        pointer table resolved from the instructions before it."""
        p = self.proc(params)
        only = parse_address(params["address"]) if params.get("address") is not None else None
        # Each site's row as it is found; its targets are added to in place, then each row's are made unique.
        sites: dict[int, R.CallSiteRow | R.IndirectSiteRow] = {}
        refs = [r for q in (p, *self.p.parts_of(p)) for r in self._outgoing(q, ctx, data=False)]
        through = {r.src for r in refs if r.kind == "indirect"}
        resolved = {r.src for r in refs if r.src in through and r.kind in ("call", "jump") and r.dst is not None}
        for r in refs:
            if only is not None and r.src != only:
                continue
            if r.src in resolved:
                if r.kind != "indirect" and r.dst is not None:
                    entry = sites.setdefault(r.src, _site(r.src, "indirect"))
                    how = self.p.register_provenance.get((r.src, r.dst), "register-load")
                    entry.targets.append(R.CallTarget(address=hexa(r.dst), name=r.name, provenance=how))
                continue
            elif self._is_call(r) and r.dst is not None:
                target = self.p.procedure(r.dst)
                imported = target is not None and target.kind in ("import", "thunk")
                entry = sites.setdefault(r.src, _site(r.src, "import" if imported else "direct"))
                entry.targets.append(
                    R.CallTarget(
                        address=hexa(r.dst),
                        name=target.name if target else r.name,
                        provenance="import" if imported else "direct",
                    )
                )
            elif r.kind == "computed" and r.dst is not None:
                entry = sites.setdefault(r.src, _site(r.src, "computed-jump"))
                entry.targets.append(R.CallTarget(address=hexa(r.dst), name=r.name, provenance="jump-table"))
            elif r.kind == "indirect" or (r.kind == "computed" and r.dst is None):
                sites[r.src] = self._indirect_site(p, r.src)
        if only is not None and only not in sites:
            raise invalid_request(
                f"{hexa(only)} is not a call or dispatch site of {p.name or hexa(p.address)}",
                [issue("address", "invalid_value", "not a call site of the procedure")],
            )
        rows = [msgspec.structs.replace(sites[a], targets=_unique(sites[a].targets)) for a in sorted(sites)]
        return self._result(
            R.CallTargets(
                procedure=R.ProcRef(address=hexa(p.address), name=p.name),
                call_sites=rows,
                unresolved_count=sum(1 for r in rows if r.status == "unresolved"),
            )
        )

    def _indirect_site(self, p: Proc, site: int) -> R.IndirectSiteRow:
        insns = self.p.instructions(p)
        at = next((i for i, insn in enumerate(insns) if insn.address == site), None)
        if at is None:  # a split-off part's site: decode that part
            q = self.p.containing(site)
            insns = self.p.instructions(q) if q is not None else []
            at = next((i for i, insn in enumerate(insns) if insn.address == site), None)
        found = pointer_table(self.p.model.arch, insns[max(0, at - WINDOW) : at + 1]) if at is not None else None
        targets: list[R.CallTarget] = []
        instruction = f"{insns[at].mnemonic} {insns[at].op_str}".strip() if at is not None else msgspec.UNSET
        if found is not None:
            table, count, word = found
            for slot in range(table, table + count * word, word):
                value = self.p.pointer_slot(slot)
                if value is None and word == self.p.image.pointer:
                    value = self.p.image.pointer_at(slot)
                if value is None or self.p.code_region_at(value) is None:
                    found = None  # a slot that is no code pointer: the table is not what it seemed
                    break
                targets.append(
                    R.CallTarget(address=hexa(value), name=self.p.name_at(value), provenance="pointer-table")
                )
        if found is None:
            return R.IndirectSiteRow(
                address=hexa(site),
                kind="indirect",
                targets=[],
                instruction=instruction,
                status="unresolved",
                reason="the target is computed at run time (no bounded table in the instructions before it)",
            )
        return R.IndirectSiteRow(
            address=hexa(site), kind="indirect", targets=targets, instruction=instruction, status="resolved"
        )

    def inspect_native_data_type(self, params: Arguments, ctx: CallContext) -> OperationResult:
        """The datum at an address as the container and the index know it: a string, a pointer slot, code or a
        sized symbol (no debug info is read)."""
        at = parse_address(params.get("address"))
        if not self.p.mapped(at):
            raise invalid_request(
                f"{hexa(at)} is not mapped by the image", [issue("address", "invalid_value", "not in any segment")]
            )
        source = "analysis"
        kind: R.TypeRow | JSONObject
        value: str | msgspec.UnsetType | None = msgspec.UNSET
        target_name: str | msgspec.UnsetType | None = msgspec.UNSET
        word = self.p.model.bits // 8
        text = self.p.string_at(at)
        pointee = self.p.pointer_slot(at)
        proc = self.p.procedure(at)
        symbol = next((s for s in self.p.model.symbols if s.address == at and s.size), None)
        if text is not None:
            kind = answers.string_type(text.encoding, text.byte_length)
            value = self.p.string_value(text)[0]
        elif pointee is not None:
            kind = R.TypeRow(name="pointer", kind="pointer", size=word, target=hexa(pointee))
            value = hexa(pointee)
            target_name = self.p.name_at(pointee)
        elif proc is not None:
            kind = R.TypeRow(name="code", kind="function", size=self.p.end_of(proc) - proc.address)
        elif symbol is not None:
            size = symbol.size
            kind = R.TypeRow(
                name=f"undefined{size}" if size in (1, 2, 4, 8) else f"byte[{size}]", kind="undefined", size=size
            )
            source = "symbol"
        else:
            kind = R.TypeRow(name="undefined", kind="undefined", size=1)
        return self._result(
            R.DataInspection(
                address=hexa(at),
                name=self.p.name_at(at),
                source=source,
                type=kind,
                value=value,
                target_name=target_name,
            )
        )

    def procedure_fingerprints(self, params: Arguments, ctx: CallContext) -> OperationResult:
        return self._result(fingerprints.answer(self, params, ctx))

    # -- layout --------------------------------------------------------------------------------

    def binary_layout(self, params: Arguments, ctx: CallContext) -> OperationResult:
        m = self.p.model
        sections = [_region(r) for r in _ordered(m.sections)]
        segments = [_region(r) for r in _ordered(m.segments)]
        body = R.Layout(
            format=self.target.format,
            architecture=m.arch,
            entry=hexa(m.entry),
            bits=m.bits,
            image_base=hexa(m.image_base),
            segments=segments,
            sections=sections,
            mitigations=m.mitigations,
            linkage=m.linkage,
            imports=[
                R.ImportRow(name=i.name, library=i.library, slot=hexa(i.slot), kind="data" if i.data else "function")
                for i in m.imports
            ],
            exports=[ExportRow(name=s.name, address=hexa(s.address)) for s in m.symbols if s.exported],
        )
        return self._result(body)


def dispatch(ops: Operations, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
    if operation not in OPERATIONS:
        raise ReaError(
            "capability_unavailable",
            f"native does not offer {operation}",
            details={"operation": operation, "provider_id": "native"},
        )
    handler: Callable[[Arguments, CallContext], OperationResult] = getattr(ops, operation)
    return handler(params, ctx)


def _ordered(regions: Iterable[Region]) -> list[Region]:
    return sorted(regions, key=lambda r: (r.start, r.name))


def _region(r: Region, kind: bool = False) -> R.RegionRow:
    """A segment or section row of list_segments (with its kind) and binary_layout."""
    return R.RegionRow(
        name=r.name,
        start=hexa(r.start),
        end=hexa(r.end),
        size=r.size,
        permissions=r.perms,
        file_offset=r.file_offset,
        file_size=r.file_size,
        kind=r.kind if kind else msgspec.UNSET,
    )


def _site(address: int, kind: str) -> R.CallSiteRow:
    """A resolved call or dispatch site, its targets added as they are found."""
    return R.CallSiteRow(address=hexa(address), kind=kind, status="resolved", targets=[])


def _unique(targets: list[R.CallTarget]) -> list[R.CallTarget]:
    """One target per address (the last found), in address order."""
    unique = {t.address: t for t in targets}
    return sorted(unique.values(), key=lambda t: int(t.address or "0", 16))
