"""Symbolized operands, indirect sites, pointer slots and the direct native operations over radare2.

Imported by the worker process only. Operands come from radare2's decoding (``pDj`` for rows, ``aoj`` for one
instruction's operand details); addresses from its ``jump``/``ptr`` fields and ``adrp`` pages, named from the
Program's symbols, imports and procedures.
"""

from __future__ import annotations

import bisect
import re
from typing import Any
from typing import NamedTuple

import msgspec

from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import answers
from rea.plugin import split_operands
from rea.plugin import symbolized_text
from rea.plugin import symbols_of
from rea_plugins.radare2.dispatch import Resolver
from rea_plugins.radare2.dispatch import family
from rea_plugins.radare2.engine import integer
from rea_plugins.radare2.engine import list_of
from rea_plugins.radare2.program import Proc
from rea_plugins.radare2.program import Program
from rea_plugins.radare2.rows import CallSiteRow
from rea_plugins.radare2.rows import CallTarget
from rea_plugins.radare2.rows import DataInspection
from rea_plugins.radare2.rows import InstructionFacts
from rea_plugins.radare2.rows import TypeRow
from rea_plugins.radare2.slots import SlotFinder

CALL_TYPES = frozenset({"call", "ucall", "rcall", "icall", "ircall", "ccall", "uccall"})
INDIRECT_CALLS = frozenset({"ucall", "rcall", "icall", "ircall", "uccall"})
BRANCH_TYPES = frozenset({"call", "ccall", "jmp", "cjmp"})
JUMP_TYPES = frozenset({"jmp", "ujmp", "rjmp", "ijmp", "irjmp", "mjmp"})
COND_TYPES = frozenset({"cjmp", "ucjmp"})
_FLOW = {"ret": "return", "cret": "return", "swi": "interrupt", "trap": "interrupt"}
_ARM_ADD = re.compile(r"(\w+), (\w+), (?:#)?(0x[0-9a-f]+|\d+)$")
_ARM_LOAD = re.compile(r"\[(\w+)(?:, (?:#)?(-?0x[0-9a-f]+|-?\d+))?\]")


class Site(NamedTuple):
    """An indirect transfer: ``kind`` is ``pointer-table``, ``jump-table`` or ``unresolved``."""

    insn: int
    kind: str
    targets: tuple[int, ...]
    table: int | None


class PendingSite(msgspec.Struct):
    """A call or dispatch site of ``resolve_native_call_targets`` while its targets are gathered."""

    address: str
    kind: str
    instruction: str
    targets: list[CallTarget]

    def finished(self) -> CallSiteRow:
        targets = sorted(self.targets, key=lambda t: int(t.address, 16))
        return CallSiteRow(
            address=self.address,
            kind=self.kind,
            instruction=self.instruction,
            targets=targets,
            status="resolved" if targets else "unresolved",
            reason=None if targets else "neither radare2 nor a bounded table load determines the target",
        )


class Symbolizer:
    """Resolves and names the addresses an instruction's operands denote."""

    def __init__(self, p: Program) -> None:
        self.p = p
        self._strings: dict[int, str] | None = None

    def strings(self) -> dict[int, str]:
        if self._strings is None:
            self._strings = {s.addr: s.item.value for s in self.p.strings()}
        return self._strings

    def describe(self, addr: int) -> JSONObject:
        """The name (and string) of an address an operand denotes, the keys of the kernel's operand rows."""
        out: JSONObject = {"name": self.p.name_at(addr)}
        text = self.strings().get(addr)
        if text is not None:
            out["string"] = text
        return out

    def details(
        self, kind: str, mnemonic: str, operands: str, jump: int | None, ptr: int | None, pages: dict[str, int]
    ) -> list[JSONObject]:
        """Operand details from radare2's fields: texts, and the address one operand denotes (JSON objects: the
        kernel's symbolizer, ``symbolized_text`` and ``symbols_of``, reads every provider's rows by key)."""
        p = self.p
        texts = split_operands(operands, 0)
        out: list[JSONObject] = [{"text": t, "kind": _kind_of_text(t)} for t in texts]
        address, index = None, None
        if kind in BRANCH_TYPES and jump is not None and out:
            address, index = jump, len(out) - 1
        elif mnemonic == "adrp" and ptr is not None and len(texts) == 2:
            pages[family(texts[0])] = ptr
            address, index = ptr, 1
        elif (
            mnemonic == "add"
            and len(texts) == 3
            and (m := _ARM_ADD.fullmatch(operands))
            and family(m.group(2)) in pages
        ):
            address, index = pages[family(m.group(2))] + int(m.group(3), 0), 2
        elif (m := _ARM_LOAD.search(operands)) and family(m.group(1)) in pages and mnemonic.startswith(("ldr", "str")):
            address = pages[family(m.group(1))] + int(m.group(2) or "0", 0)
            index = next(i for i, t in enumerate(texts) if "[" in t)
        elif ptr is not None and p.mapped(ptr) and texts:
            index = next((i for i, t in enumerate(texts) if "[" in t), len(texts) - 1)
            address = ptr
        if texts and mnemonic not in ("adrp", "add", "adr") and not mnemonic.startswith(("ldr", "str")):
            dest = family(texts[0])
            pages.pop(dest, None)
        if kind in BRANCH_TYPES or kind in JUMP_TYPES or kind in CALL_TYPES:
            pages.clear()
        if address is not None and index is not None and (kind in BRANCH_TYPES or p.mapped(address)):
            out[index].update(self.describe(address))
            out[index]["address"] = hex(address)
        return out

    def annotate(
        self, mnemonic: str, operands: str, kind: str, jump: int | None, ptr: int | None, pages: dict[str, int]
    ) -> tuple[str, list[JSONObject]]:
        """An instruction's ``symbolized`` text and ``symbols`` (the kernel's operand rows)."""
        details = self.details(kind, mnemonic, operands, jump, ptr, pages)
        return symbolized_text(mnemonic, details, kind in BRANCH_TYPES), symbols_of(details)


