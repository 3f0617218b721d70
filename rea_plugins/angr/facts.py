"""The direct native operations over angr: one instruction, a datum's type, and call-target resolution."""

from __future__ import annotations

import bisect
from typing import Any

import cle
import msgspec

from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import Record
from rea.plugin import answers
from rea_plugins.angr.code import CallSite
from rea_plugins.angr.code import Code
from rea_plugins.angr.insight import flow_of
from rea_plugins.angr.insight import operand_text
from rea_plugins.angr.insight import registers
from rea_plugins.angr.model import imm_target

_NO_FALLTHROUGH = frozenset({"jump", "return", "halt"})


class TypeRow(Record):
    """inspect_native_data_type's type: a pointer's target, an array's element and count."""

    name: str
    kind: str
    size: int
    element: TypeRow | msgspec.UnsetType = msgspec.UNSET
    count: int | msgspec.UnsetType = msgspec.UNSET
    target: str | msgspec.UnsetType | None = msgspec.UNSET


class DataInspection(Record):
    """inspect_native_data_type: what lies at an address, then where that was learnt (``source``)."""

    address: str | None
    name: str | None
    # A string's type as the kernel's ``string_type`` writes it for every provider (JSON), else angr's own.
    type: TypeRow | JSONObject
    value: str | msgspec.UnsetType | None = msgspec.UNSET
    target_name: str | msgspec.UnsetType | None = msgspec.UNSET
    source: str


class CallTarget(Record):
    """One target of a call or dispatch site and where it was learnt; an import without a stub or slot here has
    no address."""

    address: str | None
    name: str | None
    provenance: str


class CallSiteRow(Record):
    """A call or dispatch site of ``resolve_native_call_targets``, its keys in the order angr's answer sends them:
    ``instruction`` where the site decodes, ``reason`` where it stays unresolved."""

    address: str
    kind: str
    targets: list[CallTarget]
    instruction: str | None = None
    status: str
    reason: str | None = None


class PendingSite(msgspec.Struct):
    """A site while its targets are gathered."""

    address: str
    kind: str
    targets: list[CallTarget]

    def finished(self, instruction: str | None) -> CallSiteRow:
        targets = sorted(self.targets, key=lambda t: int(t.address or "0", 16))
        return CallSiteRow(
            address=self.address,
            kind=self.kind,
            targets=targets,
            instruction=instruction,
            status="resolved" if targets else "unresolved",
            reason=None if targets else "angr's resolvers found no target for this computed transfer",
        )


