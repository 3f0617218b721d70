"""radare2's view of one binary: loading, analysis, the procedure index and the inventory operations.

Imported by the worker process only; every radare2 call goes through ``engine.Core``.
"""

from __future__ import annotations

import bisect
import platform
import re
import time
from collections.abc import Callable
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import AddressedName
from rea.plugin import AddressedString
from rea.plugin import Arguments
from rea.plugin import ContainingProcedure
from rea.plugin import ExportRow
from rea.plugin import ImportRow
from rea.plugin import JSONObject
from rea.plugin import NameItem
from rea.plugin import NameKind
from rea.plugin import ProcedureItem
from rea.plugin import ProcedureKind
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import RegionRow
from rea.plugin import SegmentItem
from rea.plugin import StringItem
from rea.plugin import answers
from rea.plugin import engine_rows
from rea.plugin import pe_imports
from rea.plugin import unwind
from rea_plugins.radare2.engine import MAX_COMMAND_BLOCK
from rea_plugins.radare2.engine import Core
from rea_plugins.radare2.engine import integer
from rea_plugins.radare2.engine import list_of
from rea_plugins.radare2.engine import object_of
from rea_plugins.radare2.options import CONFIG
from rea_plugins.radare2.rows import AnalysisStats
from rea_plugins.radare2.rows import Layout
from rea_plugins.radare2.rows import Linkage
from rea_plugins.radare2.rows import Mitigations
from rea_plugins.radare2.rows import SlicedDocument

Progress = Callable[[str], None]

FORMATS = {"elf": "elf", "elf64": "elf", "pe": "pe", "pe64": "pe", "mach0": "mach-o", "mach064": "mach-o"}
ARCHES = {("x86", 64): "x86_64", ("x86", 32): "x86", ("arm", 64): "arm64", ("arm", 32): "arm", ("arm", 16): "arm"}
HOST_ARCHES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "i686": "x86",
    "i386": "x86",
}
STRING_ENCODINGS = {"ascii": "utf-8", "utf8": "utf-8", "utf16le": "utf-16le", "wide": "utf-16le"}
MAX_BLOCK_BYTES = MAX_COMMAND_BLOCK
# The import directory of a PE lies in its headers and first sections: read at most this much of the file.
MAX_PE_BYTES = 256 << 20
_AUTO_NAME = re.compile(r"(?:fcn|loc|sub|func)\.([0-9a-f]+)")
# A radare2 flag as it appears in its text output: dotted identifiers (``sym.imp.puts``), whole tokens only.
_FLAG_TOKEN = re.compile(r"(?<![\w.$@])[A-Za-z_][\w.$@]*(?<!\.)")
_MACHO_SECTION = re.compile(r"\d+\.([^.]+)\.(.+)")
# Sections of import stubs and of the stubs that resolve them (ELF PLTs, Mach-O stub sections).
STUB_SECTIONS = frozenset(
    {
        ".plt",
        ".plt.sec",
        ".plt.got",
        ".iplt",
        ".plt.bnd",
        "__TEXT,__stubs",
        "__TEXT,__auth_stubs",
        "__TEXT,__stub_helper",
    }
)
# The size of the resolver stub at the start of an ELF .plt (entries after it are 16 bytes).
PLT0_SIZE = {"x86_64": 16, "x86": 16, "arm64": 32, "arm": 20}
# radare2's names for LC_FUNCTION_STARTS entries: its own labels, not the file's symbols.
_FUNCTION_START = re.compile(r"func\.[0-9a-f]+")
# Quiet, non-interactive output; set before anything else.
_OUTPUT = {"scr.color": "0", "scr.interactive": "false", "scr.utf8": "false", "scr.prompt": "false"}


class Region(msgspec.Struct, frozen=True):
    """A section or segment as the contract lists it."""

    name: str
    start: int
    size: int
    perm: str
    file_offset: int
    file_size: int

    @property
    def end(self) -> int:
        return self.start + self.size

    def item(self, kind: Literal["segment", "section"]) -> SegmentItem:
        """The segment listing's row: the layout's, and its kind."""
        return self.layout_item().segment(kind)

    def layout_item(self) -> RegionRow:
        return RegionRow.spanning(self.name, self.start, self.end, self.perm, self.file_offset, self.file_size)