def _kind_of_text(text: str) -> str:
    if "[" in text:
        return "memory"
    if re.fullmatch(r"#?-?(0x[0-9a-fA-F]+|\d+)", text.strip()):
        return "immediate"
    return "register"


def flow_of(kind: str, mnemonic: str) -> str:
    if kind in CALL_TYPES:
        return "call"
    if kind in COND_TYPES:
        return "conditional_jump"
    if kind in JUMP_TYPES:
        return "jump"
    if mnemonic in ("hlt", "ud2", "brk", "udf"):
        return "halt"
    return _FLOW.get(kind, "interrupt" if mnemonic in ("syscall", "svc", "int3") else "sequential")


class Indirect:
    """The indirect sites of each procedure and the pointer slots of the binary, found on first use."""

    def __init__(self, p: Program) -> None:
        self.p = p
        self.finder = SlotFinder(p)
        self.resolver = Resolver(p, self.finder.read_word)
        self._sites: dict[int, dict[int, Site]] = {}
        self._slots: dict[int, int] | None = None
        self._pointed: dict[int, list[int]] = {}

    def slots(self) -> dict[int, int]:
        if self._slots is None:
            p = self.p
            strings = {s.addr for s in p.strings()}
            self._slots = self.finder.find(lambda v: v in p.by_addr or v in strings or bool(p.names_at(v)))
            for slot, value in self._slots.items():
                self._pointed.setdefault(value, []).append(slot)
        return self._slots

    def slots_to(self, addr: int) -> list[int]:
        self.slots()
        return self._pointed.get(addr, [])

    def pointed(self) -> list[int]:
        self.slots()
        return sorted(self._pointed)

    def sites(self, f: Proc, rows: list[Any]) -> dict[int, Site]:
        """Indirect jumps and calls ending ``f``'s blocks (``rows``: its decoded instructions), classified."""
        if f.addr in self._sites:
            return self._sites[f.addr]
        p = self.p
        found: dict[int, Site] = {}
        addrs = [i.addr for i in rows]
        for start, size, _, _, _, cases in f.blocks:
            lo, hi = bisect.bisect_left(addrs, start), bisect.bisect_left(addrs, start + size)
            if lo >= hi:
                continue
            last = rows[hi - 1]
            if last.kind not in INDIRECT_CALLS and last.kind not in ("ujmp", "rjmp", "ijmp", "irjmp", "mjmp"):
                continue
            if last.ptr in p.import_slots or any(a in p.import_slots for a, _, _ in last.refs):
                continue  # through an import slot: the caller's own import handling names it
            table: int | None = None
            targets: tuple[int, ...] = tuple(cases)
            if not targets:
                pred = next((b for b in f.blocks if start in (b[3], b[4]) and b[0] != start), None)
                before = (
                    []
                    if pred is None
                    else addrs[bisect.bisect_left(addrs, pred[0]) : bisect.bisect_left(addrs, pred[0] + pred[1])]
                )
                resolved = self.resolver.resolve(addrs[lo:hi], before)
                if resolved is not None:
                    table, found_targets = resolved
                    targets = tuple(found_targets)
            if not targets:
                found[last.addr] = Site(last.addr, "unresolved", (), None)
            elif last.kind in INDIRECT_CALLS or all(t in p.by_addr and t != f.addr for t in targets):
                found[last.addr] = Site(last.addr, "pointer-table", targets, table)
            else:
                found[last.addr] = Site(last.addr, "jump-table", targets, table)
        self._sites[f.addr] = found
        return found


