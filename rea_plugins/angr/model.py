"""angr's view of one binary and the inventory operations (imported by the worker process only)."""

from __future__ import annotations

import bisect
import logging
import re
import time
from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import TypeVar

import angr
import cle
import msgspec

from rea.plugin import AddressedName
from rea.plugin import AddressedString
from rea.plugin import Arguments
from rea.plugin import ContainingProcedure
from rea.plugin import DocumentItem
from rea.plugin import ExportRow
from rea.plugin import ImportRow
from rea.plugin import NameItem
from rea.plugin import ProcedureItem
from rea.plugin import ProcedureKind
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import RegionRow
from rea.plugin import SegmentItem
from rea.plugin import StringItem
from rea.plugin import answers
from rea.plugin import engine_rows
from rea.plugin import unwind
from rea_plugins.angr import layout
from rea_plugins.angr import resolvers
from rea_plugins.angr.extents import padded_starts
from rea_plugins.angr.options import CFG_OPTIONS

Progress = Callable[[str], None]
T = TypeVar("T")

_FORMATS = {"ELF": "elf", "PE": "pe", "MachO": "mach-o"}
_ARCHES = {"AMD64": "x86_64", "X86": "x86", "ARMEL": "arm", "ARMHF": "arm", "ARMCortexM": "arm", "AARCH64": "arm64"}
_MAX_BLOCK = 0x10000
UNRESOLVED = frozenset({"UnresolvableJumpTarget", "UnresolvableCallTarget"})
# Names angr generates from an address (functions, globals, goto labels), and hex literals, in decompiler text.
_GENERATED = re.compile(r"\b(sub|g|LABEL)_(0x)?([0-9a-f]+)\b|\b0x([0-9a-f]+)\b")
_SUB = re.compile(r"^sub_(?:0x)?([0-9a-fA-F]{1,16})$")
# Sections of import stubs and of the stubs that resolve them (ELF PLTs, Mach-O stub sections).
STUB_SECTIONS = frozenset(
    {".plt", ".plt.sec", ".plt.got", ".iplt", ".plt.bnd", "__stubs", "__auth_stubs", "__stub_helper"}
)
# The size of the resolver stub at the start of an ELF .plt, by angr architecture name (entries are 16 bytes,
# 12 on 32-bit Arm: capped at 16 there too, which still never reaches a second entry's successor).
PLT0_SIZE = {"AMD64": 16, "X86": 16, "AARCH64": 32, "ARMEL": 20, "ARMHF": 20}


def perms(r: bool, w: bool, x: bool) -> str:
    return ("r" if r else "-") + ("w" if w else "-") + ("x" if x else "-")