class Facts:
    """``inspect_native_instruction``, ``inspect_native_data_type`` and ``resolve_native_call_targets``."""

    def __init__(self, code: Code) -> None:
        self.code = code
        self.a = code.a
        self._sites_at: dict[int, list[CallSite]] | None = None
        self._jumps: dict[int, Any] | None = None
        self._objects: dict[int, Any] | None = None

    # -- lookups -------------------------------------------------------------------------------------

    def sites_at(self, addr: int) -> list[CallSite]:
        if self._sites_at is None:
            table: dict[int, list[CallSite]] = {}
            for s in self.code.index.sites:
                table.setdefault(s.insn, []).append(s)
            self._sites_at = table
        return self._sites_at.get(addr, [])

    def indirect_jump(self, insn: int) -> Any | None:
        """angr's record of the indirect jump or call at instruction ``insn``."""
        if self._jumps is None:
            self._jumps = {
                int(ij.ins_addr): ij
                for ij in self.a.cfg.indirect_jumps.values()
                if getattr(ij, "ins_addr", None) is not None
            }
        return self._jumps.get(insn)

    def _mapped(self, value: Any) -> int:
        at = self.a.inn(value)
        if not self.a.mapped(at):
            raise answers.bad("address", f"{self.a.out(at)} is not in any section of the binary", "out_of_range")
        return at

    def _target(self, t: int, provenance: str = "") -> CallTarget:
        """A target as the contract names it: an import at its stub (else slot), a local at its address; with
        where it was learnt (``provenance``)."""
        a = self.a
        if a.main.contains_addr(t):
            f = a.by_addr.get(t)
            name = a.fname(f) if f is not None else a.name_at(t)
            return CallTarget(address=a.out(t), name=name, provenance=provenance)
        f = a.known.get(t)
        name = None if f is None else a.fname(f)
        stub = a.import_stub(name)
        place = stub if stub is not None else a.import_slot(name)
        return CallTarget(address=a.opt(place), name=name, provenance=provenance)

    # -- inspect_native_instruction ------------------------------------------------------------------

    def instruction(self, params: Arguments) -> tuple[Any, Any]:
        a, code = self.a, self.code
        at = self._mapped(params.get("address"))
        f = a.containing(at)
        pages: dict[int, int] = {}
        if f is not None:
            rows = code.instructions(f)
            starts = [int(r.address, 16) + a.delta for r in rows]
            if at not in starts:
                i = bisect.bisect_right(starts, at) - 1
                if i >= 0 and at < starts[i] + len(rows[i].bytes) // 2:
                    start = a.out(starts[i])
                    raise answers.bad("address", f"{a.out(at)} is inside the instruction that starts at {start}")
            pages = self._pages_before(at)
        insn = code.index._decode(at)
        if insn is None:
            raise answers.bad("address", f"no instruction decodes at {a.out(at)}")
        details = code.symbolizer.operands(insn, pages)
        flow = flow_of(insn)
        targets = self._targets_of(at, insn)
        reads, writes, groups = registers(insn)
        operands = operand_text(a, insn)
        text = f"{insn.mnemonic} {operands}".strip()
        symbolized, _ = code.symbolizer.annotate(insn, self._pages_before(at) if f is not None else {})
        result = {
            "address": a.out(at),
            "size": insn.size,
            "bytes": bytes(insn.bytes).hex(),
            "mnemonic": insn.mnemonic,
            "operands": operands,
            "text": text,
            "symbolized": symbolized,
            "procedure": None if f is None else a.proc_ref(f),
            "flow": flow,
            "targets": [t for t in targets if t is not None],
            "fallthrough": None if flow in _NO_FALLTHROUGH else a.out(at + insn.size),
            "operand_details": details,
            "reads": reads,
            "writes": writes,
            "groups": groups,
        }
        return result, {"capstone_id": insn.id}

    def _pages_before(self, at: int) -> dict[int, int]:
        """arm64 registers holding an ``adrp`` page at ``at``, from the instructions before it in its block."""
        pages: dict[int, int] = {}
        node = self.a.cfg.model.get_any_node(at, anyaddr=True)
        if node is None or self.a.arch.name != "AARCH64":
            return pages
        for insn in self.a.proj.factory.block(node.addr, size=node.size).capstone.insns:
            if insn.address >= at:
                break
            self.code.symbolizer.operands(insn, pages)
        return pages

    def _targets_of(self, at: int, insn: Any) -> list[str]:
        a = self.a
        direct = imm_target(insn)
        if direct is not None and flow_of(insn) in ("call", "jump", "conditional_jump"):
            return [a.out(direct)]
        out: list[str | None] = []
        for s in self.sites_at(at):
            out += [self._target(t).address for t in s.targets if t is not None]
        table = self.code.index.tables.get(at)
        if table is not None:
            out += [a.out(t) for t in table[1]]
        return sorted({x for x in out if x is not None}, key=lambda x: int(x, 16))

    # -- resolve_native_call_targets -----------------------------------------------------------------

    def call_targets(self, params: Arguments) -> tuple[Any, Any]:
        a, index = self.a, self.code.index
        f = a.select(params)
        rows: dict[int, PendingSite] = {}
        for s in index.sites:
            if s.caller != f.addr:
                continue
            kind, provenance = self._classify(s)
            row = rows.setdefault(s.insn, PendingSite(a.out(s.insn), kind, []))
            for t in s.targets:
                if t is None:
                    continue
                target = self._target(t, provenance)
                if target.address is not None and all(x.address != target.address for x in row.targets):
                    row.targets.append(target)
        for insn, (proc, targets) in index.tables.items():
            if proc == f.addr:
                rows[insn] = PendingSite(a.out(insn), "computed-jump", [self._target(t, "jump-table") for t in targets])
        site = params.get("address")
        if site is not None:
            at = a.inn(site)
            if at not in rows:
                raise answers.bad("address", f"{a.out(at)} is not a call or dispatch site of {a.fname(f)}")
            rows = {at: rows[at]}
        out = []
        for insn in sorted(rows):
            decoded = self.code.index._decode(insn)
            text = None if decoded is None else f"{decoded.mnemonic} {operand_text(a, decoded)}".strip()
            out.append(rows[insn].finished(text))
        result = {
            "procedure": a.proc_ref(f),
            "call_sites": out,
            "unresolved_count": sum(1 for r in out if r.status == "unresolved"),
        }
        return result, None

    def _classify(self, s: CallSite) -> tuple[str, str]:
        """A site's kind and the provenance of its targets."""
        a = self.a
        if s.via == "pointer-table":
            return "indirect", "pointer-table"
        if s.via == "import":
            return "import", "import"
        if s.via == "unresolved":
            return "indirect", "data-flow"
        if s.direct:
            t = s.targets[0] if s.targets else None
            imported = t is not None and (
                not a.main.contains_addr(t) or (t in a.by_addr and a.func_kind(a.by_addr[t]) == "import")
            )
            return ("import", "import") if imported else ("direct", "direct")
        if s.targets and all(t is not None and not a.main.contains_addr(t) for t in s.targets):
            return "import", "import"
        ij = self.indirect_jump(s.insn)
        if ij is not None and getattr(ij, "jumptables", None):
            return "indirect", "pointer-table"
        insn = self.code.index._decode(s.insn)
        constant = insn is not None and any(
            d.get("kind") == "memory" and "address" in d for d in self.code.symbolizer.operands(insn, {})
        )
        return "indirect", "constant" if constant else "data-flow"

    # -- inspect_native_data_type --------------------------------------------------------------------

    def _object_at(self, at: int) -> Any | None:
        if self._objects is None:
            table: dict[int, Any] = {}
            for sym in self.a.main.symbols:
                if sym.type == cle.SymbolType.TYPE_OBJECT and sym.rebased_addr and not sym.is_import:
                    table.setdefault(int(sym.rebased_addr), sym)
            self._objects = table
        return self._objects.get(at)

    def data_type(self, params: Arguments) -> tuple[Any, Any]:
        a = self.a
        at = self._mapped(params.get("address"))
        name = a.name_at(at)
        word = a.arch.bytes
        address = a.out(at)
        strings = {s.addr: s.item for s in a.strings()}
        pointee = self.code.index.slots.get(at)
        datum = a.cfg.memory_data.get(at)
        sym = self._object_at(at)
        proc = a.by_addr.get(at)
        out: DataInspection
        if at in strings:
            s = strings[at]
            kind = answers.string_type(s.encoding, s.byte_length)
            out = DataInspection(address=address, name=name, type=kind, value=s.value, source="analysis")
        elif pointee is not None:
            target = a.out(pointee)
            pointer = TypeRow(name="pointer", kind="pointer", size=word, target=target)
            out = DataInspection(
                address=address,
                name=name,
                type=pointer,
                value=target,
                target_name=a.name_at(pointee),
                source="analysis",
            )
        elif datum is not None and str(datum.sort) == "pointer-array" and datum.size >= word:
            count = datum.size // word
            element = TypeRow(name="pointer", kind="pointer", size=word)
            array = TypeRow(name=f"pointer[{count}]", kind="array", size=datum.size, element=element, count=count)
            out = DataInspection(address=address, name=name, type=array, source="analysis")
        elif proc is not None:
            code = TypeRow(name="code", kind="function", size=a.func_end(proc) - proc.addr)
            out = DataInspection(address=address, name=name, type=code, source="analysis")
        elif sym is not None and sym.size:
            size = int(sym.size)
            sized = TypeRow(
                name=f"undefined{size}" if size in (1, 2, 4, 8) else f"byte[{size}]", kind="undefined", size=size
            )
            out = DataInspection(address=address, name=name, type=sized, source="symbol")
        else:
            size = int(datum.size) if datum is not None and datum.size else 1
            unknown = TypeRow(name="undefined", kind="undefined", size=size)
            out = DataInspection(address=address, name=name, type=unknown, source="analysis")
        raw = {"memory_data_sort": None if datum is None else str(datum.sort)}
        return out, raw
