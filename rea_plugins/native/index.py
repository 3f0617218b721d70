"""The procedure inventory and the whole-program index of one binary, computed from its bytes alone.

``compute_index`` is a pure function of (model, file bytes, limits): its result (``ProgramIndex``, plain
msgspec values) is kept in the analysis cache (rea_plugins.native.store). ``Analysis`` holds the state both
it and the in-process ``Program`` share.

Cost: one batched sweep over the code, then work in the number of branches and references; discovery
rounds touch only procedures found in the previous round, and names are resolved once, at the end.
"""

from __future__ import annotations

import array
import bisect
import itertools
import re
import time
from collections.abc import Callable
from typing import Any
from typing import NamedTuple
from typing import Protocol

import msgspec

from rea.plugin import ReaError
from rea.plugin import golang
from rea_plugins.native import assist as second_core
from rea_plugins.native.assist import Assist
from rea_plugins.native.assist import Pending
from rea_plugins.native.assist import SweepJob
from rea_plugins.native.assist import SweptFacts
from rea_plugins.native.disasm import CALL
from rea_plugins.native.disasm import COND
from rea_plugins.native.disasm import FALL
from rea_plugins.native.disasm import JUMP
from rea_plugins.native.disasm import RET
from rea_plugins.native.disasm import FlowReader
from rea_plugins.native.disasm import Insn
from rea_plugins.native.disasm import decode
from rea_plugins.native.disasm import make_decoder
from rea_plugins.native.image import Image
from rea_plugins.native.limits import Limits as Limits  # re-exported: the index's callers name it here
from rea_plugins.native.model import Model
from rea_plugins.native.model import Region
from rea_plugins.native.pointers import Slots
from rea_plugins.native.pointers import _elf_type as elf_type
from rea_plugins.native.pointers import find_slots
from rea_plugins.native.sweep import DATA
from rea_plugins.native.sweep import FAR
from rea_plugins.native.sweep import FLOW
from rea_plugins.native.sweep import NARROW_END
from rea_plugins.native.sweep import WIDE
from rea_plugins.native.sweep import BudgetExceeded
from rea_plugins.native.sweep import Facts
from rea_plugins.native.sweep import Sweeper
from rea_plugins.native.sweep import descend
from rea_plugins.native.sweep import table_targets


class Proc:
    """A procedure: start, name, kind (local|import|thunk|external), its end once known, and provenance."""

    __slots__ = ("_name", "address", "end", "kind", "name_source", "part_of", "source")

    def __init__(
        self,
        address: int,
        name: str,
        kind: str,
        end: int | None,
        source: str,
        name_source: str = "generated",
        part_of: int | None = None,
    ) -> None:
        self.address = address
        self.name = name
        self.kind = kind
        self.end = end
        self.source = source  # how the start was found
        self.name_source = name_source  # symbol | import | entry-heuristic | parent | generated
        self.part_of = part_of  # the parent procedure's start, for a split-off part (gcc's foo.cold)

    @property
    def name(self) -> str:
        held = self._name
        return held if held is not None else f"sub_{self.address:x}"

    @name.setter
    def name(self, value: str) -> None:
        # ``sub_<address>`` is made when read, not held: a stripped chromium has 600 k of them (~36 MB of strings).
        self._name = None if value[:4] == "sub_" and value == f"sub_{self.address:x}" else value

    @property
    def made_name(self) -> bool:
        """Whether the name is ``sub_<address>`` (not held: ``Names`` finds it by its address)."""
        return self._name is None


class Names:
    """Procedures by name, the first by address for a name: a ``sub_<address>`` name is not a key but found through
    its address (``by_addr``), so a stripped program's hundreds of thousands of them cost nothing here."""

    __slots__ = ("by_addr", "named")

    def __init__(self, by_addr: dict[int, Proc]) -> None:
        self.named: dict[str, Proc] = {}
        self.by_addr = by_addr

    def get(self, name: str) -> Proc | None:
        p = self.named.get(name)
        if p is None and name[:4] == "sub_" and _HEX.fullmatch(name, 4):
            q = self.by_addr.get(int(name[4:], 16))
            if q is not None and q.made_name and q.name == name:
                return q
        return p

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def setdefault(self, name: str, p: Proc) -> None:
        if not p.made_name or p.name != name:
            self.named.setdefault(name, p)

    def __setitem__(self, name: str, p: Proc) -> None:
        self.named[name] = p


class Ref(NamedTuple):
    src: int
    dst: int | None
    kind: str
    proc: int
    name: str | None


class ProcRecord(msgspec.Struct, array_like=True, frozen=True):
    address: int
    end: int | None
    kind: str
    name: str
    source: str
    name_source: str
    part_of: int | None


class RefTable(msgspec.Struct, frozen=True):
    """References as four parallel columns (native-endian int32 or int64 arrays as bytes, a column's width its
    length over the rows, and one byte per kind), ordered by procedure then source address; ``dst`` is -1 for an
    unknown target, ``kind`` indexes ``REF_KINDS`` (``column`` reads one)."""

    src: bytes
    dst: bytes
    kind: bytes
    proc: bytes


def _go_functions(model: Model, image: Image) -> list[golang.GoFunction]:
    """The functions of a Go binary's pclntab (rea.operations.golang); none when it has none or it is damaged."""
    sections = [golang.Section(r.name, r.start, r.file_offset, r.file_size) for r in model.sections if r.file_size]
    try:
        table = golang.find_pclntab(image.data, sections)
    except golang.GoFormatError:
        return []
    return [] if table is None else table.functions


class ProgramIndex(msgspec.Struct, frozen=True, kw_only=True):
    """The whole-program index: every procedure (discovered ones included) and its references.

    ``flow`` holds calls and jumps (what the inventory needs); ``data`` the references to data, or None
    when they were not asked for yet (``Analysis.data_refs`` adds them).
    """

    procs: list[ProcRecord]
    flow: RefTable
    data: RefTable | None
    instructions: int
    discovery: bool