class Analysis:
    """One loaded project, its lazily built CFG and the indexes every operation shares."""

    def __init__(self, path: str, name: str, sha256: str) -> None:
        logging.getLogger("angr").setLevel(logging.ERROR)
        logging.getLogger("cle").setLevel(logging.ERROR)
        try:
            # Typed as Any: angr's partial annotations would otherwise leak into every caller.
            self.proj: Any = angr.Project(path, auto_load_libs=False, load_debug_info=False)
        except (RecursionError, MemoryError):
            raise
        except Exception as exc:  # cle surfaces malformed input as many exception types, all meaning "unreadable"
            # The engine's words go in details; the message never names a Python exception class.
            words = str(exc) or "the loader gave no reason"
            raise ReaError(
                "unsupported_target",
                f"angr could not load {name}: {words}",
                remediation="Check that the file is an intact ELF, PE or Mach-O binary.",
                details={"reason": "unparseable", "engine_error": words},
            ) from None
        self.name, self.sha256, self.path = name, sha256, path
        self.main: Any = self.proj.loader.main_object
        fmt = _FORMATS.get(type(self.main).__name__)
        if fmt is None:
            backend = type(self.main).__name__
            raise ReaError(
                "unsupported_target",
                f"angr loaded {name} as {backend}, not a format this provider reads",
                details={"reason": "format", "backend": backend},
            )
        self.format = fmt
        self.arch = self.proj.arch
        linked = self.main.linked_base if self.main.pic else self.main.mapped_base
        self.delta = self.main.mapped_base - linked
        self.cfg: Any = None
        self._cache: dict[tuple[str, int], Any] = {}
        self._elf = _elf_extras(path) if fmt == "elf" else ElfExtras()
        self._unwind = self._elf.fdes if fmt == "elf" else _unwind_hints(self.main)
        self.extents = unwind.Extents((s + self.delta, e + self.delta) for s, e in self._unwind)
        self._mapped = self._mapped_ranges()
        self._sections = sorted((s.vaddr, s.vaddr + s.memsize, s.name) for s in self._alloc_sections())

    # -- addresses -----------------------------------------------------------------------

    def out(self, addr: int) -> str:
        """An angr address as the contract's link-time ``0x`` string."""
        return hex(addr - self.delta)

    def opt(self, addr: int | None) -> str | None:
        return None if addr is None else self.out(addr)

    def inn(self, value: Any, path: str = "address") -> int:
        return answers.parse_address(value, path) + self.delta

    def _alloc_sections(self) -> list[Any]:
        return [
            s
            for s in getattr(self.main, "sections", []) or []
            if s.memsize > 0 and getattr(s, "occupies_memory", True) and s.vaddr != self.delta
        ]

    def _mapped_ranges(self) -> list[tuple[int, int]]:
        ranges = [(s.vaddr, s.vaddr + s.memsize) for s in self._alloc_sections()]
        if not ranges:
            ranges = [(s.vaddr, s.vaddr + s.memsize) for s in getattr(self.main, "segments", []) or []]
        return sorted(ranges)

    def mapped(self, addr: int) -> bool:
        i = bisect.bisect_right(self._mapped, (addr, float("inf"))) - 1
        return bool(i >= 0 and self._mapped[i][0] <= addr < self._mapped[i][1])

    def section_of(self, addr: int) -> str | None:
        i = bisect.bisect_right(self._sections, (addr, float("inf"), "")) - 1
        while i >= 0:
            start, end, name = self._sections[i]
            if start <= addr < end:
                return str(name)
            if end <= addr and i < len(self._sections) - 1:
                break
            i -= 1
        return None

    # -- CFG and the function index ------------------------------------------------------

    def ensure_cfg(self, progress: Progress) -> None:
        if self.cfg is not None:
            return
        last = [0.0]

        def report(percentage: float, text: str | None = None, **_: Any) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                last[0] = now
                progress(f"angr reports CFG recovery {percentage:.0f}% done")

        # Every FDE (ELF) or RUNTIME_FUNCTION (PE) start is a function start. Seeded before the scan, a function
        # reached only by a tail jump (or through a table) is not swallowed by the first function jumping into it.
        starts = [s + self.delta for s, _ in self._unwind if self._executable(s + self.delta)]
        starts += sorted(self._uncovered_starts() - set(starts))
        known = frozenset(starts) | self._symbol_starts()
        self.cfg = self.proj.analyses.CFGFast.prep(progress_callback=report)(
            function_starts=starts,
            indirect_jump_resolvers=resolvers.indirect_jump_resolvers(self.proj, known),
            **CFG_OPTIONS,
        )
        # angr drops a function whose block ends in an undecodable instruction (a ``.cold`` part that is a
        # null-store trap ending in ``ud2``) though CFGFast decoded the block: the unwind table says it is one.
        functions = self.proj.kb.functions
        for start in starts:
            if start not in functions:
                node = self.cfg.model.get_any_node(start)
                if node is not None and node.size:
                    # A node with its bytes: angr serializes functions it spills to disk.
                    functions._add_node(start, self.proj.factory.block(start, size=node.size).codenode)
        # One pass over the function manager: past ~1000 functions (alignment padding counts) angr spills
        # functions to disk, and every later lookup of a spilled one would deserialize it again.
        self.known: dict[int, Any] = {}
        kept = []
        for f in self.proj.kb.functions.values():
            # angr takes a function that only moves a register to itself (``mov %ecx,%ecx; jmp``) for
            # padding; one the unwind table lists is code.
            if f.is_alignment and f.addr not in self.extents.start_set:
                continue
            self.known[f.addr] = f
            if f.name not in UNRESOLVED and self.main.contains_addr(f.addr):
                kept.append(f)
        kept.sort(key=lambda f: (f.addr, f.name))
        owners = self._fragment_owners(kept)
        self.funcs: list[Any] = [f for f in kept if f.addr not in owners]
        self.by_addr: dict[int, Any] = {f.addr: f for f in self.funcs}
        self.parts: dict[int, list[Any]] = {}
        for f in kept:
            if f.addr in owners:
                owner = owners[f.addr]
                self.parts.setdefault(owner, [self.by_addr[owner]]).append(f)
        # PLT stubs of functions defined here (a shared library calling its own export through its PLT): angr
        # names them after the function; they are ``name@plt`` thunks, so a lookup by name finds the function.
        defined = {f.name for f in self.funcs if not f.is_plt and not f.is_simprocedure}
        self.local_plt: frozenset[int] = frozenset(f.addr for f in self.funcs if f.is_plt and f.name in defined)
        self.by_name: dict[str, Any] = {}  # name -> angr's Function (angr's objects stay Any, as ``proj`` is)
        for f in self.funcs:
            self.by_name.setdefault(self.fname(f), f)
        blocks: set[tuple[int, int, int]] = set()
        for f in self.funcs:
            end = self.func_end(f)
            for g in self.members(f):
                for node in g.graph.nodes():
                    if node.addr < end or node.addr == f.addr:
                        blocks.add((node.addr, node.addr + node.size, f.addr))
        self._blocks = sorted(blocks)

    def _uncovered_starts(self) -> set[int]:
        """ELF code the unwind table does not cover (crt start-up files): function starts after padding."""
        if self.format != "elf" or not self.extents.ranges:
            return set()
        code = [
            (s.vaddr, s.vaddr + s.memsize)
            for s in self._alloc_sections()
            if s.is_executable and s.name not in STUB_SECTIONS
        ]
        alignment = 16 if self.arch.name in ("AMD64", "X86") else 4
        return padded_starts(
            self.extents, code, lambda at, n: self.proj.loader.memory.load(at, n), self.arch.capstone.disasm, alignment
        )

    def _symbol_starts(self) -> frozenset[int]:
        """Function symbols of the main object that lie in executable code (angr addresses)."""
        out = set()
        for sym in self.main.symbols:
            if sym.is_function and not sym.is_import and sym.rebased_addr and self._executable(sym.rebased_addr):
                out.add(int(sym.rebased_addr))
        return frozenset(out)

    def executable(self, addr: int) -> bool:
        """Whether ``addr`` (angr address) lies in executable code of the main object."""
        return self._executable(addr)

    def alloc_sections(self) -> list[Any]:
        """The main object's sections that occupy memory."""
        return self._alloc_sections()

    def nobits(self) -> frozenset[str]:
        """Names of ELF sections without file contents (``.bss``)."""
        return self._elf.nobits

    def _executable(self, addr: int) -> bool:
        sec = self.main.find_section_containing(addr)
        if sec is not None:
            return bool(sec.is_executable)
        seg = self.main.find_segment_containing(addr)
        return seg is not None and bool(seg.is_executable)

    def _fragment_owners(self, kept: list[Any]) -> dict[int, int]:
        """angr functions that start strictly inside another function's unwind extent, mapped to that function.

        CFGFast's gap scan turns code it could not reach (cases of an unresolved jump table, blocks after
        alignment padding) into functions of their own; the unwind table (FDE, RUNTIME_FUNCTION) says whose
        code it is.
        """
        fdes = [(s + self.delta, e + self.delta) for s, e in self._unwind]
        starts = [s for s, _ in fdes]
        local = {f.addr for f in kept if not f.is_plt and not f.is_simprocedure}
        owners: dict[int, int] = {}
        for addr in sorted(local):
            i = bisect.bisect_right(starts, addr) - 1
            if i >= 0 and starts[i] < addr < fdes[i][1] and starts[i] in local:
                owners[addr] = starts[i]
        for addr, owner in owners.items():
            # Overlapping FDEs would chain; owners only ever lie below, so this ends.
            while owner in owners:
                owner = owners[owner]
            owners[addr] = owner
        return owners

    def members(self, f: Any) -> list[Any]:
        """The angr functions that make up procedure ``f``: itself, then fragments merged into it."""
        return self.parts.get(f.addr) or [f]

    def fname(self, f: Any) -> str:
        """angr's name, with default ``sub_`` names spelled at the link-time address."""
        if f.is_default_name and self.delta and str(f.name).startswith("sub_"):
            return f"sub_{f.addr - self.delta:x}"
        if f.addr in getattr(self, "local_plt", ()):
            return f"{f.name}@plt"
        return str(f.name)

    def func_end(self, f: Any) -> int:
        key = ("end", f.addr)
        if key not in self._cache:
            # The unwind entry that covers the start is the compiler's own extent: a part (``f.cold``) that
            # jumps back into its parent would otherwise reach to the parent's farthest block.
            cap = self.stub_cap(f.addr)
            extent = self.extents.covering(f.addr) if cap is None else None
            if extent is not None and extent[0] == f.addr:
                self._cache[key] = extent[1]
            else:
                ends = [n.addr + n.size for g in self.members(f) for n in g.graph.nodes()]
                last = max([f.addr, *ends])
                self._cache[key] = last if cap is None else min(last, cap)
        end: int = self._cache[key]
        return end

    def stub_cap(self, addr: int) -> int | None:
        """Where code starting at ``addr`` in a stub section must end: one stub (PLT0's own size at the start of
        ``.plt``), so the lazy-binding stubs after PLT0 never become part of it."""
        section = self.section_of(addr)
        if section not in STUB_SECTIONS:
            return None
        start = next((s for s, _, name in self._sections if name == section and s <= addr), addr)
        first = PLT0_SIZE.get(self.arch.name, 16) if section in (".plt", ".iplt") else 16
        return addr + (first if addr == start else 16)

    def func_kind(self, f: Any) -> ProcedureKind:
        if f.is_plt:
            return "thunk" if f.addr in self.local_plt else "import"
        if f.is_simprocedure or not self.main.contains_addr(f.addr):
            return "external"
        key = ("kind", f.addr)
        if key not in self._cache:
            # What lies in a stub section and is no import's stub (PLT0, the lazy-binding helper) is a stub.
            kind: ProcedureKind = "thunk" if self.section_of(f.addr) in STUB_SECTIONS else "local"
            if len(f.block_addrs_set) == 1 and f.addr not in self.parts:
                insns = self.proj.factory.block(f.addr).capstone.insns
                jumps = len(insns) == 1 and insns[0].mnemonic in ("jmp", "b", "bx")
                if jumps and imm_target(insns[0]) is not None:
                    kind = "thunk"
            self._cache[key] = kind
        cached: ProcedureKind = self._cache[key]
        return cached

    def containing(self, addr: int) -> Any | None:
        """The function whose blocks cover ``addr`` (after the CFG is built)."""
        i = bisect.bisect_right(self._blocks, (addr, float("inf"), 0)) - 1
        # Blocks are short; looking back a bounded distance finds any block that covers addr.
        while i >= 0 and self._blocks[i][0] + _MAX_BLOCK > addr:
            start, end, faddr = self._blocks[i]
            if start <= addr < end:
                return self.by_addr.get(faddr)
            i -= 1
        return None

    def select(self, params: Arguments) -> Any:
        """The procedure a ``procedure`` selector names: exact name, a generated ``sub_<hex>`` name (at the
        link-time address or at angr's own mapping), or an address where one starts."""
        value = params.get("procedure")
        if isinstance(value, str) and value in self.by_name:
            return self.by_name[value]
        generated = _SUB.match(value) if isinstance(value, str) else None
        if generated is not None:
            at = int(generated.group(1), 16)
            f = self.by_addr.get(at + self.delta) or self.by_addr.get(at)
            if f is not None:
                return f
        is_address = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and answers.looks_like_address(value)
        )
        if is_address:
            f = self.by_addr.get(self.inn(value, "procedure"))
            if f is not None:
                return f
        if value is None:
            raise answers.bad("procedure", "procedure is required", "missing_argument")
        raise answers.unknown_procedure(value)

    def rebase_text(self, text: str) -> str:
        """Engine text (decompiler output) with angr's addresses, and the names it made of them, at link time."""
        if not self.delta:
            return text

        def one(m: re.Match[str]) -> str:
            digits = m.group(3) or m.group(4)
            at = int(digits, 16)
            if not self.mapped(at):
                return m.group(0)
            if m.group(4) is not None:
                return hex(at - self.delta)
            return f"{m.group(1)}_{m.group(2) or ''}{at - self.delta:x}"

        return _GENERATED.sub(one, text)

    def proc_ref(self, f: Any) -> ProcedureRef:
        return ProcedureRef(address=self.out(f.addr), name=self.fname(f))

    def proc_item(self, f: Any) -> ProcedureItem:
        end = self.func_end(f)
        return ProcedureItem(
            address=self.out(f.addr), name=self.fname(f), size=end - f.addr, kind=self.func_kind(f), end=self.out(end)
        )

    def proc_raw(self, f: Any) -> AngrFunction:
        return AngrFunction(
            addr=hex(f.addr),
            name=f.name,
            size=f.size,
            is_plt=f.is_plt,
            is_simprocedure=f.is_simprocedure,
            is_default_name=f.is_default_name,
            returning=f.returning,
            binary_name=f.binary_name,
            fragments=[hex(g.addr) for g in self.members(f)[1:]],
        )

    def import_slot(self, name: str | None) -> int | None:
        """The GOT/IAT slot cle resolved for import ``name``."""
        reloc = (getattr(self.main, "imports", {}) or {}).get(name) if name else None
        return None if reloc is None else int(reloc.rebased_addr)

    def import_stub(self, name: str | None) -> int | None:
        """The PLT stub of import ``name`` when the binary has one."""
        stub = (getattr(self.main, "plt", {}) or {}).get(name) if name else None
        return None if stub is None else int(stub)

    def name_at(self, addr: int) -> str | None:
        """A symbol name at ``addr``, else the name of a function starting there."""
        names = self.names_at(addr)
        if names:
            return names[0]
        f = self.by_addr.get(addr) if self.cfg is not None else None
        return None if f is None else self.fname(f)

    # -- inventory operations ------------------------------------------------------------

    def documents(self, params: Arguments) -> tuple[Any, Any]:
        arch = _ARCHES.get(self.arch.name, self.arch.name)
        doc = DocumentItem(
            name=self.name,
            format=self.format,
            architecture=arch,
            sha256=self.sha256,
            entry=self.out(self.proj.entry),
            bits=self.arch.bits,
            endianness="big" if self.arch.memory_endness == "Iend_BE" else "little",
        )
        raw = {
            "backend": type(self.main).__name__,
            "arch": self.arch.name,
            "mapped_base": hex(self.main.mapped_base),
            "linked_base": hex(self.main.linked_base),
            "pic": bool(self.main.pic),
        }
        return {"documents": [doc]}, raw

    @property
    def tables(self) -> layout.Tables:
        """The file's own tables (segments, sections, imports, libraries), read once."""
        if ("tables", 0) not in self._cache:
            self._cache["tables", 0] = layout.read_tables(self.path, self.format, self.main)
        tables: layout.Tables = self._cache["tables", 0]
        return tables

    def segments(self, params: Arguments) -> tuple[Any, Any]:
        tables = self.tables
        if tables.segments or tables.sections:
            # The file's program headers and section table, as every provider reads them.
            return {"segments": [_region(r).segment(r.kind) for r in (*tables.segments, *tables.sections)]}, None
        out: list[SegmentItem] = []
        if self.format != "pe":
            segments = list(getattr(self.main, "segments", []) or [])
            # ELF segments are named after their program-header index, as readelf numbers them.
            names = self._elf.loads if len(self._elf.loads) == len(segments) else []
            for i, seg in enumerate(segments):
                name = getattr(seg, "segname", None) or (names[i] if names else f"LOAD{i}")
                out.append(self._range_item(name, seg, "segment", seg.filesize))
        for sec in self._alloc_sections():
            file_size = 0 if sec.name in self._elf.nobits else sec.filesize
            out.append(self._range_item(sec.name, sec, "section", file_size))
        return {"segments": out}, None

    def layout(self, params: Arguments) -> tuple[Any, Any]:
        """``binary_layout``: the file's tables (imports with their libraries and slots, needed libraries)."""
        t = self.tables
        body = Layout(
            format=self.format,
            architecture=_ARCHES.get(self.arch.name, self.arch.name),
            entry=self.out(self.proj.entry),
            bits=self.arch.bits,
            image_base=hex(t.image_base),
            segments=[_region(r) for r in t.segments],
            sections=[_region(r) for r in t.sections],
            mitigations=t.mitigations,
            linkage=t.linkage,
            imports=[
                ImportRow(name=i.name, library=i.library, slot=None if i.slot is None else hex(i.slot))
                for i in t.imports
            ],
            exports=[ExportRow(name=e.name, address=hex(e.address)) for e in t.exports],
        )
        return body, None

    def _range_item(self, name: str, r: Any, kind: Literal["segment", "section"], file_size: int) -> SegmentItem:
        return SegmentItem(
            name=str(name),
            start=self.out(r.vaddr),
            end=self.out(r.vaddr + r.memsize),
            size=r.memsize,
            permissions=perms(r.is_readable, r.is_writable, r.is_executable),
            file_offset=r.offset,
            file_size=file_size,
            kind=kind,
        )

    def procedures(self, params: Arguments) -> tuple[Any, Any]:
        result = answers.page("procedures", self.funcs, params, self.proc_item)
        offset, limit = answers.paging(params)
        return result, {"functions": [self.proc_raw(f) for f in self.funcs[offset : offset + limit]]}

    def search_procedures(self, params: Arguments) -> tuple[Any, Any]:
        found = answers.search(self.funcs, self.fname, params)
        return answers.page("procedures", found, params, self.proc_item), None

    def strings(self) -> list[AddressedString]:
        return self._once("strings", self._collect_strings)

    def _once(self, key: str, build: Callable[[], T]) -> T:
        """``build()``, computed on first use and kept in the analysis' cache under ``key``."""
        if (key, 0) not in self._cache:
            self._cache[key, 0] = build()
        value: T = self._cache[key, 0]
        return value

    def _collect_strings(self) -> list[AddressedString]:
        out = []
        min_chars, max_chars = engine_rows.MIN_STRING_CHARS, engine_rows.MAX_STRING_CHARS
        for d in self.cfg.memory_data.values():
            if d.sort not in ("string", "unicode") or not self.main.contains_addr(d.addr):
                continue
            data = d.content if isinstance(d.content, bytes) else self.proj.loader.memory.load(d.addr, d.size)
            if d.sort == "unicode":
                data = data[: len(data) - len(data) % 2]
                while data.endswith(b"\0\0"):
                    data = data[:-2]
                encoding: Literal["ascii", "utf-8", "utf-16le"] = "utf-16le"
                text = data.decode("utf-16le", errors="replace")
            else:
                data = data.rstrip(b"\0")
                encoding = "ascii" if data.isascii() else "utf-8"
                text = data.decode("utf-8", errors="replace")
            if len(text) < min_chars:
                continue
            item = StringItem(
                address=self.out(d.addr),
                value=text[:max_chars],
                encoding=encoding,
                byte_length=len(data),
                truncated=len(text) > max_chars,
                section=self.section_of(d.addr),
            )
            out.append(AddressedString(d.addr, item))
        out.sort(key=lambda s: (s.addr, s.item.value))
        return out

    def list_strings(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.strings_page(self.strings(), params, self._address_param(params)), None

    def search_strings(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.found_strings_page(self.strings(), params), None

    def names(self) -> list[AddressedName]:
        return self._once("names", self._collect_names)

    def _collect_names(self) -> list[AddressedName]:
        seen: set[tuple[str, int, str]] = set()
        out = []
        plt = dict(getattr(self.main, "plt", {}) or {})
        imports = dict(getattr(self.main, "imports", {}) or {})
        for sym in self.main.symbols:
            name = sym.name
            if not name or sym.type in (cle.SymbolType.TYPE_SECTION, cle.SymbolType.TYPE_OTHER):
                continue
            if sym.is_import:
                name = name.split("@", 1)[0]
                addr = plt.get(name)
                if addr is None and name in imports:
                    addr = imports[name].rebased_addr
                if addr is None:
                    continue
                kind: Literal["function", "data", "import", "export", "label"] = "import"
                external = True
            else:
                addr = sym.rebased_addr
                if addr == 0 or not self.main.contains_addr(addr):
                    continue
                exported = sym.is_export if self.format != "elf" else (name, addr - self.delta) in self._elf.exported
                kind = (
                    "export"
                    if exported
                    else "function"
                    if sym.is_function
                    else "data"
                    if sym.type == cle.SymbolType.TYPE_OBJECT
                    else "label"
                )
                external = False
            key = (name, addr, kind)
            if key in seen:
                continue
            seen.add(key)
            out.append(AddressedName(addr, NameItem(address=self.out(addr), name=name, kind=kind, external=external)))
        out.sort(key=lambda n: (n.addr, n.item.name, n.item.kind))
        return out

    def names_at(self, addr: int) -> list[str]:
        return self._once("names_at", lambda: engine_rows.names_by_address(self.names())).get(addr, [])

    def list_names(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.names_page(self.names(), params, self._address_param(params)), None

    def _address_param(self, params: Arguments) -> int | None:
        """The request's ``address`` in angr's mapping, None when it names none."""
        return None if params.get("address") is None else self.inn(params["address"])

    def address_name(self, params: Arguments) -> tuple[Any, Any]:
        at = self.inn(params.get("address"))
        names = self.names_at(at)
        return {"address": self.out(at), "name": names[0] if names else None}, {"names": names}

    def procedure_address(self, params: Arguments) -> tuple[Any, Any]:
        f = self.select(params)
        result = {"procedure": params.get("procedure"), "address": self.out(f.addr), "name": self.fname(f)}
        return result, None

    def resolve_containing(self, params: Arguments) -> tuple[Any, Any]:
        at = self.inn(params.get("address"))
        f = self.containing(at)
        proc = None
        if f is not None:
            end = self.func_end(f)
            proc = ContainingProcedure(
                address=self.out(f.addr), name=self.fname(f), size=end - f.addr, end=self.out(end)
            )
        return {"address": self.out(at), "procedure": proc}, None


class AngrFunction(msgspec.Struct, frozen=True, kw_only=True):
    """angr's own facts of a function (the raw result of ``list_procedures`` and ``procedure_info``)."""

    addr: str
    name: str
    size: int
    is_plt: bool
    is_simprocedure: bool
    is_default_name: bool
    returning: bool | None
    binary_name: str | None
    fragments: list[str]


class ElfExtras(msgspec.Struct, frozen=True):
    """What cle does not keep of an ELF file: program-header indices, NOBITS sections, dynamic exports, FDEs."""

    loads: tuple[str, ...] = ()
    nobits: frozenset[str] = frozenset()
    exported: frozenset[tuple[str, int]] = frozenset()
    # (start, end) of every .eh_frame FDE, link-time addresses: the compiler's own function extents.
    fdes: tuple[tuple[int, int], ...] = ()


def _elf_extras(path: str) -> ElfExtras:
    # pyelftools is the parser cle itself uses; a file it cannot read simply keeps the defaults.
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            loads = tuple(f"LOAD{i}" for i, seg in enumerate(elf.iter_segments()) if seg["p_type"] == "PT_LOAD")
            nobits = frozenset(s.name for s in elf.iter_sections() if s["sh_type"] == "SHT_NOBITS")
            exported: set[tuple[str, int]] = set()
            dynsym = elf.get_section_by_name(".dynsym")
            for s in dynsym.iter_symbols() if dynsym is not None and hasattr(dynsym, "iter_symbols") else []:
                if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK"):
                    exported.add((s.name, int(s["st_value"])))
            eh_frame = elf.get_section_by_name(".eh_frame")
            fdes: list[tuple[int, int]] = []
            if eh_frame is not None and eh_frame["sh_type"] != "SHT_NOBITS":
                fdes = unwind.fde_ranges(
                    eh_frame.data(), int(eh_frame["sh_addr"]), elf.elfclass // 8, elf.little_endian
                )
            return ElfExtras(loads=loads, nobits=nobits, exported=frozenset(exported), fdes=tuple(sorted(set(fdes))))
    except (ELFError, OSError, ValueError, KeyError, AttributeError, TypeError, AssertionError, IndexError):
        return ElfExtras()


def _unwind_hints(main: Any) -> tuple[tuple[int, int], ...]:
    """Link-time extents of the functions a non-ELF image's unwind table lists (PE ``.pdata``, via cle)."""
    from cle.backends.backend import FunctionHintSource

    hints = [
        (int(h.addr), int(h.addr) + int(h.size))
        for h in getattr(main, "function_hints", []) or []
        if h.source == FunctionHintSource.EH_FRAME and h.size > 0
    ]
    return tuple(sorted(set(hints)))


class Layout(Record):
    """binary_layout: the file's own tables."""

    format: str
    architecture: str
    entry: str
    bits: int
    image_base: str
    segments: list[RegionRow]
    sections: list[RegionRow]
    mitigations: layout.Mitigations
    linkage: layout.Linkage
    imports: list[ImportRow]
    exports: list[ExportRow]


def _region(r: layout.Region) -> RegionRow:
    """A region of the file's own tables as binary_layout's row."""
    return RegionRow.spanning(r.name, r.start, r.end, r.permissions, r.file_offset, r.file_size)


def imm_target(insn: Any) -> int | None:
    """The immediate target of a branch or call instruction, if it has one."""
    import capstone

    try:
        # angr wraps capstone instructions (CapstoneInsn.insn); a raw capstone instruction works too.
        ops = getattr(insn, "insn", insn).operands
    except (capstone.CsError, AttributeError):
        return None
    if len(ops) == 1 and ops[0].type == capstone.CS_OP_IMM:
        return int(ops[0].imm)
    return None