class Proc:
    """One procedure: a radare2 function, or an import at its slot (PE IAT, GOT) that has no stub."""

    __slots__ = ("addr", "blocks", "calltype", "end", "kind", "name", "ninstrs", "r2name", "signature")

    def __init__(self, addr: int, name: str, kind: ProcedureKind, r2name: str | None, end: int) -> None:
        self.addr, self.name, self.kind, self.r2name, self.end = addr, name, kind, r2name, end
        # (start, size, instruction count, jump, fail, switch cases); empty for an import slot.
        self.blocks: list[tuple[int, int, int, int | None, int | None, tuple[int, ...]]] = []
        self.ninstrs = 0
        self.signature: str | None = None
        self.calltype: str | None = None

    @property
    def size(self) -> int:
        return self.end - self.addr

    def item(self) -> ProcedureItem:
        return ProcedureItem(address=hex(self.addr), name=self.name, size=self.size, kind=self.kind, end=hex(self.end))

    def ref(self) -> ProcedureRef:
        return ProcedureRef(address=hex(self.addr), name=self.name)


def _perm(text: Any) -> str:
    """radare2's ``-rwx`` as the contract's ``rwx``."""
    value = str(text or "----")
    return value[-3:] if len(value) >= 3 else "---"


class Program:
    """The loaded binary, its tables, and (after ``analyze``) the procedure index."""

    def __init__(self, core: Core, path: str, name: str, sha256: str, target_format: str) -> None:
        self.core, self.name, self.sha256, self.target_format = core, name, sha256, target_format
        core.configure(_OUTPUT)
        core.configure(CONFIG)
        self.slices: list[str] = []
        if not core.open(path):
            raise _unreadable(name)
        self.path = path
        if target_format == "mach-o-universal":
            self._choose_slice(path)
        # radare2's binary info (``ij``), kept as it printed it: documents and layout read it by key.
        self.bin: JSONObject = object_of(object_of(core.cmdj("ij")).get("bin"))
        fmt = FORMATS.get(str(self.bin.get("bintype", "")))
        if fmt is None:
            raise ReaError(
                "unsupported_target",
                f"radare2 could not read {name} as an ELF, PE or Mach-O binary",
                remediation="Check that the file is an intact ELF, PE or Mach-O binary.",
                details={"reason": "unparseable", "bintype": str(self.bin.get("bintype", ""))},
            )
        self.format = fmt
        # From here on radare2 may not run shell commands, open files or write anything.
        core.cmd("e cfg.sandbox=true")
        bits = integer(self.bin.get("bits")) or 0
        self.bits = bits
        self.arch = ARCHES.get((str(self.bin.get("arch")), bits), f"{self.bin.get('arch')}-{bits}")
        self.word = 8 if bits == 64 else 4
        entries = [e for e in list_of(core.cmdj("iej")) if integer(e.get("vaddr"))]
        program = [e for e in entries if e.get("type") == "program"] or entries
        self.entry: int | None = integer(program[0]["vaddr"]) if program else None
        self.baddr = integer(self.bin.get("baddr")) or 0
        self._load_tables()
        self.analyzed = False
        self.procs: list[Proc] = []
        self._flag_names: dict[str, str] | None = None  # radare2 flag -> rea name, built on first use
        self.by_addr: dict[int, Proc] = {}
        self.by_name: dict[str, Proc] = {}
        self._starts: list[int] = []
        self.unwind: dict[int, int] = {}  # unwind-table function start -> end
        self._strings: list[AddressedString] | None = None
        self._names: list[AddressedName] | None = None
        self._names_at: dict[int, list[str]] | None = None
        self.analysis_seconds = 0.0

    # -- loading -------------------------------------------------------------------------

    def _choose_slice(self, path: str) -> None:
        """A universal binary's host-architecture slice, else its first (the native provider's rule)."""
        bins = object_of(self.core.cmdj("iAj")).get("bins", [])
        archs = [(str(b.get("arch")), integer(b.get("bits")) or 0) for b in list_of(bins)]
        self.slices = [ARCHES.get(a, f"{a[0]}-{a[1]}") for a in archs]
        if not archs:
            return
        host = HOST_ARCHES.get(platform.machine().lower())
        wanted = archs[self.slices.index(host)] if host in self.slices else archs[0]
        info = object_of(object_of(self.core.cmdj("ij")).get("bin"))
        if (str(info.get("arch")), integer(info.get("bits"))) == wanted:
            return
        # radare2 picks a slice at load time from asm.arch/asm.bits: load again in a fresh core.
        self.core.renew()
        self.core.configure(_OUTPUT)
        self.core.configure(CONFIG)
        self.core.configure({"asm.arch": wanted[0], "asm.bits": str(wanted[1])})
        if not self.core.open(path):
            raise _unreadable(self.name)

    def _load_tables(self) -> None:
        core = self.core
        sections = []
        for s in list_of(core.cmdj("iSj")):
            vaddr, vsize = integer(s.get("vaddr")) or 0, integer(s.get("vsize")) or 0
            if vsize <= 0 or (vaddr == 0 and _perm(s.get("perm")) == "---"):
                continue
            sections.append(
                Region(
                    self._section_name(str(s.get("name", ""))),
                    vaddr,
                    vsize,
                    _perm(s.get("perm")),
                    integer(s.get("paddr")) or 0,
                    integer(s.get("size")) or 0,
                )
            )
        self.sections = sorted(sections, key=lambda r: (r.start, r.name))
        segments = []
        for index, s in enumerate(list_of(core.cmdj("iSSj"))):
            name = str(s.get("name", ""))
            vsize = integer(s.get("vsize")) or 0
            if self.format == "pe" or vsize <= 0:
                continue
            if self.format == "elf":
                if not name.startswith("LOAD"):
                    continue
                name = f"LOAD{index}"  # named after the program-header index, as readelf numbers them
            segments.append(
                Region(
                    name,
                    integer(s.get("vaddr")) or 0,
                    vsize,
                    _perm(s.get("perm")),
                    integer(s.get("paddr")) or 0,
                    integer(s.get("size")) or 0,
                )
            )
        self.segments = sorted(segments, key=lambda r: (r.start, r.name))
        # Sections say what is code and data; a file without section headers has its segments.
        self._regions = self.sections or self.segments
        self._region_starts = [r.start for r in self._regions]
        self._mapped = sorted((r.start, r.end) for r in self._regions)
        self.symbols = [s for s in list_of(core.cmdj("isj")) if integer(s.get("vaddr"))]
        self.exports = {
            (str(e.get("realname") or e.get("name")), integer(e.get("vaddr"))) for e in list_of(core.cmdj("iEj"))
        }
        self.imports: dict[str, int] = {}  # import name -> its procedure address (stub, else slot)
        self.import_slots: dict[int, str] = {}  # GOT / IAT / lazy-pointer slot -> import name
        self.import_stubs: dict[int, str] = {}
        relocs = {str(r.get("name")): integer(r.get("vaddr")) for r in list_of(core.cmdj("irj")) if r.get("name")}
        for imp in list_of(core.cmdj("iij")):
            name = str(imp.get("name") or "")
            if not name:
                continue
            plt = integer(imp.get("plt")) or 0
            if self.format == "pe":
                slot = plt
                stub = 0
            else:
                stub = plt
                slot = relocs.get(name) or 0
            if slot:
                self.import_slots.setdefault(slot, name)
            if stub:
                self.import_stubs.setdefault(stub, name)
            if stub or slot:
                self.imports.setdefault(name, stub or slot)
        # Slots of functions the binary defines itself and calls through its own PLT (a shared library's exported
        # function, open to interposition): slot -> name. Their stubs are named ``name@plt``, as native names them.
        defined = {str(s.get("realname")) for s in self.symbols if s.get("type") == "FUNC" and not s.get("is_imported")}
        self.local_slots: dict[int, str] = {
            slot: name
            for name, slot in relocs.items()
            if slot and name in defined and name not in self.imports and slot not in self.import_slots
        }
        # radare2 lower-cases a PE's DLL names and names no DLL per import: the import directory says both.
        self.pe_libraries: list[str] = []
        self.slot_library: dict[int, str] = {}
        if self.format == "pe":
            try:
                with open(self.path, "rb") as fh:
                    dlls, table = pe_imports(fh.read(MAX_PE_BYTES))
            except OSError:
                dlls, table = [], []
            self.pe_libraries = dlls
            self.slot_library = {imp.slot: imp.library for imp in table}

    def _section_name(self, name: str) -> str:
        if self.format == "mach-o" or self.target_format == "mach-o-universal":
            m = _MACHO_SECTION.fullmatch(name)
            if m:
                return f"{m.group(1)},{m.group(2)}"
        return name

    def mapped(self, addr: int) -> bool:
        i = bisect.bisect_right(self._mapped, (addr, float("inf"))) - 1
        return i >= 0 and self._mapped[i][0] <= addr < self._mapped[i][1]

    def region_at(self, addr: int) -> Region | None:
        """The section (else segment) holding ``addr``."""
        i = bisect.bisect_right(self._region_starts, addr) - 1
        # Regions rarely overlap: the few starting just below addr are the only candidates.
        for j in range(i, max(i - 8, -1), -1):
            if self._regions[j].start <= addr < self._regions[j].end:
                return self._regions[j]
        return None

    def section_of(self, addr: int) -> str | None:
        r = self.region_at(addr) if self.sections else None
        return None if r is None else r.name

    def executable(self, addr: int) -> bool:
        """Whether ``addr`` lies in executable code (sections, else segments when the file has none)."""
        r = self.region_at(addr)
        return r is not None and "x" in r.perm

    # -- analysis ------------------------------------------------------------------------

    def analyze(self, level: str, progress: Progress) -> AnalysisStats:
        """Run radare2's analysis, seed the starts it does not find itself, and build the procedure index."""
        if self.analyzed:
            return AnalysisStats(functions=len(self.procs), seconds=self.analysis_seconds)
        started = time.monotonic()
        # Known starts go first: radare2 then treats a jump to one as a tail call instead of absorbing the
        # target's code into the function that jumps there.
        seeds = self._seeds()
        progress(f"analysing {len(seeds)} functions from import stubs and unwind tables")
        for i, addr in enumerate(seeds):
            self.core.cmd(f"af @ {addr}")
            if i % 500 == 499:
                progress(f"seeded {i + 1} of {len(seeds)} functions")
        progress(f"radare2 analysis ({level})")
        self.core.cmd(level)
        repaired = self._repair(seeds, progress)
        absorbed = self._absorb_inner(progress)
        progress("indexing functions")
        self._index(list_of(self.core.cmdj("aflj")))
        self.analyzed = True
        self.analysis_seconds = round(time.monotonic() - started, 3)
        return AnalysisStats(
            functions=len(self.procs),
            seeded=len(seeds),
            separated=repaired,
            absorbed=absorbed,
            seconds=self.analysis_seconds,
        )

    def _seeds(self) -> list[int]:
        """Import stubs and unwind-table function starts that lie in executable code."""
        ranges: list[tuple[int, int]] = []
        sections = {r.name: r for r in self.sections}
        if self.format == "elf" and ".eh_frame" in sections:
            r = sections[".eh_frame"]
            data = self.core.read(r.start, min(r.size, 64 << 20))
            ranges = unwind.fde_ranges(data, r.start, self.word, self.bin.get("endian") != "big")
        elif self.format == "pe" and ".pdata" in sections:
            r = sections[".pdata"]
            data = self.core.read(r.start, min(r.size, 64 << 20))
            ranges = unwind.pdata_ranges(data, self.baddr, arm64=self.arch == "arm64")
        # The compiler's own extent of each function (the widest when entries overlap).
        for start, end in ranges:
            if self.executable(start) and end > start:
                self.unwind[start] = max(end, self.unwind.get(start, end))
        starts = set(self.import_stubs) | {start for start, _ in ranges}
        return sorted(a for a in starts if self.executable(a))

    def _repair(self, seeds: list[int], progress: Progress) -> int:
        """Give back the seeded starts another function absorbed: analyse the start first, then its absorber."""
        have = {integer(f.get("offset")) for f in list_of(self.core.cmdj("aflj"))}
        missing = [a for a in seeds if a not in have]
        if missing:
            progress(f"separating {len(missing)} functions radare2 merged into others")
        for i, addr in enumerate(missing):
            owner = _int(self.core.cmd(f"afo @ {addr}"))
            if owner:
                self.core.cmd(f"af- @ {owner}")
            self.core.cmd(f"af @ {addr}")
            if owner:
                self.core.cmd(f"af @ {owner}")
            if i % 200 == 199:
                progress(f"separated {i + 1} of {len(missing)} functions")
        return len(missing)

    def _absorb_inner(self, progress: Progress) -> int:
        """Give the code radare2 split off at a start inside another function's unwind range (a jump-table
        target, a block after a call it thought does not return) back to that function."""
        extents = unwind.Extents(self.unwind.items())
        owners: set[int] = set()
        inner = 0
        for f in list_of(self.core.cmdj("aflj")):
            addr = integer(f.get("offset"))
            owner = self._inner_of(extents, addr) if addr is not None else None
            if owner is not None:
                self.core.cmd(f"af- @ {addr}")
                owners.add(owner)
                inner += 1
        if owners:
            progress(f"merging {inner} blocks radare2 made functions back into {len(owners)} functions")
        for owner in sorted(owners):
            self.core.cmd(f"af- @ {owner}")
            self.core.cmd(f"af @ {owner}")
        return inner

    def _inner_of(self, extents: unwind.Extents, addr: int) -> int | None:
        """The function whose unwind range ``addr`` lies strictly inside, except in stub sections (one unwind
        entry may cover a whole PLT, and each stub is a procedure of its own)."""
        if addr in self.import_stubs or self.section_of(addr) in STUB_SECTIONS:
            return None
        return extents.inside_another(addr)

    def _index(self, functions: list[JSONObject]) -> None:
        symbols = self._function_symbols()
        # radare2 also makes functions of import flags outside the image (address 0): code only.
        extents = unwind.Extents(self.unwind.items())
        # A start inside another function's unwind range is a block of that function, never a function.
        fns = sorted(
            (
                f
                for f in functions
                if integer(f.get("offset")) is not None
                and self.executable(integer(f.get("offset")) or 0)
                and self._inner_of(extents, integer(f.get("offset")) or 0) is None
            ),
            key=lambda f: integer(f.get("offset")) or 0,
        )
        starts = [integer(f.get("offset")) or 0 for f in fns]
        procs: list[Proc] = []
        for i, f in enumerate(fns):
            addr = starts[i]
            r2name = str(f.get("name") or "")
            blocks = self._blocks(addr)
            nxt = starts[i + 1] if i + 1 < len(starts) else None
            ends = [b[0] + b[1] for b in blocks if addr <= b[0] and (nxt is None or b[0] < nxt)]
            end = max(ends) if ends else addr + max(integer(f.get("realsz")) or 0, 1)
            # The unwind table is the compiler's own extent: it covers code radare2 could not follow (a jump
            # table it did not resolve) and leaves out the alignment padding radare2 walks into after a call
            # that does not return. It stops at the next procedure (one FDE may cover a whole PLT).
            if addr in self.unwind:
                end = self.unwind[addr] if nxt is None else min(self.unwind[addr], nxt)
            cap = self._stub_cap(addr)
            if cap is not None and end > cap:
                # PLT0 ends where its own code does: the lazy-binding stubs after it are not part of it.
                end = cap
                blocks = [(b[0], min(b[1], cap - b[0]), *b[2:]) for b in blocks if b[0] < cap]
            p = Proc(addr, self._proc_name(addr, r2name, symbols), "local", r2name, end)
            p.blocks = blocks
            p.ninstrs = sum(b[2] for b in blocks) or (integer(f.get("ninstrs")) or 0)
            sig = f.get("signature")
            p.signature = str(sig).replace(r2name, p.name, 1) if sig else None
            p.calltype = str(f["calltype"]) if f.get("calltype") else None
            p.kind = self._proc_kind(p)
            procs.append(p)
        have = {p.addr for p in procs}
        # An import without a stub (PE, or an ELF call through the GOT) is a procedure at its slot.
        for slot, name in self.import_slots.items():
            if self.imports.get(name) == slot and slot not in have:
                procs.append(Proc(slot, name, "import", None, slot + self.word))
                have.add(slot)
        procs.sort(key=lambda p: (p.addr, p.name))
        self.procs = procs
        self._flag_names = None
        self._starts = [p.addr for p in procs]
        self.by_addr = {p.addr: p for p in procs}
        self.by_name = {}
        for p in procs:
            self.by_name.setdefault(p.name, p)

    def _stub_cap(self, addr: int) -> int | None:
        """Where code starting at ``addr`` in a stub section ends: one stub (PLT0's own size first in ``.plt``)."""
        r = self.region_at(addr) if self.sections else None
        if r is None or r.name not in STUB_SECTIONS:
            return None
        first = PLT0_SIZE.get(self.arch, 16) if r.name in (".plt", ".iplt") else 16
        return addr + (first if addr == r.start else 16)

    def _blocks(self, addr: int) -> list[tuple[int, int, int, int | None, int | None, tuple[int, ...]]]:
        out = []
        for b in list_of(self.core.cmdj(f"afbj @ {addr}")):
            start, size = integer(b.get("addr")), integer(b.get("size"))
            if start is None or not size:
                continue
            switch = b.get("switch_op")
            cases = (
                tuple(
                    sorted(
                        {integer(c.get("jump")) or 0 for c in list_of(switch.get("cases")) if integer(c.get("jump"))}
                    )
                )
                if isinstance(switch, dict)
                else ()
            )
            out.append(
                (start, size, integer(b.get("ninstr")) or 0, integer(b.get("jump")), integer(b.get("fail")), cases)
            )
        out.sort()
        return out

    def _function_symbols(self) -> dict[int, str]:
        """Defined function symbols by address: global before weak before local, then symbol-table order."""
        rank = {"GLOBAL": 0, "WEAK": 1}
        best: dict[int, tuple[int, int, str]] = {}
        for i, s in enumerate(self.symbols):
            if s.get("type") != "FUNC" or s.get("is_imported") or not s.get("realname"):
                continue
            if _FUNCTION_START.fullmatch(str(s["realname"])):
                continue
            addr = integer(s.get("vaddr")) or 0
            key = (rank.get(str(s.get("bind")), 2), i, str(s["realname"]))
            if addr not in best or key < best[addr]:
                best[addr] = key
        return {a: k[2] for a, k in best.items()}

    def _proc_name(self, addr: int, r2name: str, symbols: dict[int, str]) -> str:
        if addr in symbols:
            return symbols[addr]
        if addr in self.import_stubs:
            return self.import_stubs[addr]
        name = r2name
        for prefix in ("sym.imp.", "sym.", "dbg."):
            if name.startswith(prefix) and len(name) > len(prefix):
                name = name[len(prefix) :]
                break
        if name == "entry0":
            return "entry"
        if not name or _AUTO_NAME.fullmatch(name):
            return f"sub_{addr:x}"
        return name

    def _proc_kind(self, p: Proc) -> ProcedureKind:
        if p.addr in self.import_stubs or (p.r2name or "").startswith("sym.imp."):
            return "import"
        if self.section_of(p.addr) in STUB_SECTIONS:
            if self.local_slots and p.name.startswith("sub_"):
                # A stub jumping through the slot of a function defined here: named after it, a hop to it.
                for insn in list_of(self.core.cmdj(f"pdj 4 @ {p.addr}")):
                    name = self.local_slots.get(integer(insn.get("ptr")) or 0)
                    if name is not None:
                        p.name = f"{name}@plt"
                    if name is not None or "jmp" in str(insn.get("type")):
                        break  # the stub ends at its jump (PLT0's must not reach into the next stub)
            return "thunk"  # PLT0 and other stub-section code that is no import's stub
        if p.ninstrs == 1 and len(p.blocks) == 1:
            first = list_of(self.core.cmdj(f"pdj 1 @ {p.addr}"))
            if first and str(first[0].get("type")) in ("jmp", "ujmp", "ijmp", "irjmp", "rjmp", "mjmp"):
                # A stub that jumps through an import slot (a PE import thunk) is named after its import, not
                # after radare2's label for it (sub.msvcrt.dll_getenv).
                slot = integer(first[0].get("ptr"))
                if slot in self.import_slots and (p.r2name or "").startswith(("sub.", "fcn.")):
                    p.name = self.import_slots[slot]
                return "thunk"
        return "local"

    # -- selectors -----------------------------------------------------------------------

    def require_analysis(self) -> None:
        if not self.analyzed:
            raise ReaError(
                "execution_failure",
                "radare2 has not analysed the target yet",
                remediation="Retry: the client runs the analysis before any query that needs it.",
            )

    def select(self, params: Arguments) -> Proc:
        """The procedure a ``procedure`` selector names: exact name, or an address where one starts."""
        self.require_analysis()
        value = params.get("procedure")
        if isinstance(value, str) and value in self.by_name:
            return self.by_name[value]
        if answers.looks_like_address(value):
            p = self.by_addr.get(answers.parse_address(value, "procedure"))
            if p is not None:
                return p
        if value is None or value == "":
            raise answers.bad("procedure", "procedure is required", "missing_argument")
        raise answers.unknown_procedure(value)

    def in_rea_names(self, text: str) -> str:
        """``text`` (radare2's own rendering) with its function flags (``sym.add``, ``fcn.00001129``,
        ``sym.imp.puts``) replaced by the names rea lists, so user names and every other tool match it."""
        mapping = self._flag_names
        if mapping is None:
            mapping = self._flag_names = {p.r2name: p.name for p in self.procs if p.r2name and p.r2name != p.name}
        if not mapping:
            return text
        return _FLAG_TOKEN.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)

    def containing(self, addr: int) -> Proc | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        for j in (i, i - 1):
            if j >= 0 and self.procs[j].addr <= addr < self.procs[j].end:
                return self.procs[j]
        return None

    def name_at(self, addr: int) -> str | None:
        """A symbol or import name at ``addr``, else the name of a procedure starting there."""
        names = self.names_at(addr)
        if names:
            return names[0]
        p = self.by_addr.get(addr)
        return None if p is None else p.name

    # -- inventory operations ------------------------------------------------------------

    def documents(self, params: Arguments) -> tuple[Any, Any]:
        fmt = self.target_format if self.target_format == "mach-o-universal" else self.format
        doc = SlicedDocument(
            name=self.name,
            format=fmt,
            architecture=self.arch,
            sha256=self.sha256,
            entry=answers.hexa(self.entry),
            bits=self.bits,
            endianness="big" if self.bin.get("endian") == "big" else "little",
            slice=self.arch if self.slices else None,
            slices=list(self.slices) if self.slices else None,
        )
        raw = {
            k: self.bin.get(k)
            for k in (
                "arch",
                "bits",
                "bintype",
                "class",
                "machine",
                "os",
                "baddr",
                "pic",
                "stripped",
                "compiler",
                "lang",
            )
        }
        return {"documents": [doc]}, raw

    def segments_op(self, params: Arguments) -> tuple[Any, Any]:
        rows = [r.item("segment") for r in self.segments] + [r.item("section") for r in self.sections]
        return {"segments": rows}, None

    def layout(self, params: Arguments) -> tuple[Any, Any]:
        """Sections, mitigations and linkage as radare2's binary info reports them."""
        b = self.bin
        found = self.core.cmdj("ilj")
        libraries = self.pe_libraries or [x for x in (found if isinstance(found, list) else []) if isinstance(x, str)]
        imports = set(self.imports)
        interpreter = str(b.get("intrp") or "") or None
        rpath = str(b.get("rpath") or "")
        relro = {"full": "full", "partial": "partial"}.get(str(b.get("relro")), "none")
        mitigations = Mitigations(
            nx=bool(b.get("nx")),
            # A shared library is position independent too; PIE means an executable built that way.
            pie=bool(b.get("pic")) and (self.format != "elf" or interpreter is not None),
            relro=relro if self.format == "elf" else "unknown",
            canary=bool(b.get("canary")),
            # radare2 drops one leading underscore of Mach-O imports: __printf_chk may read _printf_chk.
            fortify=any(n.startswith("_") and n.endswith("_chk") and "stack_chk" not in n for n in imports),
            cet_ibt="unknown",
            cet_shstk="unknown",
            bti="unknown",
        )
        body = Layout(
            format=self.format,
            architecture=self.arch,
            entry=answers.hexa(self.entry),
            bits=self.bits,
            image_base=hex(self.baddr),
            segments=[r.layout_item() for r in self.segments],
            sections=[r.layout_item() for r in self.sections],
            mitigations=mitigations,
            linkage=Linkage(
                interpreter=interpreter,
                needed=libraries,
                rpath=[p for p in rpath.split(":") if p] if rpath not in ("", "NONE") else [],
                runpath=[],
            ),
            imports=sorted((self._import_item(name, libraries) for name in self.imports), key=lambda item: item.name),
            exports=self._exports(),
        )
        return body, {k: b.get(k) for k in ("nx", "pic", "relro", "canary", "intrp", "rpath", "static", "stripped")}

    def _exports(self) -> list[ExportRow]:
        """The symbols the binary exports (``iEj``), by name, at their addresses."""
        out: dict[str, int] = {}
        for e in list_of(self.core.cmdj("iEj")):
            name, vaddr = e.get("realname") or e.get("name"), integer(e.get("vaddr"))
            if isinstance(name, str) and name and vaddr and self.mapped(vaddr):
                out.setdefault(name, vaddr)
        return [ExportRow(name=n, address=answers.hexa(a)) for n, a in sorted(out.items())]

    def _import_item(self, name: str, libraries: list[str]) -> ImportRow:
        slot = next((slot for slot, n in self.import_slots.items() if n == name), None)
        library = self.slot_library.get(slot) if slot is not None else None
        if self.format == "mach-o":
            # radare2 drops one leading underscore of a Mach-O symbol (the file says _printf); dyld's binder has none.
            name = name if name == "dyld_stub_binder" else "_" + name
            # Which dylib binds each import is in dyld's bind opcodes; with one dylib it can only be that one.
            library = libraries[0] if len(libraries) == 1 else None
        return ImportRow(name=name, library=library, slot=answers.hexa(slot))

    def procedures(self, params: Arguments) -> tuple[Any, Any]:
        self.require_analysis()
        result = answers.page("procedures", self.procs, params, Proc.item)
        offset, limit = answers.paging(params)
        raw = {
            "functions": [
                {"address": hex(p.addr), "radare2_name": p.r2name} for p in self.procs[offset : offset + limit]
            ]
        }
        return result, raw

    def search_procedures(self, params: Arguments) -> tuple[Any, Any]:
        self.require_analysis()
        found = answers.search(self.procs, lambda p: p.name, params)
        return answers.page("procedures", found, params, Proc.item), None

    def strings(self) -> list[AddressedString]:
        if self._strings is None:
            self._strings = self._collect_strings()
        return self._strings

    def _collect_strings(self) -> list[AddressedString]:
        out = []
        min_chars, max_chars = engine_rows.MIN_STRING_CHARS, engine_rows.MAX_STRING_CHARS
        for s in list_of(self.core.cmdj("izj")):
            codec = STRING_ENCODINGS.get(str(s.get("type")))
            addr, size = integer(s.get("vaddr")), integer(s.get("size"))
            if codec is None or addr is None or not size:
                continue
            unit = 2 if codec == "utf-16le" else 1
            cap = max_chars * 4 + unit
            data = self.core.read(addr, min(size, cap))
            data = data[: len(data) - len(data) % unit]
            while data.endswith(b"\0" * unit):
                data = data[:-unit]
            text = data.decode(codec, errors="replace")
            if len(text) < min_chars:
                continue
            encoding: Literal["ascii", "utf-8", "utf-16le"] = (
                "utf-16le" if unit == 2 else ("ascii" if data.isascii() else "utf-8")
            )
            clipped = size > cap
            section = s.get("section")
            item = StringItem(
                address=hex(addr),
                value=text[:max_chars],
                encoding=encoding,
                byte_length=size - unit if clipped else len(data),
                truncated=clipped or len(text) > max_chars,
                section=self._section_name(str(section)) if section else self.section_of(addr),
            )
            out.append(AddressedString(addr, item))
        out.sort(key=lambda s: (s.addr, s.item.value))
        return out

    def list_strings(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.strings_page(self.strings(), params, _address_param(params)), None

    def search_strings(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.found_strings_page(self.strings(), params), None

    def names(self) -> list[AddressedName]:
        if self._names is None:
            self._names = self._collect_names()
        return self._names

    def _collect_names(self) -> list[AddressedName]:
        out: dict[tuple[int, str, str], AddressedName] = {}
        for s in self.symbols:
            kind_r2 = str(s.get("type"))
            name = str(s.get("realname") or s.get("name") or "")
            addr = integer(s.get("vaddr")) or 0
            if not name or s.get("is_imported") or kind_r2 in ("FILE", "SECT", "SECTION") or not self.mapped(addr):
                continue
            if _FUNCTION_START.fullmatch(name):
                continue
            kind: NameKind
            if kind_r2 == "FUNC":
                kind = "export" if self.format == "elf" and (name, addr) in self.exports else "function"
            elif kind_r2 == "OBJ":
                kind = "data"
            else:
                kind = "label"
            out.setdefault(
                (addr, name, kind),
                AddressedName(addr, NameItem(address=hex(addr), name=name, kind=kind, external=False)),
            )
        for name, addr in self.imports.items():
            out.setdefault(
                (addr, name, "import"),
                AddressedName(addr, NameItem(address=hex(addr), name=name, kind="import", external=True)),
            )
        return [out[k] for k in sorted(out)]

    def names_at(self, addr: int) -> list[str]:
        if self._names_at is None:
            self._names_at = engine_rows.names_by_address(self.names())
        return self._names_at.get(addr, [])

    def list_names(self, params: Arguments) -> tuple[Any, Any]:
        return engine_rows.names_page(self.names(), params, _address_param(params)), None

    def address_name(self, params: Arguments) -> tuple[Any, Any]:
        at = answers.parse_address(params.get("address"))
        names = self.names_at(at)
        p = self.by_addr.get(at)
        name = names[0] if names else (p.name if p is not None else None)
        return {"address": hex(at), "name": name}, {"names": names}

    def procedure_address(self, params: Arguments) -> tuple[Any, Any]:
        p = self.select(params)
        return {"procedure": params.get("procedure"), "address": hex(p.addr), "name": p.name}, None

    def resolve_containing(self, params: Arguments) -> tuple[Any, Any]:
        self.require_analysis()
        at = answers.parse_address(params.get("address"))
        p = self.containing(at)
        proc = None if p is None else ContainingProcedure(address=hex(p.addr), name=p.name, size=p.size, end=hex(p.end))
        return {"address": hex(at), "procedure": proc}, None


def _address_param(params: Arguments) -> int | None:
    """The request's ``address``, None when it names none."""
    return None if params.get("address") is None else answers.parse_address(params["address"])


def _int(text: str) -> int | None:
    try:
        return int(text.strip(), 0)
    except ValueError:
        return None


def _unreadable(name: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"radare2 could not open {name}",
        remediation="Check that the file is an intact ELF, PE or Mach-O binary.",
        details={"reason": "unparseable"},
    )