REF_KINDS: tuple[str, ...] = ("call", "jump", "data", "read", "write", "indirect", "computed", "external")
_KIND_CODE = {k: i for i, k in enumerate(REF_KINDS)}
_CALL, _JUMP, _DATA, _READ, _WRITE, _INDIRECT, _COMPUTED, _EXTERNAL = range(8)
STUB_SECTIONS = frozenset({".plt", ".plt.sec", ".plt.got", ".iplt", "__TEXT,__stubs", "__TEXT,__auth_stubs"})
_HEX = re.compile(r"[0-9a-f]+")
_COLD_NAME = re.compile(r"^(.+)\.cold(?:\.\d+)?$")
_START_MAIN = frozenset({"__libc_start_main", "__uClibc_main", "__libc_start_main_impl"})
_X86_ARG0 = re.compile(r"^[re]di, ")
_X86_IMM_OPERAND = re.compile(r"^[re]di, (0x[0-9a-f]+)$")
_PE_MAIN_ARGS = (frozenset({"ecx", "rcx"}), frozenset({"rdx", "edx"}), frozenset({"r8", "r8d"}))


class Progress(Protocol):
    """``CallContext.progress``: a message, with ``done`` of ``total`` where the size is known."""

    def __call__(self, message: str, *, done: int | None = None, total: int | None = None) -> None: ...


# A sweep over a mapped file drops the pages it has read every this many bytes (``Image.release``).
RELEASE_BYTES = 16 << 20
NO_PROCEDURE = -1  # the procedure of a reference from data (a pointer slot)


def overdue(what: str, deadline: float) -> ReaError:
    return ReaError(
        "provider_timeout",
        f"{what} did not finish within {deadline:.0f} s",
        remediation="Query one procedure at a time, or open the target with a deeper provider.",
        details={"deadline_s": deadline, "phase": what},
    )


def too_big(what: str, limit: int, **details: Any) -> ReaError:
    return ReaError(
        "resource_constraint",
        f"{what} exceeds the native provider's safety limit of {limit}",
        remediation="Narrow the request, or open the target with a deeper provider for whole-program work.",
        details={"limit": limit, **details},
    )