def instruction_item(p: Program, at: int) -> JSONObject:
    """radare2's decoding of the instruction at ``at`` (``aoj``, its own JSON), or an empty dict."""
    found = list_of(p.core.cmdj(f"aoj @ {at}"))
    return found[0] if found and integer(found[0].get("addr")) == at else {}


def operand_details(op: JSONObject, details: list[JSONObject]) -> list[JSONObject]:
    """``details`` completed with the kinds, registers, values and access radare2's ``opex`` gives."""
    opex = op.get("opex")
    operands = list_of(opex.get("operands")) if isinstance(opex, dict) else []
    for i, d in enumerate(details):
        d.setdefault("access", None)
        if i >= len(operands):
            continue
        o = operands[i]
        kind = str(o.get("type") or "")
        if kind == "reg":
            d["kind"], d["register"] = "register", str(o.get("value"))
        elif kind == "imm":
            d["kind"] = "immediate"
            value = integer(o.get("value"))
            if value is not None:
                d["value"] = value
        elif kind == "mem":
            d["kind"] = "memory"
        rw = integer(o.get("rw"))
        if rw:
            d["access"] = {1: "read", 2: "write", 3: "read_write"}.get(rw)
    return details


def registers(op: JSONObject, details: list[JSONObject]) -> tuple[list[str], list[str]]:
    """Registers read and written, from radare2's operand details (explicit operands only)."""
    reads: set[str] = set()
    writes: set[str] = set()
    opex = op.get("opex")
    operands = list_of(opex.get("operands")) if isinstance(opex, dict) else []
    for i, o in enumerate(operands):
        if o.get("type") == "mem":
            reads.update(str(o[k]) for k in ("base", "index") if o.get(k))
        elif o.get("type") == "reg":
            access = details[i].get("access") if i < len(details) else None
            if access in ("write", "read_write") or (access is None and i == 0 and len(operands) > 1):
                writes.add(str(o.get("value")))
            if access in ("read", "read_write") or (access is None and (i > 0 or len(operands) == 1)):
                reads.add(str(o.get("value")))
    return sorted(reads), sorted(writes)


def bad_address(message: str) -> Any:
    return answers.bad("address", message)


