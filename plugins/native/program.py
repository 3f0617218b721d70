"""One open binary: memory map, procedure inventory, extents, blocks, references and strings (lazy, cached)."""

from __future__ import annotations

import bisect
import itertools
import mmap
import operator
import os
import re
import time
from collections import OrderedDict
from typing import Any, NamedTuple

import msgspec
from rea_plugins.native.disasm import (
    CALL,
    COND,
    FALL,
    JUMP,
    RET,
    FlowReader,
    Insn,
    decode,
    make_decoder,
    x86_jump_table,
)
from rea_plugins.native.model import Model, Region

from rea.context import CallContext
from rea.errors import ReaError


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Inventory safety limits; exceeding one fails with ``resource_constraint``."""

    max_procedures: int = 1_000_000
    max_program_instructions: int = 4_000_000
    max_function_instructions: int = 200_000
    max_strings: int = 2_000_000
    max_string_chars: int = 1024
    min_string_chars: int = 4
    discovery_max_code_bytes: int = 8 << 20
    index_deadline_s: float = 300.0


class Proc:
    """A procedure: start, name, kind (local|import|thunk|external) and, once known, its end."""

    __slots__ = ("address", "end", "kind", "name", "source")

    def __init__(self, address: int, name: str, kind: str, end: int | None, source: str) -> None:
        self.address = address
        self.name = name
        self.kind = kind
        self.end = end
        self.source = source


class Ref(NamedTuple):
    src: int
    dst: int | None
    kind: str
    proc: int
    name: str | None


class StringItem(NamedTuple):
    address: int
    encoding: str
    offset: int
    byte_length: int
    section: str


class Block(NamedTuple):
    start: int
    end: int
    n_insns: int
    successors: tuple[tuple[int, str], ...]


STUB_SECTIONS = frozenset({".plt", ".plt.sec", ".plt.got", ".iplt", "__TEXT,__stubs", "__TEXT,__auth_stubs"})
# Metadata sections (symbol tables, relocations, unwind data, ...): their bytes are not program strings.
NON_STRING_SECTIONS = re.compile(
    r"^(\.dyn|\.gnu\.|\.hash|\.rela?\.|\.rel\.|\.rela|\.note|\.symtab|\.strtab|\.init_array"
    r"|\.fini_array|\.got|\.pdata|\.xdata|\.reloc|\.idata|\.tls|\.CRT|__LINKEDIT|__TEXT,__unwind_info"
    r"|__DATA_CONST,__got|__DATA,__la_symbol_ptr|__DATA,__got|\.debug|\.interp|/\d)"
    r"|eh_frame|gcc_except_table")
# Candidate runs by byte class (C-speed); UTF-8 validity is checked per run afterwards.
_RUNS = re.compile(rb"[\x20-\x7e\t\n\r\x80-\xf4]{4,}")
_ASCII = re.compile(rb"[\x20-\x7e\t\n\r]{4,}")
_ZEROS = re.compile(rb"\x00{4,}")
_CACHE_SIZE = 256
MMAP_THRESHOLD = 256 << 20
_by_address = operator.itemgetter(0)


def overdue(what: str, deadline: float) -> ReaError:
    return ReaError("provider_timeout", f"{what} did not finish within {deadline:.0f} s",
                    remediation="Query one procedure at a time, or open the target with a deeper provider.",
                    details={"deadline_s": deadline, "phase": what})


def too_big(what: str, limit: int, **details: Any) -> ReaError:
    return ReaError("resource_constraint", f"{what} exceeds the native provider's safety limit of {limit}",
                    remediation="Narrow the request, or open the target with a deeper provider for whole-program work.",
                    details={"limit": limit, **details})


class Program:
    """Lazy analysis state of one target; every method is safe to call repeatedly (results cached)."""

    def __init__(self, model: Model, path: str, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self._file = open(path, "rb")  # noqa: SIM115 - lives as long as the client
        self._data: Any
        size = os.fstat(self._file.fileno()).st_size
        if size <= MMAP_THRESHOLD:
            # A private copy: a target truncated behind our back cannot SIGBUS the server.
            self._data = self._file.read()
        else:
            try:
                self._data = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError):
                self._data = self._file.read()
        self.size = len(self._data)
        regions = model.sections if model.sections else model.segments
        self.regions = sorted(regions, key=lambda r: (r.start, r.name))
        self._region_starts = [r.start for r in self.regions]
        self.code_regions = [r for r in self.regions if r.executable and r.file_size > 0]
        if not self.code_regions:
            self.code_regions = [r for r in sorted(model.segments, key=lambda r: r.start)
                                 if r.executable and r.file_size > 0]
        self._code_starts = [r.start for r in self.code_regions]
        self.md = make_decoder(model.arch, model.bits)
        self.pointer = model.bits // 8
        code_bytes = sum(r.file_size for r in self.code_regions)
        self.discovery = code_bytes <= limits.discovery_max_code_bytes
        self._procs: list[Proc] | None = None
        self._starts: list[int] = []
        self._by_addr: dict[int, Proc] = {}
        self._by_name: dict[str, Proc] = {}
        self._insns: OrderedDict[int, list[Insn]] = OrderedDict()
        self._refs: tuple[dict[int, list[Ref]], dict[int, list[Ref]]] | None = None
        self._strings: list[StringItem] | None = None
        self._names: list[tuple[int | None, str, str, bool]] | None = None
        self.import_slots: dict[int, str] = {i.slot: i.name for i in model.imports if i.slot is not None}
        self.stubs: dict[int, str] = {}
        self.limitations: list[str] = list(model.limitations)

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        self._file.close()

    # -- memory ----------------------------------------------------------------------------

    def region_at(self, address: int) -> Region | None:
        i = bisect.bisect_right(self._region_starts, address) - 1
        while i >= 0:
            r = self.regions[i]
            if r.start <= address < r.end:
                return r
            if r.start + max(r.size, 1 << 32) < address:
                break
            i -= 1
        return None

    def mapped(self, address: int) -> bool:
        return self.region_at(address) is not None

    def code_region_at(self, address: int) -> Region | None:
        i = bisect.bisect_right(self._code_starts, address) - 1
        if i >= 0:
            r = self.code_regions[i]
            if r.start <= address < r.start + r.file_size:
                return r
        return None

    def read(self, address: int, length: int) -> bytes | None:
        """File-backed bytes at ``address``; None when not fully backed."""
        r = self.region_at(address)
        if r is None or length < 0:
            return None
        off = address - r.start
        if off + length > r.file_size:
            return None
        start = r.file_offset + off
        if start < 0 or start + length > self.size:
            return None
        return bytes(self._data[start:start + length])

    def _code_bytes(self, start: int, end: int) -> bytes:
        r = self.code_region_at(start)
        if r is None:
            return b""
        stop = min(end, r.start + r.file_size)
        lo = r.file_offset + (start - r.start)
        hi = r.file_offset + (stop - r.start)
        if lo < 0 or lo >= self.size:
            return b""
        return bytes(self._data[lo:min(hi, self.size)])

    # -- procedure inventory ----------------------------------------------------------------

    def procedures(self, ctx: CallContext | None = None) -> list[Proc]:
        """All procedures by address (symbols, entry, exception tables, stubs; call targets when enabled)."""
        if self._procs is None:
            self._build_inventory(ctx)
            if self.discovery:
                self.references(ctx)
        assert self._procs is not None
        return self._procs

    def _build_inventory(self, ctx: CallContext | None) -> None:
        model = self.model
        self._scan_stubs()
        found: dict[int, Proc] = {}

        def add(address: int, name: str | None, kind: str, size: int, source: str) -> None:
            if kind == "local" and self.code_region_at(address) is None:
                return
            cur = found.get(address)
            if cur is None:
                if len(found) >= self.limits.max_procedures:
                    raise too_big("procedure count", self.limits.max_procedures, resource="procedures")
                found[address] = Proc(address, name or "", kind, address + size if size > 0 else None, source)
                return
            if name and not cur.name:
                cur.name = name
            if size > 0 and cur.end is None:
                cur.end = address + size

        named = sorted((s for s in model.symbols if s.kind == "function" or
                        (s.exported and self.code_region_at(s.address) is not None)),
                       key=lambda s: (s.address, not s.exported, s.name.startswith("_"), len(s.name), s.name))
        for s in named:
            add(s.address, s.name, "local", s.size, "symbol")
        for addr, name in sorted(self.stubs.items()):
            add(addr, name, "import", self._stub_size(addr), "stub")
        stubbed = set(self.stubs.values())
        for imp in model.imports:
            if imp.slot is not None and imp.name not in stubbed and self.mapped(imp.slot):
                add(imp.slot, imp.name, "import", self.pointer, "import-slot")
        if model.entry is not None:
            add(model.entry, None, "local", 0, "entry")
        for start, end in model.unwind:
            add(start, None, "local", end - start, "exception-table")
            if ctx is not None and len(found) % 4096 == 0:
                ctx.check("building procedure inventory")
        for p in found.values():
            if not p.name:
                p.name = "entry" if p.address == model.entry else f"sub_{p.address:x}"
        self._install(list(found.values()))
        if model.format != "elf":  # ELF import thunks are PLT stubs, found by _scan_stubs
            for p in self._procs or []:
                if p.kind == "local" and (p.end is None or p.end - p.address <= 16):
                    self._detect_thunk(p)

    def _install(self, procs: list[Proc]) -> None:
        procs.sort(key=lambda p: p.address)
        self._procs = procs
        self._starts = [p.address for p in procs]
        self._by_addr = {p.address: p for p in procs}
        self._by_name = {}
        for p in procs:
            self._by_name.setdefault(p.name, p)

    def _stub_size(self, address: int) -> int:
        later = [a for a in self.stubs if a > address]
        return min(min(later) - address, 16) if later else (6 if self.model.arch == "x86_64" else 12)

    def _scan_stubs(self) -> None:
        flow = FlowReader(self.model.arch, self.mapped)
        for r in self.code_regions:
            if r.name not in STUB_SECTIONS:
                continue
            entry: int | None = None
            for insn in decode(self.md, self._code_bytes(r.start, r.start + r.file_size), r.start):
                if entry is None and insn.mnemonic not in ("nop", "endbr64", "endbr32"):
                    entry = insn.address
                f = flow(insn)
                if f.cls in (JUMP, RET):
                    if f.cls == JUMP and f.slot in self.import_slots and entry is not None:
                        self.stubs.setdefault(entry, self.import_slots[f.slot])
                    entry = None
                    flow.reset()

    def _detect_thunk(self, p: Proc) -> None:
        code = self._code_bytes(p.address, p.address + 16)
        flow = FlowReader(self.model.arch, self.mapped)
        for insn in decode(self.md, code, p.address, 4):
            f = flow(insn)
            if f.cls == JUMP:
                target_name = self.import_slots.get(f.slot) if f.slot is not None else None
                if target_name is not None:
                    p.kind = "thunk"
                    p.end = insn.address + insn.size
                    if p.name.startswith("sub_"):
                        p.name = target_name
                return
            if f.cls != FALL or insn.mnemonic not in ("endbr64", "endbr32", "nop", "adrp", "ldr", "bti"):
                return

    def procedure(self, address: int) -> Proc | None:
        self.procedures()
        return self._by_addr.get(address)

    def by_name(self, name: str) -> Proc | None:
        self.procedures()
        p = self._by_name.get(name)
        if p is None and self.model.format == "mach-o":
            p = self._by_name.get("_" + name)
        return p

    def containing(self, address: int) -> Proc | None:
        procs = self.procedures()
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        p = procs[i]
        return p if p.address <= address < max(self.end_of(p), p.address + 1) else None

    # -- extents and instructions ----------------------------------------------------------

    def end_of(self, p: Proc) -> int:
        if p.end is None:
            p.end = self._descend(p)
        return p.end

    def _limit(self, p: Proc) -> int:
        i = bisect.bisect_right(self._starts, p.address)
        nxt = self._starts[i] if i < len(self._starts) else None
        r = self.code_region_at(p.address)
        region_end = r.start + r.file_size if r is not None else p.address
        return min(nxt, region_end) if nxt is not None else region_end

    def _descend(self, p: Proc) -> int:
        """Recursive descent inside [start, next procedure): the furthest reachable instruction end."""
        if p.kind != "local" and p.kind != "thunk":
            return p.address + self.pointer
        limit = self._limit(p)
        if limit <= p.address:
            return p.address + 1
        code = self._code_bytes(p.address, limit)
        flow = FlowReader(self.model.arch, self.mapped)
        todo = [p.address]
        seen: set[int] = set()
        end = p.address
        computed = False
        budget = self.limits.max_function_instructions
        while todo:
            addr = todo.pop()
            if addr in seen or not p.address <= addr < limit:
                continue
            flow.reset()
            window: list[Insn] = []
            for insn in decode(self.md, code[addr - p.address:], addr):
                if insn.address in seen and insn.address != addr:
                    break
                seen.add(insn.address)
                budget -= 1
                if budget <= 0:
                    raise too_big("instructions in one procedure", self.limits.max_function_instructions,
                                  resource="instructions", procedure=f"0x{p.address:x}")
                end = max(end, insn.address + insn.size)
                window = ([*window, insn])[-10:]
                f = flow(insn)
                if f.cls in (JUMP, COND) and f.target is not None and p.address <= f.target < limit:
                    todo.append(f.target)
                if f.cls == JUMP and f.target is None and f.slot is None:
                    table = self._table(window, p.address, limit)
                    if table:
                        todo.extend(table)
                    else:
                        computed = True
                if f.cls in (JUMP, RET):
                    break
        if computed:
            # An unresolved computed jump hides code: claim up to the next procedure, minus padding.
            end = max(end, self._trim_padding(p.address, limit))
        return max(end, p.address + 1)

    def _trim_padding(self, start: int, limit: int) -> int:
        code = self._code_bytes(start, limit)
        end = len(code)
        while end > 0 and code[end - 1] in (0x90, 0xCC, 0x00):
            end -= 1
        return start + end

    def _table(self, window: list[Insn], start: int, limit: int) -> list[int] | None:
        if self.model.arch not in ("x86_64", "x86"):
            return None
        return x86_jump_table(window, self.read, lambda a: start <= a < limit)

    def instructions(self, p: Proc) -> list[Insn]:
        """The procedure's instructions by linear decoding of its extent (cached, LRU)."""
        cached = self._insns.get(p.address)
        if cached is not None:
            self._insns.move_to_end(p.address)
            return cached
        end = self.end_of(p)
        if p.kind == "import" and self.code_region_at(p.address) is None:
            return []
        if (end - p.address) // 16 > self.limits.max_function_instructions:
            raise too_big("instructions in one procedure", self.limits.max_function_instructions,
                          resource="instructions", procedure=f"0x{p.address:x}")
        out = list(decode(self.md, self._code_bytes(p.address, end), p.address))
        self._insns[p.address] = out
        if len(self._insns) > _CACHE_SIZE:
            self._insns.popitem(last=False)
        return out

    def window(self, p: Proc, offset: int, limit: int) -> tuple[list[Insn], bool]:
        """Instructions ``offset .. offset+limit`` of ``p``, decoding only as far as needed."""
        end = self.end_of(p)
        code = self._code_bytes(p.address, end)
        out: list[Insn] = []
        more = False
        for i, insn in enumerate(decode(self.md, code, p.address, offset + limit + 1)):
            if i < offset:
                continue
            if len(out) == limit:
                more = True
                break
            out.append(insn)
        return out, more

    def blocks(self, p: Proc) -> list[Block]:
        insns = self.instructions(p)
        if not insns:
            return []
        start, end = p.address, self.end_of(p)
        flow = FlowReader(self.model.arch, self.mapped)
        leaders = {insns[0].address}
        outs: dict[int, list[tuple[int, str]]] = {}
        window: list[Insn] = []
        for i, insn in enumerate(insns):
            window = ([*window, insn])[-10:]
            f = flow(insn)
            succ: list[tuple[int, str]] = []
            nxt = insns[i + 1].address if i + 1 < len(insns) else None
            if f.cls == COND:
                if f.target is not None and start <= f.target < end:
                    succ.append((f.target, "conditional"))
                if nxt is not None:
                    succ.append((nxt, "fallthrough"))
            elif f.cls == JUMP:
                if f.target is not None and start <= f.target < end:
                    succ.append((f.target, "jump"))
                elif f.target is None and f.slot is None:
                    succ.extend((t, "jump") for t in self._table(window, start, end) or [])
            if f.cls in (COND, JUMP, RET):
                outs[insn.address] = succ
                if nxt is not None:
                    leaders.add(nxt)
                leaders.update(t for t, _ in succ)
        blocks: list[Block] = []
        cur: list[Insn] = []
        for insn in insns:
            if insn.address in leaders and cur:
                blocks.append(self._close_block(cur, outs, insn.address))
                cur = []
            cur.append(insn)
        if cur:
            blocks.append(self._close_block(cur, outs, None))
        return blocks

    @staticmethod
    def _close_block(cur: list[Insn], outs: dict[int, list[tuple[int, str]]], nxt: int | None) -> Block:
        last = cur[-1]
        if last.address in outs:
            succ = tuple(dict.fromkeys(outs[last.address]))
        else:
            succ = ((nxt, "fallthrough"),) if nxt is not None else ()
        return Block(cur[0].address, last.address + last.size, len(cur), succ)

    # -- references ------------------------------------------------------------------------

    def import_address(self, name: str) -> int | None:
        p = self._by_name.get(name)
        return p.address if p is not None and p.kind == "import" else None

    def refs_of(self, p: Proc, insns: list[Insn]) -> list[Ref]:
        """Outgoing references of one procedure from its decoded operands."""
        flow = FlowReader(self.model.arch, self.mapped)
        out: list[Ref] = []
        window: list[Insn] = []
        start, end = p.address, self.end_of(p)
        for insn in insns:
            window = ([*window, insn])[-10:]
            f = flow(insn)
            a = insn.address
            if f.cls in (CALL, JUMP, COND):
                kind = "call" if f.cls == CALL else "jump"
                if f.target is not None:
                    stub = self._by_addr.get(f.target)
                    out.append(Ref(a, f.target, kind, start, stub.name if stub is not None else None))
                elif f.slot is not None and f.slot in self.import_slots:
                    name = self.import_slots[f.slot]
                    out.append(Ref(a, f.slot, "external", start, name))
                    out.append(Ref(a, self.import_address(name) or f.slot, kind, start, name))
                elif f.cls == JUMP:
                    table = self._table(window, start, end) if f.slot is None else None
                    if table:
                        out.extend(Ref(a, t, "computed", start, None) for t in dict.fromkeys(table))
                    else:
                        if f.slot is not None and self.mapped(f.slot):
                            out.append(Ref(a, f.slot, "read", start, None))
                        out.append(Ref(a, None, "computed", start, None))
                else:
                    if f.slot is not None and self.mapped(f.slot):
                        out.append(Ref(a, f.slot, "read", start, None))
                    out.append(Ref(a, None, "indirect", start, None))
            for addr, kind in f.data:
                target = self._by_addr.get(addr)
                out.append(Ref(a, addr, kind, start, target.name if target is not None else None))
        return out

    def outgoing(self, p: Proc) -> list[Ref]:
        """One procedure's references: from the whole-program index when built, else decoded alone."""
        if self._refs is not None:
            return self._refs[0].get(p.address, [])
        if p.kind not in ("local", "thunk"):
            return []
        return self.refs_of(p, self.instructions(p))

    def references(self, ctx: CallContext | None = None) -> tuple[dict[int, list[Ref]], dict[int, list[Ref]]]:
        """Whole-program reference index: (outgoing by procedure, incoming by target address)."""
        if self._refs is not None:
            return self._refs
        if self._procs is None:
            self._build_inventory(ctx)
        outgoing: dict[int, list[Ref]] = {}
        budget = self.limits.max_program_instructions
        pending = [p for p in self._procs or [] if p.kind in ("local", "thunk")]
        done = 0
        deadline = time.monotonic() + self.limits.index_deadline_s
        while pending:
            discovered: set[int] = set()
            for p in pending:
                if done % 128 == 0:
                    if ctx is not None:
                        ctx.check("indexing references")
                        ctx.progress(f"references: {done} of {len(pending)} procedures decoded")
                    if time.monotonic() > deadline:
                        raise overdue("the whole-program reference index", self.limits.index_deadline_s)
                insns = self.instructions(p)
                budget -= len(insns)
                if budget < 0:
                    raise too_big("decoded instructions for the whole-program reference index",
                                  self.limits.max_program_instructions, resource="instructions")
                refs = self.refs_of(p, insns)
                outgoing[p.address] = refs
                done += 1
                if self.discovery:
                    for r in refs:
                        if r.kind == "call" and r.dst is not None and r.dst not in self._by_addr \
                                and self.code_region_at(r.dst) is not None:
                            discovered.add(r.dst)
            pending = []
            if discovered:
                fresh = [Proc(a, f"sub_{a:x}", "local", None, "call-target") for a in sorted(discovered)
                         if self._containing_known(a) is None]
                if fresh:
                    self._install((self._procs or []) + fresh)
                    pending = fresh
                    for q in fresh:  # a fresh start may also bound its sizeless predecessor
                        self._rename_refs(outgoing, q)
        incoming: dict[int, list[Ref]] = {}
        for refs in outgoing.values():
            for r in refs:
                if r.dst is not None:
                    incoming.setdefault(r.dst, []).append(r)
        self._refs = (outgoing, incoming)
        if ctx is not None:
            ctx.progress(f"references: {done} procedures decoded")
        return self._refs

    def _containing_known(self, address: int) -> Proc | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0 or self._procs is None:
            return None
        p = self._procs[i]
        return p if p.end is not None and p.address <= address < p.end else None

    @staticmethod
    def _rename_refs(outgoing: dict[int, list[Ref]], q: Proc) -> None:
        for refs in outgoing.values():
            for i, r in enumerate(refs):
                if r.dst == q.address and r.name is None:
                    refs[i] = r._replace(name=q.name)

    # -- strings and names -----------------------------------------------------------------

    def strings(self, ctx: CallContext | None = None) -> list[StringItem]:
        if self._strings is not None:
            return self._strings
        out: list[StringItem] = []
        deadline = time.monotonic() + self.limits.index_deadline_s
        for r in self.regions:
            if r.executable or r.file_size <= 0 or NON_STRING_SECTIONS.search(r.name):
                continue
            if time.monotonic() > deadline:
                raise overdue("the string scan", self.limits.index_deadline_s)
            if ctx is not None:
                ctx.progress(f"strings: scanning {r.name}")
            lo = r.file_offset
            hi = min(self.size, r.file_offset + r.file_size)
            if lo >= hi or lo < 0:
                continue
            blob = bytes(self._data[lo:hi])
            found: list[StringItem] = []
            for m in _RUNS.finditer(blob):
                raw = m.group(0)
                if raw.isascii():
                    found.append(StringItem(r.start + m.start(), "ascii", lo + m.start(), len(raw), r.name))
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = ""
                if len(text) >= self.limits.min_string_chars:
                    found.append(StringItem(r.start + m.start(), "utf-8", lo + m.start(), len(raw), r.name))
                    continue
                for sub in _ASCII.finditer(raw):  # not UTF-8: keep the plain runs inside it
                    at = m.start() + sub.start()
                    found.append(StringItem(r.start + at, "ascii", lo + at, len(sub.group(0)), r.name))
            found.extend(self._utf16(blob, r, lo))
            found.sort(key=_by_address)  # regions do not overlap: per-region order is global order
            out.extend(found)
            if len(out) > self.limits.max_strings:
                raise too_big("string count", self.limits.max_strings, resource="strings")
            if ctx is not None:
                ctx.check("scanning strings")
        if any(a.address > b.address for a, b in itertools.pairwise(out)):  # overlapping regions (malformed)
            out.sort(key=_by_address)
        self._strings = out
        return out

    def _utf16(self, blob: bytes, r: Region, lo: int) -> list[StringItem]:
        """UTF-16LE runs at even offsets: printable low bytes over zero high bytes, found per byte lane."""
        low, high = blob[0::2], blob[1::2]
        out: list[StringItem] = []

        def emit(start: int, end: int) -> None:
            out.append(StringItem(r.start + 2 * start, "utf-16le", lo + 2 * start, 2 * (end - start), r.name))

        for m in _ASCII.finditer(low):
            start, end = m.span()
            if high.count(b"\x00", start, end) == end - start:
                emit(start, end)
                continue
            for zeros in _ZEROS.finditer(high, start, end):  # only parts of the run have zero high bytes
                for sub in _ASCII.finditer(low, zeros.start(), zeros.end()):
                    emit(*sub.span())
        return out

    def string_value(self, s: StringItem) -> tuple[str, bool]:
        """The decoded value (capped at ``max_string_chars``) and whether it was truncated."""
        cap = self.limits.max_string_chars
        width = 2 if s.encoding == "utf-16le" else 1
        raw = bytes(self._data[s.offset:s.offset + min(s.byte_length, cap * 4 * width)])
        text = raw.decode("utf-16-le" if width == 2 else "utf-8", errors="replace")
        if len(text) > cap:
            return text[:cap], True
        return text, len(raw) < s.byte_length

    def string_at(self, address: int) -> StringItem | None:
        items = self.strings()
        i = bisect.bisect_left(items, (address,))
        if i < len(items) and items[i].address == address:
            return items[i]
        return None

    def names(self) -> list[tuple[int | None, str, str, bool]]:
        """(address, name, kind, external) for symbols and imports, by address then name."""
        if self._names is not None:
            return self._names
        self.procedures()
        out: list[tuple[int | None, str, str, bool]] = []
        seen: set[tuple[int | None, str]] = set()
        for s in self.model.symbols:
            kind = "export" if s.exported else s.kind
            if (s.address, s.name) not in seen:
                seen.add((s.address, s.name))
                out.append((s.address, s.name, kind, False))
        for imp in self.model.imports:
            addr = self.import_address(imp.name)
            if addr is None:
                addr = imp.slot
            if (addr, imp.name) not in seen:
                seen.add((addr, imp.name))
                out.append((addr, imp.name, "import", True))
        out.sort(key=lambda t: (t[0] is None, t[0] or 0, t[1]))
        self._names = out
        return out

    def name_at(self, address: int) -> str | None:
        p = self._by_addr.get(address) if self._procs is not None else self.procedure(address)
        if p is not None:
            return p.name
        names = self.names()
        i = bisect.bisect_left(names, (False, address), key=lambda t: (t[0] is None, t[0] or 0))
        if i < len(names) and names[i][0] == address:
            return names[i][1]
        return None