class Analysis:
    """Inventory, extents and references of one image; the index builder and the lazy paths share it."""

    def __init__(self, image: Image, limits: Limits) -> None:
        self.image = image
        self.limits = limits
        self.model: Model = image.model
        self._sweeper: Sweeper | None = None
        self._md: Any = None
        self.import_slots: dict[int, str] = {i.slot: i.name for i in self.model.imports if i.slot is not None}
        defined = {s.name: s.address for s in self.model.symbols if s.kind == "function"}
        # Slots of functions the binary defines itself, called through its own PLT: slot -> (name, code).
        self.local_slots: dict[int, tuple[str, int]] = {
            i.slot: (i.name, defined[i.name]) for i in self.model.plt_locals if i.slot is not None and i.name in defined
        }
        self.stubs: dict[int, str] = {}
        self.local_stubs: dict[int, str] = {}
        self.procs: list[Proc] = []
        self.starts: list[int] = []
        self.by_addr: dict[int, Proc] = {}
        self.by_name = Names(self.by_addr)
        self._slots: Slots | None = None
        # Sends a flow sweep's tail to the parse worker (``assist``), given the file's path and SHA-256: set by the
        # program when the worker runs and the server holds the whole file.
        self.assist: Assist | None = None
        self.assist_file: tuple[str, Callable[[], str]] | None = None
        # What the worker is sent next, after the flow sweep's tail (given its job, or None when there is none).
        self.then: Callable[[Pending[Any] | None], None] | None = None
        # Every address the image maps fits in int32: fact and reference columns hold 4 bytes an address, not 8.
        spans = [*image.regions, *image.code_regions]
        self.narrow = all(r.start >= 0 and r.start + max(r.size, r.file_size) < NARROW_END for r in spans)

    @property
    def md(self) -> Any:
        """A plain capstone decoder (stops at undecodable bytes) for reading a few instructions."""
        if self._md is None:
            self._md = make_decoder(self.image.arch, self.model.bits)
        return self._md

    @property
    def sweeper(self) -> Sweeper:
        if self._sweeper is None:
            self._sweeper = Sweeper(self.image.arch, self.model.bits, self.image.mapped, self.image.read, self.narrow)
        return self._sweeper

    # -- inventory -------------------------------------------------------------------------------

    def install(self, procs: list[Proc]) -> None:
        procs.sort(key=lambda p: p.address)
        self.procs = procs
        self.starts = [p.address for p in procs]
        # New maps, each built after the old one is dropped (a big program holds hundreds of thousands of entries).
        self.by_addr = {}
        self.by_addr = {p.address: p for p in procs}
        self.by_name = Names(self.by_addr)
        named = self.by_name.named
        for p in procs:
            if not p.made_name:
                named.setdefault(p.name, p)

    def proc_records(self) -> list[ProcRecord]:
        """The procedures as an index stores them."""
        return [ProcRecord(p.address, p.end, p.kind, p.name, p.source, p.name_source, p.part_of) for p in self.procs]

    def adopt(self, index: ProgramIndex) -> None:
        """Take the procedures of an index built earlier (the same bytes, slice and limits)."""
        self.install([Proc(r.address, r.name, r.kind, r.end, r.source, r.name_source, r.part_of) for r in index.procs])

    def inventory(self, check: Callable[[str], None] | None = None) -> list[Proc]:
        """Procedures from symbols, import stubs and slots, the entry point (and main), exception tables."""
        model, image = self.model, self.image
        self._scan_stubs()
        found: dict[int, Proc] = {}

        def add(address: int, name: str | None, kind: str, size: int, source: str, name_source: str) -> None:
            if kind == "local" and image.code_region_at(address) is None:
                return
            cur = found.get(address)
            if cur is None:
                if len(found) >= self.limits.max_procedures:
                    raise too_big("procedure count", self.limits.max_procedures, resource="procedures")
                found[address] = Proc(
                    address,
                    name or "",
                    kind,
                    address + size if size > 0 else None,
                    source,
                    name_source if name else "generated",
                )
                return
            if name and not cur.name:
                cur.name = name
                cur.name_source = name_source
            if size > 0 and cur.end is None:
                cur.end = address + size

        named = sorted(
            (
                s
                for s in model.symbols
                if s.kind == "function" or (s.exported and image.code_region_at(s.address) is not None)
            ),
            key=lambda s: (s.address, not s.exported, s.name.startswith("_"), len(s.name), s.name),
        )
        for s in named:
            add(s.address, s.name, "local", s.size, "symbol", "symbol")
        for go in _go_functions(model, image):  # a stripped Go binary still names its functions in pclntab
            add(go.start, go.name, "local", go.end - go.start, "pclntab", "pclntab")
        stub_starts = sorted({*self.stubs, *self.local_stubs})
        for addr, name in sorted(self.stubs.items()):
            add(addr, name, "import", self._stub_size(addr, stub_starts), "stub", "import")
        for addr, name in sorted(self.local_stubs.items()):
            add(addr, f"{name}@plt" if name else None, "thunk", self._stub_size(addr, stub_starts), "stub", "symbol")
        stubbed = set(self.stubs.values())
        for imp in model.imports:
            if imp.slot is not None and not imp.data and imp.name not in stubbed and image.mapped(imp.slot):
                add(imp.slot, imp.name, "import", image.pointer, "import-slot", "import")
        if model.entry is not None:
            add(model.entry, None, "local", 0, "entry", "generated")
        for n, (start, end) in enumerate(model.unwind):
            add(start, None, "local", end - start, "exception-table", "generated")
            if check is not None and n % 4096 == 0:
                check("building procedure inventory")
        for p in found.values():
            if not p.name:
                p.name = "entry" if p.address == model.entry else f"sub_{p.address:x}"
        self.install(list(found.values()))
        if model.format != "elf":  # ELF import thunks are PLT stubs, found by _scan_stubs
            for p in self.procs:
                if p.kind == "local" and (p.end is None or p.end - p.address <= 16):
                    self._detect_thunk(p)
        self._name_main()
        self._link_named_parts()
        return self.procs

    def _stub_size(self, address: int, starts: list[int]) -> int:
        """One stub: up to the next stub or the section's end, at most 16 bytes (32 for arm64's PLT0)."""
        region = self.image.code_region_at(address)
        end = region.start + region.file_size if region is not None else address + 16
        i = bisect.bisect_right(starts, address)
        if i < len(starts):
            end = min(end, starts[i])
        first = region is not None and region.start == address and region.name in (".plt", ".iplt")
        return max(1, min(end - address, 32 if first and self.model.arch == "arm64" else 16))

    def _scan_stubs(self) -> None:
        flow = FlowReader(self.model.arch, self.image.mapped)
        for r in self.image.code_regions:
            if r.name not in STUB_SECTIONS:
                continue
            entry: int | None = None
            for insn in decode(self.md, self.image.code(r.start, r.start + r.file_size), r.start):
                if entry is None and insn.mnemonic not in ("nop", "xchg"):  # padding after the previous stub
                    entry = insn.address
                f = flow(insn)
                if f.cls in (JUMP, RET):
                    if f.cls == JUMP and entry is not None and f.slot is not None:
                        if f.slot in self.import_slots:
                            self.stubs.setdefault(entry, self.import_slots[f.slot])
                        elif f.slot in self.local_slots:
                            self.local_stubs.setdefault(entry, self.local_slots[f.slot][0])
                        elif self.image.mapped(f.slot):
                            self.local_stubs.setdefault(entry, "")  # a slot bound by a GOT relocation
                    entry = None
                    flow.reset()

    def _detect_thunk(self, p: Proc) -> None:
        code = self.image.code(p.address, p.address + 16)
        flow = FlowReader(self.model.arch, self.image.mapped)
        for insn in decode(self.md, code, p.address, 4):
            f = flow(insn)
            if f.cls == JUMP:
                target_name = self.import_slots.get(f.slot) if f.slot is not None else None
                if target_name is not None:
                    p.kind = "thunk"
                    p.end = insn.address + insn.size
                    if p.name_source == "generated":
                        p.name = target_name
                        p.name_source = "import"
                return
            if f.cls != FALL or insn.mnemonic not in ("endbr64", "endbr32", "nop", "adrp", "ldr", "bti"):
                return

    # -- main from the entry point -----------------------------------------------------------------

    def _name_main(self) -> None:
        """Name ``main`` on a binary without the symbol: the first argument the entry passes to the C runtime."""
        model = self.model
        if model.entry is None or "main" in self.by_name or "_main" in self.by_name:
            return
        address: int | None = None
        if model.format == "elf" and model.arch in ("x86_64", "arm64"):
            address = self._elf_main(model.entry)
        elif model.format == "pe" and model.arch == "x86_64":
            address = self._pe_main(model.entry)
        if address is None or self.image.code_region_at(address) is None:
            return
        p = self.by_addr.get(address)
        if p is None:
            p = Proc(address, "main", "local", None, "entry-heuristic", "entry-heuristic")
            self.install([*self.procs, p])
        elif p.kind == "local" and p.name_source == "generated":
            p.name, p.name_source = "main", "entry-heuristic"
            self.by_name.setdefault("main", p)
        else:
            return
        self.by_name["main"] = p

    def _run(self, start: int, max_bytes: int = 512) -> list[Insn]:
        return list(decode(self.md, self.image.code(start, start + max_bytes), start, 128))

    def _callee_name(self, target: int | None, slot: int | None) -> str | None:
        if target is not None:
            return self.stubs.get(target) or (self.by_addr[target].name if target in self.by_addr else None)
        return self.import_slots.get(slot) if slot is not None else None

    def _elf_main(self, entry: int) -> int | None:
        flow = FlowReader(self.model.arch, self.image.mapped)
        run = self._run(entry)
        arg0: int | None = None
        for n, insn in enumerate(run):
            f = flow(insn)
            if f.cls == CALL:
                name = self._callee_name(f.target, f.slot)
                ends = n + 1 < len(run) and run[n + 1].mnemonic in ("hlt", "ud2")
                if name is not None and name.split("@")[0] in _START_MAIN:
                    return arg0
                if name is None and ends and not any(i.name in _START_MAIN for i in self.model.imports):
                    return arg0  # a static binary: _start calls the runtime's start routine, then halts
                arg0 = None
                continue
            if f.cls in (JUMP, RET):
                return None
            if self.model.arch == "x86_64":
                if _X86_ARG0.match(insn.op_str):
                    arg0 = None
                    imm = _X86_IMM_OPERAND.match(insn.op_str)
                    if insn.mnemonic == "lea" and f.data:
                        arg0 = f.data[0][0]
                    elif insn.mnemonic == "mov" and imm:
                        arg0 = int(imm.group(1), 16)
            else:
                regs = flow.state.regs
                if "x0" in regs:
                    arg0 = regs["x0"]
                elif "x0@slot" in regs:
                    arg0 = self.image.pointer_at(regs["x0@slot"]) or None
                elif insn.op_str.startswith(("x0,", "w0,")):
                    arg0 = None
        return None

    def _pe_main(self, entry: int) -> int | None:
        """mingw-w64: the entry calls __tmainCRTStartup, which calls main(argc, argv, envp) from globals."""
        seen: set[int] = set()
        todo = [entry]
        for _ in range(3):
            nxt: list[int] = []
            for start in todo:
                if start in seen:
                    continue
                seen.add(start)
                found, calls = self._pe_main_call(start)
                if found is not None:
                    return found
                nxt.extend(calls[:2])
            todo = nxt
        return None

    def _pe_main_call(self, start: int) -> tuple[int | None, list[int]]:
        p = self.by_addr.get(start)
        end = p.end if p is not None and p.end is not None else start + 4096
        flow = FlowReader(self.model.arch, self.image.mapped)
        loaded: set[str] = set()
        calls: list[int] = []
        for insn in decode(self.md, self.image.code(start, min(end, start + 8192)), start):
            f = flow(insn)
            if f.cls == CALL:
                target = self.by_addr.get(f.target) if f.target is not None else None
                local = (
                    f.target is not None
                    and self.image.code_region_at(f.target) is not None
                    and (target is None or target.kind == "local")
                )
                if local and f.target is not None:
                    if all(loaded & regs for regs in _PE_MAIN_ARGS):
                        return f.target, calls
                    calls.append(f.target)
                loaded.clear()
                continue
            if insn.mnemonic == "mov" and "[rip" in insn.op_str:
                loaded.add(insn.op_str.split(",")[0])
            elif insn.op_str and not insn.op_str.startswith("["):
                loaded.discard(insn.op_str.split(",")[0])
        return None, calls

    def _link_named_parts(self) -> None:
        for p in self.procs:
            m = _COLD_NAME.match(p.name) if p.name_source == "symbol" else None
            parent = self.by_name.get(m.group(1)) if m else None
            if parent is not None and parent is not p:
                p.part_of = parent.address

    # -- extents ---------------------------------------------------------------------------------

    def limit_of(self, p: Proc) -> int:
        """Where ``p`` must end at the latest: the next procedure start, or its code region's end."""
        i = bisect.bisect_right(self.starts, p.address)
        region_end = self.image.code_end(p.address)
        return min(self.starts[i], region_end) if i < len(self.starts) else region_end

    def extent(self, p: Proc, facts: Facts | None = None) -> int:
        """End of ``p`` by recursive descent (over ``facts`` when given, else over a sweep of its range)."""
        if p.kind != "local" and p.kind != "thunk":
            return p.address + self.image.pointer
        limit = self.limit_of(p)
        if limit <= p.address:
            return p.address + 1
        if facts is None:
            facts = self.sweep_range(p.address, limit)
        try:
            d = descend(facts, p.address, limit, self.limits.max_function_instructions)
        except BudgetExceeded:
            raise too_big(
                "instructions in one procedure",
                self.limits.max_function_instructions,
                resource="instructions",
                procedure=f"0x{p.address:x}",
            ) from None
        if d.computed:
            # An unresolved computed jump hides code: claim up to the next procedure, minus padding.
            return max(d.end, self._trim_padding(p.address, limit))
        return d.end

    def _trim_padding(self, start: int, limit: int) -> int:
        code = self.image.code(start, limit)
        end = len(code)
        while end > 0 and code[end - 1] in (0x90, 0xCC, 0x00):
            end -= 1
        return start + end

    def sweep_range(self, start: int, end: int) -> Facts:
        code = self.image.code(start, end)
        facts, _ = self.sweeper.sweep(code, start, [start], self.image.code_end)
        return facts

    # -- references ------------------------------------------------------------------------------

    def import_address(self, name: str) -> int | None:
        p = self.by_name.get(name)
        return p.address if p is not None and p.kind == "import" else None

    def emit_refs(
        self,
        facts: Facts,
        span: range,
        start: int,
        end: int,
        src: list[int] | array.array[int],
        dst: list[int] | array.array[int],
        kinds: bytearray,
    ) -> None:
        """Append (source, target or -1, kind code) of the facts ``span`` of one procedure ``[start, end)``."""
        mapped = self.image.mapped
        slots = self.import_slots
        local = self.local_slots
        addrs, classes, targets, extras = facts.addr, facts.cls, facts.target, facts.extra.get
        add_src, add_dst, add_kind = src.append, dst.append, kinds.append
        for i in span:
            a = addrs[i]
            cls = classes[i]
            extra = extras(i)
            if cls in (CALL, JUMP, COND):
                kind = _CALL if cls == CALL else _JUMP
                t = targets[i]
                slot = extra.slot if extra is not None else None
                if t >= 0:
                    add_src(a)
                    add_dst(t)
                    add_kind(kind)
                elif t == WIDE:  # a target beyond a narrow column (malformed code)
                    add_src(a)
                    add_dst(facts.wide[i])
                    add_kind(kind)
                elif t == FAR:  # a branch beyond the address space (malformed code): it names nothing
                    pass
                elif slot is not None and slot in slots:
                    imp = self.import_address(slots[slot])
                    src.extend((a, a))
                    dst.extend((slot, imp if imp is not None else slot))
                    kinds.extend((_EXTERNAL, kind))
                elif slot is not None and slot in local:
                    src.extend((a, a))
                    dst.extend((slot, local[slot][1]))
                    kinds.extend((_READ, kind))
                elif cls == JUMP and slot is None and (table := table_targets(extra, start, end)):
                    for t in dict.fromkeys(table):
                        add_src(a)
                        add_dst(t)
                        add_kind(_COMPUTED)
                else:
                    # A target known only at run time: the mapped slot it is read from, then the unknown target.
                    if slot is not None and mapped(slot):
                        add_src(a)
                        add_dst(slot)
                        add_kind(_READ)
                    add_src(a)
                    add_dst(-1)
                    add_kind(_COMPUTED if cls == JUMP else _INDIRECT)
            if extra is not None:
                for addr, kind_name in extra.data:
                    add_src(a)
                    add_dst(addr)
                    add_kind(_KIND_CODE[kind_name])

    def refs_alone(self, p: Proc, end: int) -> list[tuple[int, int, int]]:
        """One procedure's references, decoded on their own (no whole-program index)."""
        facts = self.sweep_range(p.address, end)
        src: list[int] = []
        dst: list[int] = []
        kinds = bytearray()
        self.emit_refs(facts, range(len(facts)), p.address, end, src, dst, kinds)
        return list(zip(src, dst, kinds, strict=True))

    # -- the whole-program index ---------------------------------------------------------------------

    def _sweep_all(
        self, want: int, what: str, progress: Progress | None, check: Callable[[str], None] | None
    ) -> tuple[Facts, int, Callable[[str], None]]:
        """One sweep over every code region (restarting at procedure starts), within the index deadline."""
        limits = self.limits
        total = sum(r.file_size for r in self.image.code_regions)
        allowed = limits.deadline_s(total)
        deadline = time.monotonic() + allowed
        done_bytes = 0

        def tick(phase: str) -> None:
            if check is not None:
                check(phase)
            if time.monotonic() > deadline:
                raise overdue(f"the whole-program {what}", allowed)

        facts = Facts(self.narrow)
        count = 0
        ordered = True  # one region's facts are in address order (a linear sweep): only regions may overlap
        for r in self.image.code_regions:
            lo = bisect.bisect_left(self.starts, r.start)
            hi = bisect.bisect_left(self.starts, r.start + r.file_size)
            base_done = done_bytes

            released = [0]

            def at(
                pos: int, name: str = r.name, base: int = base_done, start: int = r.start, done: list[int] = released
            ) -> None:
                tick(f"indexing {what}")
                if progress is not None:
                    progress(
                        f"index: decoding {name} for {what}, {(base + pos) >> 10} of {total >> 10} KiB",
                        done=(base + pos) >> 10,
                        total=total >> 10,
                    )
                if pos - done[0] >= RELEASE_BYTES:  # the swept pages leave the resident set as the sweep goes
                    self.image.release_code(start + done[0], start + pos - RELEASE_BYTES // 2)
                    done[0] = pos - RELEASE_BYTES // 2

            syncs = self.starts[lo:hi]
            region_facts, n = self._sweep_region(r, syncs, at, want)
            self.image.release_code(r.start, r.start + r.file_size)
            if len(facts) and len(region_facts) and region_facts.addr[0] < facts.addr[-1]:
                ordered = False
            facts.extend(region_facts)
            count += n
            done_bytes += r.file_size
            if count > limits.max_program_instructions:
                raise too_big(
                    f"decoded instructions for the whole-program {what}",
                    limits.max_program_instructions,
                    resource="instructions",
                )
        if not ordered:
            facts.sort()
        return facts, count, tick

    def _sweep_region(self, r: Region, syncs: list[int], at: Callable[[int], None], want: int) -> tuple[Facts, int]:
        """One code region's facts and instruction count; a large region's tail swept by the parse worker."""
        pending = self._assisted(r, syncs) if want == FLOW else None
        if self.then is not None and pending is not None:
            self.then(pending)
        view = self.image.code_view(r.start, r.start + r.file_size)
        stop = pending.job.keep_from if pending is not None else None
        # Assisted, each process decodes in its own thread: the second core runs the worker's sweep.
        facts, n = self.sweeper.sweep(view, r.start, syncs, self.image.code_end, at, want, stop, pending is None)
        if pending is None:
            return facts, n
        swept = pending.result(lambda: at(stop - r.start if stop is not None else 0))
        if swept is None:  # the worker failed: the tail is ours
            swept = second_core.sweep_job(pending.job, self.image.data)
        if swept.before < second_core.MIN_LEAD_INSTRUCTIONS:  # the tail's first windows would be short: all ours
            return self.sweeper.sweep(view, r.start, syncs, self.image.code_end, at, want)
        facts.extend(second_core.facts_of(swept, self.narrow))
        return facts, n + swept.count

    def _assisted(self, r: Region, syncs: list[int]) -> Pending[SweptFacts] | None:
        """The tail of code region ``r`` sent to the parse worker, when it is large enough to split."""
        if self.assist is None or self.assist_file is None or r.file_size < second_core.ASSIST_BYTES:
            return None
        if not second_core.shareable(self.image.data):
            return None
        end = r.start + r.file_size
        where = second_core.split(r.start, end, syncs)
        if where is None:
            return None
        path, digest = self.assist_file
        first = bisect.bisect_left(syncs, where[0])
        job = SweepJob(
            path=path,
            sha256=digest(),
            arch=self.image.arch,
            bits=self.model.bits,
            narrow=self.narrow,
            sections=self.model.sections,
            segments=self.model.segments,
            start=where[0],
            keep_from=where[1],
            end=end,
            syncs=syncs[first:],
        )
        return self.assist(job)

    def build(
        self,
        discover: bool,
        progress: Progress | None = None,
        check: Callable[[str], None] | None = None,
        data: bool = False,
    ) -> ProgramIndex:
        """Sweep all code once for flow, discover procedures (when ``discover``), attribute calls and jumps,
        link split-off parts; data references too when ``data``."""
        facts, count, tick = self._sweep_all(FLOW, "procedure index", progress, check)
        if self.then is not None:  # no tail was sent (or it was): the next job goes now
            self.then(None)
        if progress is not None:
            progress(f"index: {count} instructions decoded, {len(facts)} branches and path ends")
        self._extents(self.procs, facts, tick)
        if discover:
            self._discover(facts, tick, progress)
        facts.size = array.array("H")  # every extent is known: attributing reads no instruction sizes
        # Nor any file byte: the pages extents read (trimming padding after a computed jump) leave the resident set.
        self.image.release()
        refs = self._attribute(facts, tick)
        if progress is not None:
            progress(f"index: {len(refs.kind)} calls and jumps in {len(self.procs)} procedures")
        if discover:
            # Linking parts reads only the facts' addresses and classes: the other columns go first.
            facts.target, facts.extra, facts.wide = array.array("q"), {}, {}
            self._link_parts(refs, facts)
        del facts  # the sweep's columns are done with: release them before the table is made
        self.name_parts()
        self.install(self.procs)  # names by address order, exactly as when this index is adopted
        return ProgramIndex(
            procs=self.proc_records(),
            flow=refs.table(),
            data=self.data_refs(progress, check) if data else None,
            instructions=count,
            discovery=discover,
        )

    def data_refs(self, progress: Progress | None = None, check: Callable[[str], None] | None = None) -> RefTable:
        """References to data: from code (second sweep, over the final inventory and extents), then from the
        pointer slots in data (their procedure is -1: none)."""
        facts, _, tick = self._sweep_all(DATA, "data reference index", progress, check)
        refs = self._attribute(facts, tick)
        slots = self.slots()
        if len(slots) and refs.src.typecode != "q" and max(slots.slots) >= NARROW_END:
            refs.widen(len(refs.kind), everything=True)
        if len(slots) and refs.dst.typecode != "q" and max(slots.values) >= NARROW_END:
            refs.widen(len(refs.kind))
        refs.src.extend(array.array(refs.src.typecode, slots.slots))
        refs.dst.extend(array.array(refs.dst.typecode, slots.values))
        refs.kind.extend(itertools.repeat(_DATA, len(slots)))
        refs.proc.extend(itertools.repeat(NO_PROCEDURE, len(slots)))
        if progress is not None:
            progress(f"index: {len(refs.kind)} data references, {len(slots)} of them from pointer slots")
        return refs.table()

    def code_data_targets(self, check: Callable[[str], None] | None = None) -> frozenset[int] | None:
        """The code addresses the data references name (what ``data_refs`` would hold with a target in code),
        without the data reference table: a sweep that reads exactly only the instructions naming code, then
        the pointer slots. None where that sweep does not apply (not x86, or no raw capstone records)."""
        sweeper = self.sweeper
        if not sweeper.x86 or sweeper.raw is None:
            return None
        image = self.image
        total = sum(r.file_size for r in image.code_regions)
        allowed = self.limits.deadline_s(total)
        deadline = time.monotonic() + allowed

        released = [0, 0]  # the region's start, and how far into it the pages are released

        def at(pos: int) -> None:
            if check is not None:
                check("finding references to code")
            if time.monotonic() > deadline:
                raise overdue("the whole-program references to code", allowed)
            start, done = released
            if pos - done >= RELEASE_BYTES:  # the swept pages leave the resident set as the sweep goes
                image.release_code(start + done, start + pos - RELEASE_BYTES // 2)
                released[1] = pos - RELEASE_BYTES // 2

        def in_code(a: int) -> bool:
            return image.code_region_at(a) is not None

        found: set[int] = set()
        bounds = (
            min((r.start for r in image.code_regions), default=0),
            max((r.start + r.file_size for r in image.code_regions), default=0),
        )
        for r in image.code_regions:
            lo = bisect.bisect_left(self.starts, r.start)
            hi = bisect.bisect_left(self.starts, r.start + r.file_size)
            released[:] = [r.start, 0]
            src, dst = sweeper.code_refs(
                image.code_view(r.start, r.start + r.file_size), r.start, self.starts[lo:hi], in_code, bounds, at
            )
            for s, d in zip(src, dst, strict=True):
                # As ``_attribute`` keeps a reference: from inside a local procedure's or thunk's extent.
                i = bisect.bisect_right(self.starts, s) - 1
                p = self.procs[i] if i >= 0 else None
                if p is not None and p.kind in ("local", "thunk") and p.end is not None and s < p.end:
                    found.add(d)
            image.release_code(r.start, r.start + r.file_size)
        slots = self.slots()
        found.update(v for v in slots.values if in_code(v))
        return frozenset(found)

    def slots(self) -> Slots:
        """Pointer slots in data (relocations, init/fini arrays, known addresses in a fixed image)."""
        if self._slots is None:
            self._slots = find_slots(self.image, lambda: [*self.by_addr, *(s.address for s in self.model.symbols)])
        return self._slots

    def _extents(self, procs: list[Proc], facts: Facts, tick: Callable[[str], None]) -> None:
        for n, p in enumerate(procs):
            if p.end is None:
                p.end = self.extent(p, facts)
            if n % 1024 == 0:
                tick("computing procedure extents")

    def _seeds(self, facts: Facts, tick: Callable[[str], None]) -> dict[int, str]:
        """Starts the whole sweep gives before any procedure is followed: every direct call's target (the sweep
        is linear, so a callee only code that nothing known reaches calls is found too), and the code addresses
        the relocations store (vtables, callback tables): what a stripped binary with few unwind entries needs."""
        by_addr = self.by_addr
        seeds: dict[int, str] = {}
        classes, targets = facts.cls, facts.target
        marker = bytes([CALL])
        i = classes.find(marker)
        n = 0
        while i >= 0:
            t = targets[i]
            if t >= 0 and t not in by_addr:
                seeds[t] = "call-target"
            i = classes.find(marker, i + 1)
            n += 1
            if n % 65536 == 0:
                tick("discovering procedures")
        if not self._fixed():
            # A relocated ELF's slots never depend on what is known: they are found once, for this and for later.
            slots = self.slots() if self.model.format == "elf" else find_slots(self.image, tuple)
            for v in slots.values:
                if v not in by_addr:
                    seeds.setdefault(v, "code-pointer")
        return seeds

    def _fixed(self) -> bool:
        """A fixed image has no relocations to read code pointers from (its pointers are only matched, later)."""
        model = self.model
        if model.format == "elf":
            return model.endianness != "little" or elf_type(self.image) == 2
        return model.format != "pe"

    def _discover(self, facts: Facts, tick: Callable[[str], None], progress: Progress | None) -> None:
        """Call targets and jumps out of a procedure start new procedures; each round decodes only new ones.
        The first round also takes the whole sweep's seeds (``_seeds``)."""
        image = self.image
        classes, targets = facts.cls, facts.target
        pending = [p for p in self.procs if p.kind in ("local", "thunk")]
        rounds = 0
        seeds: dict[int, str] | None = self._seeds(facts, tick)
        while pending or seeds:
            rounds += 1
            found: dict[int, str] = seeds or {}
            seeds = None
            by_addr = self.by_addr
            for n, p in enumerate(pending):
                if n % 1024 == 0:
                    tick("discovering procedures")
                start = p.address
                end = p.end if p.end is not None else start
                for i in facts.span(start, end):
                    t = targets[i]
                    if t < 0 or t in by_addr:
                        continue
                    cls = classes[i]
                    if cls == CALL:
                        found[t] = "call-target"
                    elif (cls in (JUMP, COND)) and not start <= t < end:
                        found.setdefault(t, "tail-call" if cls == JUMP else "branch-target")
            fresh = [
                Proc(a, f"sub_{a:x}", "local", None, found[a])
                for a in sorted(found)
                if image.code_region_at(a) is not None and self._containing_known(a) is None
            ]
            if len(self.procs) + len(fresh) > self.limits.max_procedures:
                raise too_big("procedure count", self.limits.max_procedures, resource="procedures")
            if not fresh:
                break
            if self.model.format != "elf":  # a stripped PE's import thunks are found as call targets
                for p in fresh:
                    self._detect_thunk(p)
            self._insert(fresh)
            self._extents(fresh, facts, tick)
            if progress is not None:
                progress(f"index: discovery round {rounds}, {len(fresh)} new procedures, {len(self.procs)} in all")
            pending = fresh

    def _insert(self, fresh: list[Proc]) -> None:
        """Insert new procedures into the sorted inventory: a binary search and a memory move each, so a
        round costs in what it found (a long call chain found one procedure per round stays cheap); many at
        once are merged in bulk (one sort), never a memory move each."""
        if len(fresh) > 64 and len(fresh) * 16 > len(self.procs):
            self.install([*self.procs, *fresh])
            return
        for p in fresh:
            i = bisect.bisect_left(self.starts, p.address)
            self.starts.insert(i, p.address)
            self.procs.insert(i, p)
            self.by_addr[p.address] = p
            self.by_name.setdefault(p.name, p)

    def _containing_known(self, address: int) -> Proc | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0:
            return None
        p = self.procs[i]
        return p if p.end is not None and p.address <= address < p.end else None

    def _attribute(self, facts: Facts, tick: Callable[[str], None]) -> RefColumns:
        """Each procedure's references from the facts inside its extent, by procedure then address."""
        refs = RefColumns(self.narrow)
        for n, p in enumerate(self.procs):
            if n % 1024 == 0:
                tick("attributing references")
            if p.kind not in ("local", "thunk"):
                continue
            end = p.end if p.end is not None else p.address
            span = facts.span(p.address, end)
            if not span:
                continue
            before = len(refs.kind)
            for wider in (None, False, True):  # a value beyond int32: the targets widen first, then every column
                if wider is not None:
                    refs.widen(before, wider)
                try:
                    self.emit_refs(facts, span, p.address, end, refs.src, refs.dst, refs.kind)
                    refs.proc.extend(itertools.repeat(p.address, len(refs.kind) - before))
                    break
                except OverflowError:
                    if wider:
                        raise
        return refs

    def _link_parts(self, refs: RefColumns, facts: Facts) -> None:
        """Link split-off parts (gcc's ``foo.cold``) found only by structure to their parent.

        A part is entered only by jumps from one other procedure, never called or referenced as data,
        and either jumps back into that procedure's body, or is entered conditionally and never returns.
        """
        entry = self.model.entry
        candidates = {
            p.address
            for p in self.procs
            if p.kind == "local" and p.name_source == "generated" and p.part_of is None and p.address != entry
        }
        if not candidates:
            return
        # Part start -> the one procedure jumping into it (-1 once a second one does), and those jumps' sources
        # while there is one: a chromium has millions of jumps, so nothing per jump is kept beyond these.
        parent_of: dict[int, int] = {}
        sources: dict[int, list[int]] = {}
        other: set[int] = set()  # candidates reached some other way than a jump
        # Only rows into a candidate matter: found at C speed, so the loop reads a few of a chromium's million rows.
        all_src, all_dst, all_kind, all_proc = refs.src, refs.dst, refs.kind, refs.proc
        for i in itertools.compress(range(len(all_kind)), map(candidates.__contains__, all_dst)):
            src, dst, kind, proc = all_src[i], all_dst[i], all_kind[i], all_proc[i]
            if kind != _JUMP:
                other.add(dst)
                continue
            if proc != dst:
                known = parent_of.get(dst)
                if known is None:
                    parent_of[dst] = proc
                    sources[dst] = [src]
                elif known == proc:
                    sources[dst].append(src)
                elif known != -1:
                    parent_of[dst] = -1
                    del sources[dst]
        rows, kinds, targets = refs.proc, refs.kind, refs.dst
        for start, owner in parent_of.items():
            if owner == -1 or start in other:
                continue
            parent = self.by_addr.get(owner)
            if parent is None or parent.kind != "local" or parent.part_of is not None or parent.end is None:
                continue
            # The part's own jumps: its rows (the columns are by procedure), any landing inside the parent's body.
            lo = bisect.bisect_left(rows, start)
            hi = bisect.bisect_right(rows, start, lo)
            returns_home = any(kinds[i] == _JUMP and parent.address < targets[i] < parent.end for i in range(lo, hi))
            conditional = any(_is_cond(facts, src) for src in sources[start])
            c = self.by_addr[start]
            if returns_home or (conditional and not self._returns(c, facts)):
                c.part_of = parent.address

    def _returns(self, p: Proc, facts: Facts) -> bool:
        end = p.end if p.end is not None else p.address
        return any(facts.cls[i] == RET for i in facts.span(p.address, end))

    def name_parts(self) -> None:
        """Name each stripped part after its parent: ``main.cold``, then ``main.cold.1``, ..."""
        count: dict[int, int] = {}
        for p in self.procs:
            if p.part_of is None or p.name_source != "generated":
                continue
            parent = self.by_addr.get(p.part_of)
            if parent is None:
                continue
            n = count.get(parent.address, 0)
            count[parent.address] = n + 1
            p.name = f"{parent.name}.cold" if n == 0 else f"{parent.name}.cold.{n}"
            p.name_source = "parent"
            self.by_name.setdefault(p.name, p)


class RefColumns:
    """References as compact parallel columns while the index is built: int32 addresses where the image is narrow,
    widened to int64 the first time a value does not fit (``widen``)."""

    def __init__(self, narrow: bool = False) -> None:
        code = "i" if narrow else "q"
        self.src = array.array(code)
        self.dst = array.array(code)
        self.kind = bytearray()
        self.proc = array.array(code)

    def widen(self, rows: int, everything: bool = False) -> None:
        """Keep the first ``rows`` rows (an append that overflowed may have left the columns uneven), the targets as
        int64 (what overflows: a branch beyond the image), or every column when ``everything``."""
        self.dst = array.array("q", self.dst[:rows])
        del self.kind[rows:]
        if everything:
            self.src = array.array("q", self.src[:rows])
            self.proc = array.array("q", self.proc[:rows])
        else:
            del self.src[rows:]
            del self.proc[rows:]

    def table(self) -> RefTable:
        """The columns as a table; each column is released as soon as it is copied (a peak of one column)."""
        src = self.src.tobytes()
        self.src = array.array("q")
        dst = self.dst.tobytes()
        self.dst = array.array("q")
        proc = self.proc.tobytes()
        self.proc = array.array("q")
        kind = bytes(self.kind)
        self.kind = bytearray()
        return RefTable(src=src, dst=dst, kind=kind, proc=proc)


def column(raw: bytes, rows: int) -> memoryview:
    """A reference table's column as integers: int32 or int64, by its length over the table's rows."""
    return memoryview(raw).cast("i" if rows and len(raw) == 4 * rows else "q")


def _is_cond(facts: Facts, src: int) -> bool:
    """Whether the branch at ``src`` is conditional (facts are by address)."""
    i = bisect.bisect_left(facts.addr, src)
    return i < len(facts) and facts.addr[i] == src and facts.cls[i] == COND


def compute_index(
    model: Model,
    content: Any,
    limits: Limits,
    discover: bool = True,
    data: bool = True,
    progress: Progress | None = None,
    check: Callable[[str], None] | None = None,
) -> ProgramIndex:
    """The whole-program index of the binary whose file bytes are ``content`` (pure: safe to run in the
    parse worker and to cache by content digest). ``discover`` (call-target discovery, on at every size) and
    ``data`` (the data references) say what it covers."""
    image = Image(model, content)
    analysis = Analysis(image, limits)
    analysis.inventory(check)
    return analysis.build(discover, progress, check, data)