class Facts:
    """``inspect_native_instruction``, ``inspect_native_data_type`` and ``resolve_native_call_targets``."""

    def __init__(self, code: Any) -> None:
        self.code = code
        self.p: Program = code.p

    def _mapped(self, value: Any) -> int:
        at = answers.parse_address(value)
        if not self.p.mapped(at):
            raise answers.bad("address", f"{hex(at)} is not in any section of the binary", "out_of_range")
        return at

    # -- inspect_native_instruction ------------------------------------------------------------------

    def instruction(self, params: Arguments) -> tuple[Any, Any]:
        p, code = self.p, self.code
        p.require_analysis()
        at = self._mapped(params.get("address"))
        f = p.containing(at)
        pages: dict[str, int] = {}
        targets: list[int] = []
        if f is not None:
            rows = code.instructions(f)
            addrs = [i.addr for i in rows]
            i = bisect.bisect_right(addrs, at) - 1
            if at not in addrs and i >= 0 and at < addrs[i] + len(rows[i].bytes) // 2:
                raise answers.bad("address", f"{hex(at)} is inside the instruction that starts at {hex(addrs[i])}")
            block = max((b[0] for b in f.blocks if b[0] <= at < b[0] + b[1]), default=at)
            for row in rows:
                if block <= row.addr < at:
                    self.code.symbolizer.details(row.kind, row.mnemonic, row.operands, row.jump, row.ptr, pages)
            site = code.indirect.sites(f, rows).get(at)
            if site is not None:
                targets = list(site.targets)
        op = instruction_item(p, at)
        if not op:
            raise answers.bad("address", f"no instruction decodes at {hex(at)}")
        kind, mnemonic = str(op.get("type") or ""), str(op.get("mnemonic") or "")
        text = str(op.get("opcode") or "")
        operands = text.partition(" ")[2].strip()
        jump, ptr = integer(op.get("jump")), integer(op.get("ptr"))
        details = self.code.symbolizer.details(kind, mnemonic, operands, jump, ptr, dict(pages))
        details = operand_details(op, details)
        flow = flow_of(kind, mnemonic)
        size = integer(op.get("size")) or 0
        if jump is not None and flow in ("call", "jump", "conditional_jump"):
            targets = [jump]
        elif kind in INDIRECT_CALLS or kind in JUMP_TYPES:
            slot = ptr if ptr in p.import_slots else None
            if slot is not None:
                targets = [p.imports.get(p.import_slots[slot], slot)]
        reads, writes = registers(op, details)
        result = InstructionFacts(
            address=hex(at),
            size=size,
            bytes=str(op.get("bytes") or ""),
            mnemonic=mnemonic,
            operands=operands,
            text=text,
            symbolized=symbolized_text(mnemonic, details, kind in BRANCH_TYPES),
            procedure=None if f is None else f.ref(),
            flow=flow,
            targets=[hex(t) for t in sorted(set(targets))],
            fallthrough=None if flow in ("jump", "return", "halt") else hex(at + size),
            operand_details=details,
            reads=reads,
            writes=writes,
            groups=sorted({g for g in (str(op.get("family") or ""), kind) if g}),
        )
        return result, {"radare2_type": kind, "esil": op.get("esil")}

    # -- resolve_native_call_targets -----------------------------------------------------------------

    def call_targets(self, params: Arguments) -> tuple[Any, Any]:
        p, code = self.p, self.code
        f = p.select(params)
        sites = code.indirect.sites(f, code.instructions(f))
        rows: dict[int, PendingSite] = {}
        for insn in code.code_of(f):
            site = sites.get(insn.addr)
            entries = code._call_targets(f, insn)
            if site is not None and site.kind == "jump-table":
                rows[insn.addr] = PendingSite(
                    hex(insn.addr),
                    "computed-jump",
                    insn.text,
                    [CallTarget(address=hex(t), name=p.name_at(t), provenance="jump-table") for t in site.targets],
                )
                continue
            if not entries:
                continue
            indirect = any(a is None for a, _, _ in entries)
            kind = "indirect" if indirect else entries[0][2] if entries[0][2] == "import" else "direct"
            provenance = "pointer-table" if indirect else "import" if kind == "import" else "direct"
            row = rows.setdefault(insn.addr, PendingSite(hex(insn.addr), kind, insn.text, []))
            for a, name, _ in entries:
                if a is not None and all(t.address != hex(a) for t in row.targets):
                    row.targets.append(CallTarget(address=hex(a), name=name, provenance=provenance))
        site_param = params.get("address")
        if site_param is not None:
            at = answers.parse_address(site_param)
            if at not in rows:
                raise answers.bad("address", f"{hex(at)} is not a call or dispatch site of {f.name}")
            rows = {at: rows[at]}
        out = [rows[addr].finished() for addr in sorted(rows)]
        return {
            "procedure": f.ref(),
            "call_sites": out,
            "unresolved_count": sum(1 for r in out if r.status == "unresolved"),
        }, None

    # -- inspect_native_data_type --------------------------------------------------------------------

    def data_type(self, params: Arguments) -> tuple[Any, Any]:
        p = self.p
        p.require_analysis()
        at = self._mapped(params.get("address"))
        strings = {s.addr: s.item for s in p.strings()}
        pointee = self.code.indirect.slots().get(at)
        symbol = next(
            (s for s in p.symbols if s.get("vaddr") == at and s.get("type") == "OBJ" and not s.get("is_imported")),
            None,
        )
        proc = p.by_addr.get(at)
        address, name = hex(at), p.name_at(at)
        if at in strings:
            s = strings[at]
            kind = answers.string_type(s.encoding, s.byte_length)
            return DataInspection(address=address, name=name, type=kind, value=s.value, source="analysis"), None
        if pointee is not None:
            pointer = TypeRow(name="pointer", kind="pointer", size=p.word, target=hex(pointee))
            out = DataInspection(
                address=address,
                name=name,
                type=pointer,
                value=hex(pointee),
                target_name=p.name_at(pointee),
                source="analysis",
            )
        elif proc is not None and proc.blocks:
            code = TypeRow(name="code", kind="function", size=proc.size)
            out = DataInspection(address=address, name=name, type=code, source="analysis")
        elif symbol is not None and (size := integer(symbol.get("size")) or 0):
            sized = TypeRow(
                name=f"undefined{size}" if size in (1, 2, 4, 8) else f"byte[{size}]", kind="undefined", size=size
            )
            out = DataInspection(address=address, name=name, type=sized, source="symbol")
        else:
            unknown = TypeRow(name="undefined", kind="undefined", size=1)
            out = DataInspection(address=address, name=name, type=unknown, source="analysis")
        return out, None
