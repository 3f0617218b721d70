"""One open binary: memory map, procedure inventory, extents, blocks, references and strings (lazy, cached)."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import mmap
import os
from array import array
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

import msgspec

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea_plugins.native import assist as second_core
from rea_plugins.native import graph
from rea_plugins.native import registers
from rea_plugins.native.assist import Assist
from rea_plugins.native.assist import Pending
from rea_plugins.native.disasm import COND
from rea_plugins.native.disasm import JUMP
from rea_plugins.native.disasm import RET
from rea_plugins.native.disasm import FlowReader
from rea_plugins.native.disasm import Insn
from rea_plugins.native.disasm import arm64_jump_table
from rea_plugins.native.disasm import decode
from rea_plugins.native.disasm import x86_jump_table
from rea_plugins.native.image import Image
from rea_plugins.native.index import REF_KINDS
from rea_plugins.native.index import RELEASE_BYTES
from rea_plugins.native.index import Analysis
from rea_plugins.native.index import Proc
from rea_plugins.native.index import ProgramIndex
from rea_plugins.native.index import Ref
from rea_plugins.native.index import RefTable
from rea_plugins.native.index import column
from rea_plugins.native.index import overdue
from rea_plugins.native.index import too_big
from rea_plugins.native.limits import Limits
from rea_plugins.native.model import Model
from rea_plugins.native.model import Region
from rea_plugins.native.registers import RegisterRows
from rea_plugins.native.registers import RegistersJob
from rea_plugins.native.regload import MAX_TARGETS
from rea_plugins.native.regload import Found
from rea_plugins.native.regload import Walker
from rea_plugins.native.store import BlockCounts
from rea_plugins.native.store import Store
from rea_plugins.native.store import detached
from rea_plugins.native.strings import StringColumns
from rea_plugins.native.strings import StringItem
from rea_plugins.native.strings import Strings
from rea_plugins.native.strings import StringsJob
from rea_plugins.native.strings import scan_strings
from rea_plugins.native.strings import strings_of
from rea_plugins.native.sweep import Records
from rea_plugins.native.sweep import decode_batch

__all__ = ["Block", "Limits", "Proc", "Program", "Ref", "StringItem", "overdue", "too_big"]


class Block(NamedTuple):
    start: int
    end: int
    n_insns: int
    successors: tuple[tuple[int, str], ...]


_CACHE_SIZE = 256
# Procedures whose block counts a target keeps (each answer rewrites the entry: bounded, a few bytes each).
MAX_KEPT_BLOCK_COUNTS = 4096
# Register call sites the register-load resolver examines per target (beyond: they stay unresolved).
MAX_REGISTER_SITES = 50_000
_CALL_CODE, _JUMP_CODE, _INDIRECT_CODE = REF_KINDS.index("call"), REF_KINDS.index("jump"), REF_KINDS.index("indirect")
MMAP_THRESHOLD = 32 << 20
_HASH_PIECE = 16 << 20
# Legacy prefixes (segment, operand/address size, lock, rep, notrack): what may precede an indirect branch's REX.
_PREFIXES = frozenset(b"\x26\x2e\x36\x3e\x64\x65\x66\x67\xf0\xf2\xf3")
_MAX_PREFIXED = 6


class _Refs:
    """One adopted reference table: per-procedure slices, and targets indexed on first incoming query."""

    def __init__(self, table: RefTable) -> None:
        rows = len(table.kind)
        self.src = column(table.src, rows)
        self.dst = column(table.dst, rows)
        self.kind = table.kind
        self.proc = column(table.proc, rows)
        self.out = _Runs(self.proc)
        self._order: array[int] | None = None  # row numbers by target, for incoming queries
        self._dsts: array[int] = array("q")

    def outgoing(self, proc: int, program: Program) -> list[Ref]:
        lo, hi = self.out.get(proc, (0, 0))
        return [program._ref(self.src[i], self.dst[i], self.kind[i], proc) for i in range(lo, hi)]

    def incoming(self, start: int, end: int, program: Program) -> list[Ref]:
        if self._order is None:
            # Two compact columns (rows by target, and their targets), not a dict of lists per target.
            dsts = self.dst.tolist()
            order = sorted((i for i, d in enumerate(dsts) if d >= 0), key=dsts.__getitem__)
            self._dsts = array("q", [dsts[i] for i in order])
            self._order = array("q", order)
        lo = bisect.bisect_left(self._dsts, start)
        hi = bisect.bisect_left(self._dsts, end, lo)
        return [
            program._ref(self.src[i], self.dst[i], self.kind[i], self.proc[i])
            for i in self._order[lo:hi]  # by target, then row (a stable sort)
        ]


class _Runs:
    """Each owner's slice of a column grouped by owner, as three compact columns in owner order (a dict of tuples
    costs about ten times as much a procedure, and a big program has hundreds of thousands)."""

    def __init__(self, owners: Sequence[int]) -> None:
        starts, ends, lows = array("q"), array("q"), array("q")
        i, n = 0, len(owners)
        # A gallop and a binary search per owner, so a table of millions of rows costs in its owners, not its rows.
        while i < n:
            owner = owners[i]
            step, last = 1, i  # owners[last] == owner; find the first index past the run
            while last + step < n and owners[last + step] == owner:
                last += step
                step *= 2
            hi = min(n, last + step)
            while last + 1 < hi:  # owners[last] == owner, owners[hi] != owner (or hi == n)
                mid = (last + hi) // 2
                if owners[mid] == owner:
                    last = mid
                else:
                    hi = mid
            starts.append(owner)
            lows.append(i)
            ends.append(last + 1)
            i = last + 1
        if any(a > b for a, b in itertools.pairwise(starts)):  # the data table's slots (owner -1) come last
            order = sorted(range(len(starts)), key=starts.__getitem__)
            starts = array("q", (starts[k] for k in order))
            lows = array("q", (lows[k] for k in order))
            ends = array("q", (ends[k] for k in order))
        self.owners, self.lows, self.ends = starts, lows, ends

    def get(self, owner: int, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        """The rows ``[lo, hi)`` of ``owner``, else ``default``."""
        k = bisect.bisect_left(self.owners, owner)
        if k < len(self.owners) and self.owners[k] == owner:
            return self.lows[k], self.ends[k]
        return default

    def __len__(self) -> int:
        return len(self.owners)


def _private_mapping(source: Any) -> Any:
    """A read-only mapping of a private copy of ``source`` (an open file), unlinked at once: nothing another
    process does to the target can shrink it, and nothing is left on disk whatever ends the server."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="rea-native-copy-")
    try:
        with open(os.path.join(folder, "target"), "w+b") as copy:
            os.unlink(copy.name)
            source.seek(0)
            shutil.copyfileobj(source, copy, 1 << 22)
            copy.flush()
            if copy.tell() == 0:
                return b""
            return mmap.mmap(copy.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError):
        source.seek(0)
        return source.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Program:
    """Lazy analysis state of one target; every method is safe to call repeatedly (results cached)."""

    def __init__(
        self,
        model: Model,
        path: str,
        limits: Limits,
        store: Store | None = None,
        assist: Assist | None = None,
    ) -> None:
        """``assist`` sends a flow sweep's part to the parse worker (``rea_plugins.native.assist``)."""
        self.model = model
        self.limits = limits
        self._file = open(path, "rb")  # noqa: SIM115 - lives as long as the client
        self._data: Any
        size = os.fstat(self._file.fileno()).st_size
        self.opened_size = size
        # Never a mapping of the target itself: a file truncated behind our back would SIGBUS the server at
        # the next access. Small targets are read; large ones are copied to an unlinked private file, mapped, and
        # each whole-file pass releases the pages it read (Image.release), so they are not resident all at once.
        self._data = self._file.read() if size <= MMAP_THRESHOLD else _private_mapping(self._file)
        self.store = store if store is not None else detached()
        self.image = Image(model, self._data)
        if self.store.verified and self._digest() != self.store.sha256:
            self.store.verified = False  # the file changed since it was identified: keep nothing of it
        self.size = self.image.size
        self.regions = self.image.regions
        self.code_regions = self.image.code_regions
        self.an = Analysis(self.image, limits)
        self.assist = assist
        self.path = path
        if assist is not None:
            self.an.assist = assist
            self.an.assist_file = (path, self.sha256)
        self._sha: str | None = self.store.sha256 if self.store.verified else None
        self.pointer = self.image.pointer
        # Call-target discovery at every size (bounded by the index's deadline); none in an IL-only .NET assembly,
        # whose .text is IL and metadata, not machine code (extract.IL_ONLY_NOTE).
        self.discovery = model.linkage.clr != "il-only"
        self._inventory = False
        # Parts by parent, for the inventory list (and its length) they were read from.
        self._parts: tuple[list[Proc], int, dict[int, list[Proc]]] | None = None
        self._insns: OrderedDict[int, list[Insn]] = OrderedDict()
        self._block_counts: dict[int, tuple[int, int]] | None = None
        self._index: ProgramIndex | None = None
        self._tables: list[_Refs] = []
        # Register calls resolved by register loads (built on first use; an empty table once built).
        self._registers: _Refs | None = None
        self._graph: graph.Edges | None = None
        # Code addresses data references name (x86), sorted: a column, not a set (a chromium's vtables name 100 ks).
        self._code_data: array[int] | None = None
        # Procedure starts (in order) and each one's only flow reference's row, or -1 for several (compact columns).
        self._single: tuple[array[int], array[int]] | None = None
        self._exports: frozenset[int] | None = None
        self.register_provenance: dict[tuple[int, int], str] = {}  # (site, target) -> how it was proven
        self._strings: Strings | None = None
        self._strings_job: Pending[StringColumns] | None = None  # the scan sent to the parse worker
        self._sites: dict[int, list[int]] | None = None  # register sites by procedure (_register_sites)
        self._registers_job: Pending[RegisterRows] | None = None  # the later procedures' register calls, sent there
        self._names: list[tuple[int | None, str, str, bool]] | None = None
        # Procedures named by a library signature (rea_plugins.native.libsigs), by address; None until matched.
        self.library: dict[int, Any] | None = None
        self.import_slots = self.an.import_slots
        self.stubs = self.an.stubs
        self.limitations: list[str] = list(model.limitations)

    def _digest(self) -> str:
        """The SHA-256 of the bytes read, a piece at a time, each piece's pages released once hashed."""
        digest = hashlib.sha256()
        view = memoryview(self._data)
        for lo in range(0, len(view), _HASH_PIECE):
            digest.update(view[lo : lo + _HASH_PIECE])
            self.image.release(lo, lo + _HASH_PIECE)
        view.release()
        return digest.hexdigest()

    def sha256(self) -> str:
        """The SHA-256 of the bytes read (the store's when it verified them)."""
        if self._sha is None:
            self._sha = hashlib.sha256(self._data).hexdigest()
        return self._sha

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        self._file.close()

    def check_unchanged(self) -> None:
        """``artifact_changed`` when the target's size is no longer the one opened (truncated or grown)."""
        try:
            now = os.fstat(self._file.fileno()).st_size
        except OSError:
            now = -1
        if now != self.opened_size:
            raise ReaError(
                "artifact_changed",
                f"the target changed size while open ({self.opened_size} -> {now} bytes)",
                remediation="Open the target again with open_binary.",
                details={"opened_size": self.opened_size, "size": now},
            )

    # -- memory ----------------------------------------------------------------------------

    def region_at(self, address: int) -> Region | None:
        return self.image.region_at(address)

    def mapped(self, address: int) -> bool:
        return self.image.mapped(address)

    def code_region_at(self, address: int) -> Region | None:
        return self.image.code_region_at(address)

    def read(self, address: int, length: int) -> bytes | None:
        """File-backed bytes at ``address``; None when not fully backed."""
        return self.image.read(address, length)

    def _code_bytes(self, start: int, end: int) -> bytes:
        return self.image.code(start, end)

    def _bounded(self, p: Proc, end: int) -> None:
        """Refuse to decode a procedure larger than ``max_function_instructions`` could hold."""
        if (end - p.address) // 16 > self.limits.max_function_instructions:
            raise too_big(
                "instructions in one procedure",
                self.limits.max_function_instructions,
                resource="instructions",
                procedure=f"0x{p.address:x}",
            )

    # -- procedure inventory ----------------------------------------------------------------

    def procedures(self, ctx: CallContext | None = None) -> list[Proc]:
        """All procedures by address (symbols, entry, exception tables, stubs; call targets when enabled)."""
        if not self._inventory and not self._adopt_kept():
            self.an.inventory(ctx.check if ctx is not None else None)
            self._inventory = True
            if self.discovery:
                self.references(ctx)
        if self.library is None:  # after every other name: a signature names only what is still sub_*
            from rea_plugins.native import libsigs

            self.library = {}  # while they are matched: a name lookup from inside reads the names as they are
            try:
                self.library = libsigs.name_procedures(self, ctx)
            except ReaError:
                self.library = None  # cancelled (or out of time) before anything was renamed: the next call retries
                raise
            except Exception as exc:  # a library rea could not read never fails another tool
                self.limitations.append(f"library functions are not named: {type(exc).__name__}: {exc}"[:300])
        return self.an.procs

    def procedure(self, address: int) -> Proc | None:
        self.procedures()
        return self.an.by_addr.get(address)

    def by_name(self, name: str) -> Proc | None:
        self.procedures()
        p = self.an.by_name.get(name)
        if p is None and self.model.format == "mach-o":
            p = self.an.by_name.get("_" + name)
        return p

    def containing(self, address: int) -> Proc | None:
        procs = self.procedures()
        i = bisect.bisect_right(self.an.starts, address) - 1
        if i < 0:
            return None
        p = procs[i]
        return p if p.address <= address < max(self.end_of(p), p.address + 1) else None

    def parts_of(self, p: Proc) -> list[Proc]:
        """Split-off parts (gcc's ``foo.cold``) linked to ``p``, by address."""
        procs = self.procedures()
        if self._parts is None or self._parts[0] is not procs or self._parts[1] != len(procs):
            parts: dict[int, list[Proc]] = {}
            for q in procs:
                if q.part_of is not None:
                    parts.setdefault(q.part_of, []).append(q)
            self._parts = (procs, len(procs), parts)
        return list(self._parts[2].get(p.address, ()))

    # -- extents and instructions ----------------------------------------------------------

    def end_of(self, p: Proc) -> int:
        if p.end is None:
            p.end = self.an.extent(p)
        return p.end

    def _table(self, window: list[Insn], start: int, limit: int) -> list[int] | None:
        if self.model.arch == "arm64":
            return arm64_jump_table(window, self.read, lambda a: start <= a < limit)
        if self.model.arch not in ("x86_64", "x86"):
            return None
        return x86_jump_table(window, self.read, lambda a: start <= a < limit)

    def instructions(self, p: Proc, keep: bool = True) -> list[Insn]:
        """The procedure's instructions by linear decoding of its extent (cached, LRU, unless not ``keep``)."""
        cached = self._insns.get(p.address)
        if cached is not None:
            self._insns.move_to_end(p.address)
            return cached
        end = self.end_of(p)
        if p.kind == "import" and self.code_region_at(p.address) is None:
            return []
        self._bounded(p, end)
        out = list(decode(self.md, self._code_bytes(p.address, end), p.address))
        if not keep:
            return out
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

    @property
    def md(self) -> Any:
        """The decoder (capstone is loaded on the first decode, not when a cached program opens)."""
        return self.an.md

    def block_counts(self, p: Proc) -> tuple[int, int]:
        """``p``'s basic blocks and instructions, counted once per target and kept in the analysis cache (a
        second process asking for a procedure's facts decodes nothing)."""
        if self._block_counts is None:
            kept = self.store.block_counts()
            self._block_counts = dict(kept.counts) if kept is not None else {}
        counts = self._block_counts.get(p.address)
        if counts is None:
            blocks = self.blocks(p)
            counts = (len(blocks), sum(b.n_insns for b in blocks))
            if len(self._block_counts) < MAX_KEPT_BLOCK_COUNTS:
                self._block_counts[p.address] = counts
                self.store.keep_block_counts(BlockCounts(counts=dict(self._block_counts)))
        return counts

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
        return self.an.import_address(name)

    def name_of_target(self, address: int) -> str | None:
        """The procedure starting at ``address``, else the import whose slot it is."""
        p = self.an.by_addr.get(address)
        if p is not None:
            return p.name
        return self.import_slots.get(address)

    def register_walker(self, p: Proc, keep: bool = True) -> Walker | None:
        """The register-load resolver over one procedure's instructions (x86-64 only), None where not possible;
        ``keep`` False leaves the decode out of the instruction cache (a whole-program pass reads each once)."""
        if self.model.arch != "x86_64" or p.kind not in ("local", "thunk"):
            return None
        try:
            # The raw records where the binding exposes them; the instructions otherwise (and when they are kept).
            raw = not keep and p.address not in self._insns and self.an.sweeper.raw is not None
            records = self._records(p) if raw else None
            insns = self.instructions(p, keep) if records is None else records
        except ReaError:
            return None

        def slot_value(slot: int) -> int | None:
            name = self.import_slots.get(slot)
            if name is not None:
                return self.import_address(name) or slot
            # A read-only pointer to code (MinGW's __imp_ pointers, const function tables): what it holds.
            region = self.image.region_at(slot)
            if region is None or "w" in region.perms:
                return None
            value = self.pointer_slot(slot)
            value = self.image.pointer_at(slot) if value is None else value
            return value if value is not None and value in self.an.by_addr else None

        if records is None:
            return Walker(insns, lambda a: a in self.an.by_addr, slot_value)
        return Walker(records, lambda a: a in self.an.by_addr, slot_value, records)

    def _records(self, p: Proc) -> Records:
        """``p``'s instructions as ``instructions`` decodes them, each made on first read (a whole-program pass over
        register sites reads a few of each procedure's); not cached."""
        end = self.end_of(p)
        self._bounded(p, end)
        return Records(decode_batch(self.md, self.an.sweeper.raw, self._code_bytes(p.address, end), p.address))

    def _register_calls(self, ctx: CallContext | None) -> _Refs | None:
        """Calls and tail jumps through a register that register loads resolve, as one more reference table
        (built on first use from the index's indirect sites, at most ``MAX_REGISTER_SITES`` of them)."""
        if self._registers is not None or self.model.arch != "x86_64":
            return self._registers or None
        sites = self._register_sites()
        owners = sorted(sites)
        share, self._registers_job = self._registers_job, None
        if share is None:
            share = self._send_registers(sites)
        mine = owners[: len(owners) - len(share.job.owners)] if share is not None else owners
        rows = self.register_rows(mine, sites, ctx)
        if share is not None:
            got = share.result(lambda: ctx.check("resolving register calls") if ctx is not None else None)
            if got is None:  # the worker failed: the rest is ours
                rows += self.register_rows(share.job.owners, sites, ctx)
            else:
                for owner, site, t, kind, how in got.rows:
                    rows.append((owner, site, t, kind))
                    self.register_provenance[(site, t)] = how
        rows.sort()
        table = RefTable(
            src=array("q", [r[1] for r in rows]).tobytes(),
            dst=array("q", [r[2] for r in rows]).tobytes(),
            kind=bytes(r[3] for r in rows),
            proc=array("q", [r[0] for r in rows]).tobytes(),
        )
        self._registers = _Refs(table)
        self._sites = None  # resolved: the sites by procedure are not kept for the session
        self.image.release()
        return self._registers

    def _register_sites(self) -> dict[int, list[int]]:
        """Procedure start -> its indirect sites that may be a ``call reg`` or ``jmp reg``, from the index (once)."""
        if self._sites is not None:
            return self._sites
        flow = self._tables[0]
        kinds, marker = flow.kind, bytes([_INDIRECT_CODE])
        sites: dict[int, list[int]] = {}
        # Only the indirect sites are visited (bytes.find), not every reference of the index in Python.
        i = kinds.find(marker)
        release = self._paced_release()
        while i >= 0:
            site = flow.src[i]
            release(site)
            # A site at a region's very end has fewer bytes behind it than the longest form reads.
            if _through_register(self.read(site, _MAX_PREFIXED) or self.read(site, 3) or self.read(site, 2)):
                sites.setdefault(flow.proc[i], []).append(site)
            i = kinds.find(marker, i + 1)
        self._sites = sites
        return sites

    def register_rows(
        self, owners: list[int], sites: dict[int, list[int]], ctx: CallContext | None
    ) -> list[tuple[int, int, int, int]]:
        """(procedure, site, target, kind) of the register sites of ``owners`` (sorted) that register loads resolve,
        at most ``MAX_REGISTER_SITES`` sites; their provenance goes to ``register_provenance``."""
        rows: list[tuple[int, int, int, int]] = []
        budget = MAX_REGISTER_SITES
        release = self._paced_release()
        for owner in owners:
            if ctx is not None:
                ctx.check("resolving register calls")
            release(owner)
            p = self.an.by_addr.get(owner)
            walker = self.register_walker(p, keep=False) if p is not None and budget > 0 else None
            if walker is None:
                continue
            for site in sorted(sites[owner]):
                budget -= 1
                found = walker.trace(site)
                targets = (
                    found.targets
                    if found is not None and not found.entry
                    else self._from_only_caller(p, found, ctx)
                    if found is not None and p is not None
                    else None
                )
                kind = _CALL_CODE if walker.mnemonic(site) == "call" else _JUMP_CODE
                for t, how in (targets or {}).items():
                    rows.append((owner, site, t, kind))
                    self.register_provenance[(site, t)] = how
        return rows

    def _send_registers(
        self,
        sites: dict[int, list[int]],
        after: Pending[Any] | None = None,
        index: ProgramIndex | None = None,
        share: float = registers.REGISTERS_SHARE,
    ) -> Pending[RegisterRows] | None:
        """The register sites of the later procedures (``share`` of them) sent to the parse worker (with this
        program's ``index``, given when the build has it at hand) once ``after`` is answered, when it runs and this
        server holds the whole file (and the budget cannot run out: no order of the sites matters); None otherwise."""
        owners = sorted(sites)
        if self.assist is None or len(owners) < registers.MIN_SHARED_OWNERS or self._index is None:
            return None
        if sum(map(len, sites.values())) > MAX_REGISTER_SITES:
            return None
        if not second_core.shareable(self._data):
            return None
        theirs = owners[len(owners) - int(len(owners) * share) :]
        if index is None:
            index = msgspec.structs.replace(self._index, procs=self.an.proc_records())
        job = RegistersJob(
            path=self.path,
            sha256=self.sha256(),
            model=msgspec.msgpack.encode(self.model),
            index=msgspec.msgpack.encode(msgspec.structs.replace(index, data=None)),
            limits=self.limits,
            owners=theirs,
            sites=[sites[o] for o in theirs],
        )
        return self.assist(job, after)

    def _paced_release(self) -> Callable[[int], None]:
        """A pass reading code in address order: every ``RELEASE_BYTES`` it moves, the mapped file's pages leave the
        resident set (a chromium's indirect sites touch every page of its 236 MB of code)."""
        mark: list[int] = []

        def at(address: int) -> None:
            if not mark:
                mark.append(address)
            elif abs(address - mark[0]) >= RELEASE_BYTES:
                self.image.release()
                mark[0] = address

        return at

    def _from_only_caller(self, p: Proc, found: Found, ctx: CallContext | None) -> dict[int, str] | None:
        """Complete a register site whose value the procedure's entry holds from its one caller: a procedure
        called from one site only, never exported, jumped to or referenced as data, gets its register there."""
        if p.kind != "local" or p.address in self._exported():
            return None
        # Calls and jumps first: the references from data only add to them, so most procedures are settled
        # without reading data references at all.
        only = self._only_reference(p.address)
        if only is None or only.kind != "call" or only.proc == p.address:
            return None
        caller = self.an.by_addr.get(only.proc)
        walker = self.register_walker(caller, keep=False) if caller is not None else None
        if walker is None:
            return None
        out = dict(found.targets)
        for reg in sorted(found.entry):
            passed = walker.trace(only.src, reg, "caller-argument")
            if passed is None or passed.entry:
                return None
            for t, how in passed.targets.items():
                out.setdefault(t, how)
        # Last: the first time it is asked, it sweeps the whole program for references to code.
        if len(out) > MAX_TARGETS or self._referenced_as_data(p.address, ctx):
            return None
        return out

    def _only_reference(self, address: int) -> Ref | None:
        """The one call or jump to ``address`` (a procedure start), None when there are none or several: from a
        table of procedure starts only (a row, or a mark for several), not an index of every reference's target."""
        flow = self._tables[0]
        if self._single is None:
            by_addr = self.an.by_addr
            single: dict[int, int] = {}
            dst = flow.dst
            # Only the rows into a procedure start are read (found at C speed): most rows are jumps inside one.
            for i in itertools.compress(range(len(dst)), map(by_addr.__contains__, dst)):
                d = dst[i]
                single[d] = -1 if d in single else i
            # Kept as two columns: a chromium's dict of 600 k starts held ten times as much for the session.
            starts = array("q", sorted(single))
            rows = array("q", [single[a] for a in starts])
            del single
            self._single = (starts, rows)
        starts, rows = self._single
        k = bisect.bisect_left(starts, address)
        row = rows[k] if k < len(starts) and starts[k] == address else -1
        return None if row < 0 else self._ref(flow.src[row], flow.dst[row], flow.kind[row], flow.proc[row])

    def _referenced_as_data(self, address: int, ctx: CallContext | None) -> bool:
        """Whether a data reference (from code or a pointer slot) names ``address``, a procedure start: from the
        data reference table when it is built, else from the references to code alone (the same answer)."""
        if len(self._tables) < 2:
            if self._code_data is None:
                found = self.an.code_data_targets(ctx.check if ctx is not None else None)
                self._code_data = array("q", sorted(found)) if found is not None else None
                del found
            if self._code_data is not None:
                k = bisect.bisect_left(self._code_data, address)
                return k < len(self._code_data) and self._code_data[k] == address
            self._data_refs(ctx)
        return bool(self._tables[1].incoming(address, address + 1, self))

    def _exported(self) -> frozenset[int]:
        if self._exports is None:
            self._exports = frozenset(s.address for s in self.model.symbols if s.exported)
        return self._exports

    def _flow_tables(self, ctx: CallContext | None) -> list[_Refs]:
        registers = self._register_calls(ctx)
        return [self._tables[0], *([registers] if registers is not None else [])]

    def _ref(self, s: int, d: int, k: int, proc: int) -> Ref:
        return Ref(s, None if d < 0 else d, REF_KINDS[k], proc, None if d < 0 else self.name_of_target(d))

    def outgoing(self, p: Proc, ctx: CallContext | None = None, data: bool = True) -> list[Ref]:
        """One procedure's references by source address (calls and jumps only unless ``data``): from the
        whole-program index when built, else decoded alone."""
        if self._index is not None:
            if data:
                self._data_refs(ctx)
            tables = [*self._flow_tables(ctx), *self._tables[1:]] if data else self._flow_tables(ctx)
            out = [r for t in tables for r in t.outgoing(p.address, self)]
            out.sort(key=lambda r: r.src)
            return out
        if p.kind not in ("local", "thunk"):
            return []
        end = self.end_of(p)
        return [self._ref(s, d, k, p.address) for s, d, k in self.an.refs_alone(p, end)]

    def pointer_slot(self, address: int) -> int | None:
        """The address a pointer slot in data holds (relocations, init/fini arrays), else None."""
        return self.an.slots().get(address)

    def instruction_refs(self, p: Proc) -> list[Ref]:
        """One procedure's references decoded alone, data ones included (no whole-program index needed)."""
        if p.kind not in ("local", "thunk"):
            return []
        return [self._ref(s, d, k, p.address) for s, d, k in self.an.refs_alone(p, self.end_of(p))]

    def _adopt_kept(self) -> bool:
        """Take the index an earlier session built from these bytes (analysis cache), if there is one."""
        index = self.store.index()
        if index is None or index.discovery != self.discovery:
            return False
        self.adopt(index)
        return True

    def adopt(self, index: ProgramIndex) -> None:
        """Take ``index``, built from these bytes (by an earlier session, or by the server for its worker)."""
        self.an.adopt(index)
        self._inventory = True
        self._install(index)

    def _install(self, index: ProgramIndex) -> None:
        # The procedures live on as the analysis's own; the records they were stored as are not kept twice.
        self._index = msgspec.structs.replace(index, procs=[])
        self._parts = None  # the build links parts: read them afresh
        self._tables = [_Refs(index.flow)]
        if index.data is not None:
            self._tables.append(_Refs(index.data))

    def references(self, ctx: CallContext | None = None) -> ProgramIndex:
        """The whole-program index of calls and jumps (built once; discovery first decides new procedures)."""
        if self._index is not None:
            return self._index
        if not self._inventory and self._adopt_kept():
            assert self._index is not None
            return self._index
        if not self._inventory:
            self.an.inventory(ctx.check if ctx is not None else None)
            self._inventory = True
        self.an.then = self._send_strings  # the worker scans the strings while the index is built here
        index = self.an.build(
            self.discovery, ctx.progress if ctx is not None else None, ctx.check if ctx is not None else None
        )
        self.image.release()  # what discovery, jump tables and pointer slots read
        self.store.keep_index(index)
        self._install(index)
        if self.assist is not None and self.model.arch == "x86_64" and self._registers is None:
            # The worker resolves the register calls while this server answers what comes next.
            self._registers_job = self._send_registers(
                self._register_sites(), self._strings_job, index, registers.AHEAD_SHARE
            )
        del index
        if ctx is not None:
            ctx.progress(f"index: done, {len(self.an.procs)} procedures")
        assert self._index is not None
        return self._index

    def call_graph(self, ctx: CallContext | None = None) -> graph.Edges:
        """The whole-program call graph (built once from the index, kept in the analysis cache)."""
        if self._graph is None:
            kept = self.store.call_graph()
            procs = self.procedures(ctx)
            if kept is None or kept.procedures != len(procs) or kept.references != len(self.references(ctx).flow.kind):
                self.references(ctx)
                tick = ctx.check if ctx is not None else None
                kept = graph.build(self.an.procs, self._flow_tables(ctx), self.an.by_addr, tick, self.an.narrow)
                self.store.keep_call_graph(kept)
                if ctx is not None:
                    ctx.progress(f"call graph: {len(kept.kind)} edges")
            self._graph = graph.Edges(kept)
        return self._graph

    def _data_refs(self, ctx: CallContext | None) -> None:
        if len(self._tables) < 2:
            table = self.store.data()
            if table is None:
                table = self.an.data_refs(
                    ctx.progress if ctx is not None else None, ctx.check if ctx is not None else None
                )
                self.store.keep_data(table)
            self._tables.append(_Refs(table))

    def incoming(self, address: int, ctx: CallContext | None = None, data: bool = True) -> list[Ref]:
        """References whose target is ``address`` (builds the whole-program index once)."""
        return self.incoming_range(address, address + 1, ctx, data)

    def incoming_range(self, start: int, end: int, ctx: CallContext | None = None, data: bool = True) -> list[Ref]:
        """References whose target lies in ``[start, end)`` (calls and jumps only unless ``data``)."""
        self.references(ctx)
        if data:
            self._data_refs(ctx)
        tables = [*self._flow_tables(ctx), *self._tables[1:]] if data else self._flow_tables(ctx)
        return [r for t in tables for r in t.incoming(start, end, self)]

    # -- strings and names -----------------------------------------------------------------

    def _send_strings(self, after: Pending[Any] | None = None) -> None:
        """Send the string scan to the parse worker once ``after`` is answered (when the worker runs and this server
        holds the whole file)."""
        if self.assist is None or self._strings is not None or self._strings_job is not None:
            return
        if not second_core.shareable(self._data):
            return
        model = self.model
        job = StringsJob(
            path=self.path,
            sha256=self.sha256(),
            arch=model.arch,
            bits=model.bits,
            narrow=self.an.narrow,
            sections=model.sections,
            segments=model.segments,
            limits=self.limits,
        )
        self._strings_job = self.assist(job, after)

    def strings(self, ctx: CallContext | None = None) -> Strings:
        """The strings of the non-code regions (scanned once; by the parse worker when it was sent the scan)."""
        if self._strings is not None:
            return self._strings
        found = None
        if self._strings_job is not None:
            job, self._strings_job = self._strings_job, None
            got = job.result(lambda: ctx.check("scanning strings") if ctx is not None else None)
            found = strings_of(got, self.an.narrow, self.size < 1 << 32) if got is not None else None
        if found is None:

            def tick(name: str) -> None:
                if ctx is not None:
                    ctx.progress(f"strings: scanning {name}")
                    ctx.check("scanning strings")

            found = scan_strings(self.image, self.limits, self.an.narrow, tick)
        self._strings = found
        return found

    def string_value(self, s: StringItem) -> tuple[str, bool]:
        """The decoded value (capped at ``max_string_chars``) and whether it was truncated."""
        cap = self.limits.max_string_chars
        width = 2 if s.encoding == "utf-16le" else 1
        raw = bytes(self._data[s.offset : s.offset + min(s.byte_length, cap * 4 * width)])
        text = raw.decode("utf-16-le" if width == 2 else "utf-8", errors="replace")
        if len(text) > cap:
            return text[:cap], True
        return text, len(raw) < s.byte_length

    def string_at(self, address: int) -> StringItem | None:
        found = self.strings().at(address)
        return found[0] if found else None

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
        for addr, match in (self.library or {}).items():  # library functions named by signature
            if (addr, match.name) not in seen:
                seen.add((addr, match.name))
                out.append((addr, match.name, "function", False))
        out.sort(key=lambda t: (t[0] is None, t[0] or 0, t[1]))
        self._names = out
        return out

    def name_at(self, address: int) -> str | None:
        p = self.an.by_addr.get(address) if self._inventory else self.procedure(address)
        if p is not None:
            return p.name
        names = self.names()
        i = bisect.bisect_left(names, (False, address), key=lambda t: (t[0] is None, t[0] or 0))
        if i < len(names) and names[i][0] == address:
            return names[i][1]
        return None


def _through_register(code: bytes | None) -> bool:
    """Whether ``code`` may start a ``call reg`` or ``jmp reg`` (x86-64 ``FF /2`` or ``FF /4`` with a register
    operand): the only indirect sites register loads can resolve, so the others' procedures are never decoded."""
    if not code:
        return False
    i = 0
    while i < len(code) - 2 and code[i] in _PREFIXES:
        i += 1
    if 0x40 <= code[i] <= 0x4F:
        i += 1
    if i + 1 >= len(code) or code[i] != 0xFF:
        return False
    modrm = code[i + 1]
    return modrm >> 6 == 3 and (modrm >> 3) & 7 in (2, 4)
