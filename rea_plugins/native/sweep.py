"""Whole-range decoding into flow and reference facts, and recursive descent over those facts.

A sweep decodes a byte range in large batches (capstone's C decoder straight into one buffer per batch)
and keeps only the instructions that matter to the program index: branches, path ends, undecodable bytes
and instructions naming an address. Everything else is known to fall through, so recursive descent over
the facts costs time in the number of branches, not instructions.
"""

from __future__ import annotations

import array
import bisect
import ctypes
import functools
import itertools
import queue
import re
import struct
import threading
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple
from typing import overload

from rea_plugins.native.disasm import CALL
from rea_plugins.native.disasm import COND
from rea_plugins.native.disasm import FALL
from rea_plugins.native.disasm import JUMP
from rea_plugins.native.disasm import RET
from rea_plugins.native.disasm import STOP
from rea_plugins.native.disasm import Flow
from rea_plugins.native.disasm import FlowReader
from rea_plugins.native.disasm import Insn
from rea_plugins.native.disasm import arm64_jump_table
from rea_plugins.native.disasm import make_decoder
from rea_plugins.native.disasm import x86_flow
from rea_plugins.native.disasm import x86_jump_table
from rea_plugins.native.dispatch import NUMBER

ReadFn = Callable[[int, int], bytes | None]


class Extra(NamedTuple):
    """What few facts carry besides their flow: a memory slot, data references, a jump table."""

    slot: int | None
    data: tuple[tuple[int, str], ...]
    # An indirect jump's distinct table entries in first-seen order, before any bound: one compact column (a
    # table often repeats its default case, and a big program holds millions of entries). Dropping repeats keeps
    # every leading run's set of targets, which is all a reader takes.
    table: array.array[int] | None


FAR = -2  # a direct target beyond the address space (malformed code): it names nothing
WIDE = -3  # in a narrow target column: a target beyond 32 bits, kept in ``Facts.wide`` by fact index
_NO_ADDRESS = 1 << 63  # fact columns are int64: the model keeps every address below this
NARROW_END = 1 << 31  # an image mapped below this keeps its facts' addresses as int32 (half the memory)


class Facts:
    """The instructions the index needs, as compact parallel columns in address order.

    Every other instruction falls through and names nothing. ``target`` is -1 when there is no direct
    target (``FAR`` for one beyond the address space); ``extra`` maps the few facts that carry more (an
    indirect branch's slot, data references, a jump table) by index, so the columns stay a few bytes a fact.
    ``narrow`` (an image mapped below ``NARROW_END``): addresses and targets are int32, and the rare target beyond
    that (malformed code) is ``WIDE`` in the column and its value in ``wide`` (by index).
    """

    __slots__ = ("addr", "cls", "extra", "limit", "size", "target", "wide")

    def __init__(self, narrow: bool = False) -> None:
        code = "i" if narrow else "q"
        self.addr = array.array(code)
        self.size = array.array("H")
        self.cls = bytearray()
        self.target = array.array(code)
        self.extra: dict[int, Extra] = {}
        self.wide: dict[int, int] = {}
        self.limit = NARROW_END if narrow else _NO_ADDRESS  # targets below this are kept in the column

    def __len__(self) -> int:
        return len(self.addr)

    def target_at(self, i: int) -> int:
        """The direct target of fact ``i`` (-1 or ``FAR`` as in the column), a ``WIDE`` one looked up."""
        t = self.target[i]
        return self.wide[i] if t == WIDE else t

    def far(self, t: int) -> int:
        """What the target column keeps for a target at or above ``limit`` (the next fact's)."""
        if t >= _NO_ADDRESS:
            return FAR
        self.wide[len(self.target)] = t
        return WIDE

    def add(self, address: int, size: int, cls: int, target: int | None, extra: Extra | None) -> None:
        if extra is not None:
            self.extra[len(self.addr)] = extra
        self.addr.append(address)
        self.size.append(size)
        self.cls.append(cls)
        self.target.append(-1 if target is None else target if target < self.limit else self.far(target))

    def extend(self, other: Facts) -> None:
        if not self.addr:  # the first (often the only) region: take its columns, never a second copy
            self.addr, self.size, self.cls, self.target, self.extra, self.wide, self.limit = (
                other.addr,
                other.size,
                other.cls,
                other.target,
                other.extra,
                other.wide,
                other.limit,
            )
            return
        base = len(self.addr)
        self.extra.update((base + i, e) for i, e in other.extra.items())
        self.wide.update((base + i, t) for i, t in other.wide.items())
        self.addr.extend(other.addr)
        self.size.extend(other.size)
        self.cls.extend(other.cls)
        self.target.extend(other.target)

    def sort(self) -> None:
        """Address order, should regions overlap (a malformed binary)."""
        order = sorted(range(len(self.addr)), key=self.addr.__getitem__)
        where = {old: new for new, old in enumerate(order)}
        self.addr = array.array(self.addr.typecode, (self.addr[i] for i in order))
        self.size = array.array("H", (self.size[i] for i in order))
        self.cls = bytearray(self.cls[i] for i in order)
        self.target = array.array(self.target.typecode, (self.target[i] for i in order))
        self.extra = {where[i]: e for i, e in self.extra.items()}
        self.wide = {where[i]: t for i, t in self.wide.items()}

    def since(self, address: int) -> Facts:
        """The facts at or after ``address``, as columns of their own."""
        lo = bisect.bisect_left(self.addr, address)
        out = Facts()
        out.addr, out.size, out.cls, out.target = self.addr[lo:], self.size[lo:], self.cls[lo:], self.target[lo:]
        out.extra = {i - lo: e for i, e in self.extra.items() if i >= lo}
        out.wide = {i - lo: t for i, t in self.wide.items() if i >= lo}
        out.limit = self.limit
        return out

    def span(self, start: int, end: int) -> range:
        """Indices of the facts in ``[start, end)``."""
        lo = bisect.bisect_left(self.addr, start)
        return range(lo, bisect.bisect_left(self.addr, end, lo))


_NO_DATA: tuple[tuple[int, str], ...] = ()
# What a sweep keeps: flow (branches, path ends, undecodable bytes) and/or data (instructions naming an
# address). The procedure inventory needs only flow; data references are swept when first asked for.
FLOW = 1
DATA = 2
ALL = FLOW | DATA
_CHUNK = 4096  # bytes per decoder call: ~1000 records, which stay in cache while they are read
_MAX_INSN = 16
_THREAD_BYTES = 256 << 10  # below this a helper thread costs more than it overlaps
_WINDOW = 10  # instructions a jump-table pattern may span (x86_jump_table looks back this far)


class X86Ids(NamedTuple):
    """capstone's x86 instruction ids by flow class: direct branches, path ends, x86_flow's own cases, push,
    and every id the sweep looks at."""

    direct: dict[int, int]
    ret: frozenset[int]
    other: frozenset[int]
    push: int
    pick: frozenset[int]


@functools.cache
def x86_ids() -> X86Ids:
    """Read on the first sweep, so that opening a target whose index is cached never imports capstone."""
    from capstone import x86_const as x

    cond = [
        getattr(x, f"X86_INS_{n}")
        for n in (
            "JAE",
            "JA",
            "JBE",
            "JB",
            "JCXZ",
            "JECXZ",
            "JE",
            "JGE",
            "JG",
            "JLE",
            "JL",
            "JNE",
            "JNO",
            "JNP",
            "JNS",
            "JO",
            "JP",
            "JRCXZ",
            "JS",
            "LOOP",
            "LOOPE",
            "LOOPNE",
        )
    ]
    direct = {x.X86_INS_CALL: CALL, x.X86_INS_JMP: JUMP, **dict.fromkeys(cond, COND)}
    ends = frozenset(
        getattr(x, f"X86_INS_{n}") for n in ("RET", "RETF", "IRET", "IRETD", "IRETQ", "HLT", "UD2", "SYSRET")
    )
    other = frozenset(getattr(x, f"X86_INS_{n}") for n in ("LCALL", "LJMP", "RETFQ", "SYSRETQ"))
    pick = frozenset(direct) | ends | other | {x.X86_INS_PUSH, _X86_INVALID}
    return X86Ids(direct, ends, other, x.X86_INS_PUSH, pick)


_X86_INVALID = 0  # skipdata's ".byte"
# Operand text that may name an address (what x86_flow reads): rip-relative or absolute memory, or an
# immediate of four or more hex digits after a comma (one first in the operands only matters for push).
_X86_IMM = re.compile(rb", 0x[0-9a-f]{4}")
_SLOT = 80  # operand characters kept per record for that search; longer operand texts are AVX-512 noise
# A direct branch's operand text: its target in hex, the whole text (up to the record's NUL, within 20 bytes).
_X86_DIRECT = re.compile(rb"0x[0-9a-f]+(?=\0)")
_NUMBER = re.compile(NUMBER.encode())  # a direct branch's operand text


# What an operand text may name, searched apart so each search starts from a literal (one alternation of the two
# scans text several times slower): a rip-relative displacement (its target is the next instruction's address plus
# or minus it), or a hex number (an absolute address, an immediate).
_X86_RIP_DISP = re.compile(rb"rip ([+-]) (?:0x([0-9a-f]+)|(\d+))\]")


@functools.cache
def _x86_hex(digits: int) -> re.Pattern[bytes]:
    """A hex number of at least ``digits`` digits (capstone writes no leading zeros, so a shorter one is below the
    lowest code address)."""
    return re.compile(rb"0x([1-9a-f][0-9a-f]{%d,})" % max(0, digits - 1))


def _raw_layout() -> tuple[Any, Any, int, int, int, int, int] | None:
    """capstone's C entry points and ``cs_insn`` layout, or None when this binding does not expose them."""
    try:
        import capstone

        cs, insn = capstone._cs, capstone._cs_insn
        layout = (
            cs,
            insn,
            ctypes.sizeof(insn),
            insn.id.offset,
            insn.address.offset,
            insn.size.offset,
            insn.mnemonic.offset,
        )
        if insn.op_str.offset != insn.mnemonic.offset + 32 or layout[2] % 8 or layout[4] % 8 or layout[5] % 2:
            return None
        cs.cs_disasm, cs.cs_free  # noqa: B018 - both must exist
        return layout
    except (ImportError, AttributeError):
        return None


class Batch:
    """One decoder call's records: parallel address/size/id lists and each record's text on demand."""

    def __init__(
        self,
        addrs: list[int],
        sizes: list[int],
        ids: list[int] | None,
        blob: bytes | None,
        texts: list[tuple[str, str]] | None,
        record: int,
        mnem: int,
    ) -> None:
        self.addrs = addrs
        self.sizes = sizes
        self.ids = ids
        self.blob = blob
        self.texts = texts
        self.record = record
        self.mnem = mnem

    def __len__(self) -> int:
        return len(self.addrs)

    def ops(self, i: int) -> bytes:
        assert self.blob is not None
        at = i * self.record + self.mnem + 32
        field = self.blob[at : at + 160]
        end = field.find(b"\0")
        return field if end < 0 else field[:end]

    def text(self, i: int) -> tuple[str, str]:
        if self.texts is not None:
            return self.texts[i]
        assert self.blob is not None
        at = i * self.record + self.mnem
        field = self.blob[at : at + 192]
        m_end = field.find(b"\0")
        o_end = field.find(b"\0", 32)
        return (
            field[:m_end].decode("ascii", "replace"),
            field[32 : o_end if o_end >= 0 else 192].decode("ascii", "replace"),
        )

    def insn(self, i: int) -> Insn:
        mnem, ops = self.text(i)
        return Insn(self.addrs[i], self.sizes[i], mnem, ops)


def decode_batch(md: Any, raw: tuple[Any, Any, int, int, int, int, int] | None, code: Any, address: int) -> Batch:
    """``code`` (at ``address``) decoded by ``md`` in one capstone call, as disasm_lite decodes it: its raw records
    (``raw``: ``_raw_layout()``), or disasm_lite's tuples where the binding does not expose them."""
    if raw is None:
        tuples = list(md.disasm_lite(bytes(code), address))
        return Batch([t[0] for t in tuples], [t[1] for t in tuples], None, None, [(t[2], t[3]) for t in tuples], 0, 0)
    cs, insn_t, record, id_at, addr_at, size_at, mnem_at = raw
    ptr = ctypes.POINTER(insn_t)()
    buf = (ctypes.c_char * len(code)).from_buffer_copy(code)
    count = cs.cs_disasm(md.csh, buf, len(code), address, 0, ctypes.byref(ptr))
    if count <= 0:
        return Batch([], [], [], b"", None, record, mnem_at)
    try:
        blob = ctypes.string_at(ptr, count * record)
    finally:
        cs.cs_free(ptr, count)
    view = memoryview(blob)
    addrs = view.cast("Q")[addr_at // 8 :: record // 8].tolist()
    sizes = view.cast("H")[size_at // 2 :: record // 2].tolist()
    ids = view.cast("I")[id_at // 4 :: record // 4].tolist()
    return Batch(addrs, sizes, ids, blob, None, record, mnem_at)


class Records(Sequence[Insn]):
    """One decoded range's instructions, each made on first read: a pass that reads a few instructions of a
    procedure (a register site's loads) does not build every one. Over capstone's raw records (``Batch.blob``)."""

    def __init__(self, batch: Batch) -> None:
        if batch.blob is None:
            raise ValueError("records need capstone's raw records")
        self.blob: bytes = batch.blob
        self.batch = batch
        self.addrs = batch.addrs
        self._made: list[Insn | None] = [None] * len(batch)

    def __len__(self) -> int:
        return len(self.addrs)

    @overload
    def __getitem__(self, i: int) -> Insn: ...
    @overload
    def __getitem__(self, i: slice) -> list[Insn]: ...
    def __getitem__(self, i: int | slice) -> Insn | list[Insn]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        got = self._made[i]
        if got is None:
            got = self._made[i] = self.batch.insn(i)
        return got

    def position(self, address: int) -> int | None:
        """The index of the instruction at ``address``, else None (a linear decode's addresses ascend)."""
        k = bisect.bisect_left(self.addrs, address)
        return k if k < len(self.addrs) and self.addrs[k] == address else None

    def branches(self) -> Iterator[tuple[int, int]]:
        """(index, target) of each instruction whose mnemonic starts with "j" and whose operand text is a number
        (a direct branch), by index, read off the records without making the instructions."""
        batch, blob = self.batch, self.blob
        firsts = blob[batch.mnem :: batch.record]
        j = firsts.find(b"j")
        while j >= 0:
            ops = batch.ops(j)
            if _NUMBER.fullmatch(ops):
                yield j, int(ops, 0)
            j = firsts.find(b"j", j + 1)

    def frame_private(self) -> bool:
        """No ``lea`` of an ``[rsp`` operand and no operand text ending ``, rsp`` (the frame's address stays
        private): the records' operand texts searched at once, each hit checked to lie in its live text."""
        batch, blob = self.batch, self.blob
        record, mnem = batch.record, batch.mnem
        ops = mnem + 32
        for needle, lea in ((b", rsp\0", False), (b"[rsp", True)):
            at = blob.find(needle)
            while at >= 0:
                i, offset = divmod(at, record)
                start = i * record + ops
                # Inside the operand text, before its end (bytes after a record's NUL are stale).
                live = ops <= offset < ops + 160 and blob.find(b"\0", start, at) < 0
                if live and (not lea or blob[i * record + mnem : i * record + mnem + 4] == b"lea\0"):
                    return False
                at = blob.find(needle, at + 1)
        return True


class Sweeper:
    """Decodes ranges of one architecture into facts (reuse one per program: it owns a capstone handle)."""

    def __init__(self, arch: str, bits: int, mapped: Callable[[int], bool], read: ReadFn, narrow: bool = False) -> None:
        self.arch = arch
        self.narrow = narrow  # int32 fact columns (an image mapped below NARROW_END)
        self.mapped = mapped
        self.read = read
        self.md = make_decoder(arch, bits)
        self.md.skipdata = True
        self.raw = _raw_layout()
        self.x86 = arch in ("x86", "x86_64")
        self._layout: tuple[int, struct.Struct] | None = None

    # -- decoding ------------------------------------------------------------------------------

    def _decode(self, code: memoryview, address: int) -> Batch:
        return decode_batch(self.md, self.raw, code, address)

    def batches(
        self,
        code: Any,
        base: int,
        syncs: list[int],
        check: Callable[[int], None] | None = None,
        stop: int | None = None,
        threaded: bool = True,
    ) -> Iterator[tuple[Batch, int, int | None]]:
        """Decoded batches over ``code`` (at ``base``): each with how many leading records to keep, and
        the address of an instruction dropped because it straddles a procedure start (decoding restarts
        at every address in ``syncs``, sorted, that it would otherwise step over). ``stop`` (one of ``syncs``)
        ends the batches there, exactly where a sweep of the whole range has its instructions before it.

        Over a large range a helper thread decodes ahead (unless not ``threaded``: the other core is busy already):
        capstone runs without the GIL, so decoding overlaps with the caller reading the previous batches.
        """
        if len(code) < _THREAD_BYTES or not threaded:
            for item in self._batches(code, base, syncs, stop):
                if check is not None:
                    check(item[0].addrs[0] - base)
                yield item
            return
        ahead: queue.Queue[tuple[Batch, int, int | None] | BaseException | None] = queue.Queue(maxsize=8)
        done = threading.Event()

        def produce() -> None:
            try:
                for item in self._batches(code, base, syncs, stop):
                    while not done.is_set():
                        try:
                            ahead.put(item, timeout=0.05)
                            break
                        except queue.Full:
                            continue
                    if done.is_set():
                        return
                ahead.put(None)
            except BaseException as exc:
                ahead.put(exc)

        helper = threading.Thread(target=produce, name="rea-native-decode", daemon=True)
        helper.start()
        try:
            while True:
                got = ahead.get()
                if got is None:
                    return
                if isinstance(got, BaseException):
                    raise got
                if check is not None:
                    check(got[0].addrs[0] - base)
                yield got
        finally:
            done.set()
            while helper.is_alive():
                try:
                    ahead.get(timeout=0.05)
                except queue.Empty:
                    pass
            helper.join()

    def _batches(
        self, code: Any, base: int, syncs: list[int], stop: int | None = None
    ) -> Iterator[tuple[Batch, int, int | None]]:
        view = memoryview(code)
        total = len(view)
        pos = 0
        end = total if stop is None else min(total, stop - base)
        while pos < end:
            hi = min(total, pos + _CHUNK)
            batch = self._decode(view[pos : min(total, hi + _MAX_INSN)], base + pos)
            if not batch:
                break
            addrs, sizes = batch.addrs, batch.sizes
            keep = max(1, bisect.bisect_left(addrs, base + hi)) if hi < total else len(batch)
            last = addrs[keep - 1] + sizes[keep - 1]
            dropped: int | None = None
            s = bisect.bisect_right(syncs, base + pos)
            while s < len(syncs) and syncs[s] < last:
                k = bisect.bisect_left(addrs, syncs[s], 0, keep)
                if k < keep and addrs[k] == syncs[s]:
                    s += 1
                    continue
                keep, last, dropped = k - 1, syncs[s], addrs[k - 1]
                break
            if stop is not None and keep > 0 and addrs[keep - 1] >= stop:
                # An instruction starts at ``stop``: the batch ends before it (a later straddler is past it too).
                keep, last, dropped = bisect.bisect_left(addrs, stop, 0, keep), stop, None
            yield batch, keep, dropped
            pos = last - base

    # -- facts -----------------------------------------------------------------------------------

    def sweep(
        self,
        code: Any,
        base: int,
        syncs: list[int],
        window_limit: Callable[[int], int],
        check: Callable[[int], None] | None = None,
        want: int = ALL,
        stop: int | None = None,
        threaded: bool = True,
    ) -> tuple[Facts, int]:
        """Facts (``want``: FLOW, DATA or ALL) of the instructions in ``code`` (at ``base``), and how many
        instructions were decoded. ``window_limit(address)`` bounds jump-table entries found at ``address``;
        ``stop`` (one of ``syncs``) ends the sweep there, with the facts a sweep of all of ``code`` has before it.
        """
        facts, count, _ = self.sweep_from(code, base, syncs, window_limit, check, want, stop, threaded=threaded)
        return facts, count

    def sweep_from(
        self,
        code: Any,
        base: int,
        syncs: list[int],
        window_limit: Callable[[int], int],
        check: Callable[[int], None] | None = None,
        want: int = ALL,
        stop: int | None = None,
        keep_from: int | None = None,
        threaded: bool = True,
    ) -> tuple[Facts, int, int]:
        """``sweep``, keeping only the facts and the count of the instructions at or after ``keep_from``; also how
        many instructions before it were decoded (from ``_WINDOW`` on, a fact's jump-table window is all its own)."""
        facts = Facts(self.narrow)
        count = 0
        before = 0
        tail: list[Insn] = []  # the previous batch's last instructions, for jump-table windows
        flow = FlowReader(self.arch, self.mapped)
        for batch, keep, dropped in self.batches(code, base, syncs, check, stop, threaded):
            if keep_from is not None and batch.addrs[0] < keep_from:
                skipped = bisect.bisect_left(batch.addrs, keep_from, 0, keep)
                before += skipped
                count -= skipped
            count += keep
            if self.x86 and batch.ids is not None:
                self._x86_facts(batch, keep, tail, window_limit, facts, want)
            else:
                self._generic_facts(batch, keep, syncs, flow, tail, window_limit, facts, want)
            if dropped is not None and want & FLOW:
                facts.add(dropped, 1, STOP, None, None)
            if self.x86 and want & FLOW:
                tail = [*tail, *(batch.insn(i) for i in range(max(0, keep - _WINDOW), keep))][-_WINDOW:]
        if keep_from is not None and facts.addr and facts.addr[0] < keep_from:
            facts = facts.since(keep_from)
        return facts, count, before

    def code_refs(
        self,
        code: Any,
        base: int,
        syncs: list[int],
        in_code: Callable[[int], bool],
        code_bounds: tuple[int, int],
        check: Callable[[int], None] | None = None,
    ) -> tuple[array.array[int], array.array[int]]:
        """(source, target) of the references to code among the data references a DATA sweep of the same range
        finds (x86 with capstone's raw records only): each operand text is searched for the addresses it may name,
        and only an instruction naming code is read exactly (``x86_flow``), so a sweep costs in the decode."""
        src: array.array[int] = array.array("q")
        dst: array.array[int] = array.array("q")
        known = x86_ids()
        other = known.other
        skip = frozenset(known.direct) | known.ret | {_X86_INVALID}  # branches and path ends
        mapped = self.mapped
        lowest, highest = code_bounds
        hexes = _x86_hex(len(f"{lowest:x}"))
        push = known.push

        def named(text: bytes, ids: list[int], i: int, at: int, value: int) -> bool:
            """Whether the number at ``at`` names code in record ``i``, one a DATA sweep reads (not stale text)."""
            # Cheapest test first: most operands name data or small offsets, far from the code.
            if not lowest <= value < highest or not in_code(value):
                return False
            if text.find(b"\0", i * _SLOT, at) >= 0:  # stale bytes after the operand text
                return False
            return _data_pick(text[i * _SLOT : (i + 1) * _SLOT], ids[i] == push)

        for batch, keep, _ in self.batches(code, base, syncs, check):
            ids, blob = batch.ids, batch.blob
            assert ids is not None and blob is not None
            record, ops_at = batch.record, batch.mnem + 32
            layout = self._layout
            if layout is None or layout[0] != record:
                layout = self._layout = (record, struct.Struct(f"{ops_at}x{_SLOT}s{record - ops_at - _SLOT}x"))
            text = b"".join(itertools.chain.from_iterable(layout[1].iter_unpack(memoryview(blob)[: keep * record])))
            addrs, sizes = batch.addrs, batch.sizes
            candidates = [i for v in other for i in _positions(ids, v, keep)]  # a DATA sweep reads these always

            last = -1
            for m in _X86_RIP_DISP.finditer(text):
                at = m.start()
                i = at // _SLOT
                if i == last or ids[i] in skip:  # a branch's target is no data reference
                    continue
                sign, hexdisp, decdisp = m.groups()
                disp = int(hexdisp, 16) if hexdisp is not None else int(decdisp)
                if named(text, ids, i, at, addrs[i] + sizes[i] + (disp if sign == b"+" else -disp)):
                    candidates.append(i)
                    last = i
            last = -1
            for m in hexes.finditer(text):
                at = m.start()
                i = at // _SLOT
                if i == last or ids[i] in skip:  # most are direct branches' targets
                    continue
                if named(text, ids, i, at, int(m.group(1), 16)):
                    candidates.append(i)
                    last = i
            for i in sorted(set(candidates)):
                if ids[i] in skip:
                    continue  # branches and path ends name no data
                f = x86_flow(batch.insn(i), mapped)
                if f.cls != FALL:
                    continue
                for address, _kind in f.data:
                    if in_code(address):
                        src.append(addrs[i])
                        dst.append(address)
        return src, dst

    def _window(self, batch: Batch, i: int, tail: list[Insn]) -> list[Insn]:
        window = [batch.insn(j) for j in range(max(0, i - _WINDOW + 1), i + 1)]
        return window if len(window) == _WINDOW else [*tail, *window][-_WINDOW:]

    def _table(self, window: list[Insn], window_limit: Callable[[int], int]) -> array.array[int] | None:
        end = window_limit(window[-1].address)
        read_table = arm64_jump_table if self.arch == "arm64" else x86_jump_table
        found = read_table(window, self.read, lambda t: t < end)
        return array.array("Q", dict.fromkeys(found)) if found else None

    def _x86_facts(
        self, batch: Batch, keep: int, tail: list[Insn], window_limit: Callable[[int], int], out: Facts, want: int
    ) -> None:
        ids = batch.ids
        blob = batch.blob
        assert ids is not None and blob is not None
        known = x86_ids()
        direct_ids, ret_ids, push_id, pick_ids = known.direct, known.ret, known.push, known.pick
        record, ops_at = batch.record, batch.mnem + 32
        if want & FLOW:
            # Every decoded instruction is looked at here: a C-speed scan (a third faster than a comprehension).
            picked = list(itertools.compress(range(keep), map(pick_ids.__contains__, itertools.islice(ids, keep))))
        else:
            # Data only: branches, path ends and undecodable bytes never name data; of the picked ids
            # only push (an immediate) and x86_flow's own cases remain, found by C-speed list scans.
            picked = [i for v in (push_id, *known.other) for i in _positions(ids, v, keep)]
        named: set[int] = set()
        if want & DATA:
            # Each record's operand text in a fixed slot, so the address search scans a third as much.
            layout = self._layout
            if layout is None or layout[0] != record:
                layout = self._layout = (record, struct.Struct(f"{ops_at}x{_SLOT}s{record - ops_at - _SLOT}x"))
            text = b"".join(itertools.chain.from_iterable(layout[1].iter_unpack(memoryview(blob)[: keep * record])))
            hits: set[int] = set()
            for literal in (b"rip", b"[0x"):
                at = text.find(literal)
                while at >= 0:
                    hits.add(at)
                    at = text.find(literal, at + 3)
            hits.update(m.start() for m in _X86_IMM.finditer(text))
            named = {at // _SLOT for at in hits if text.find(b"\0", at - at % _SLOT, at) < 0}  # not stale bytes
            if want & FLOW:
                picked.extend(i for i in named if ids[i] not in pick_ids)  # the others are picked already
            else:
                picked.extend(named)
            picked.sort()
        else:
            text = b""
        addrs, sizes = batch.addrs, batch.sizes
        mapped = self.mapped
        # Bound once: a sweep appends a few hundred thousand facts (a method lookup each is a tenth of the time).
        add_addr, add_size, add_cls, add_target = out.addr.append, out.size.append, out.cls.append, out.target.append
        limit = out.limit
        target_text = _X86_DIRECT.match  # read in place in the records (no slice of each operand text)
        direct_get = direct_ids.get
        flow = bool(want & FLOW)
        prev = -1
        for i in picked:
            if i == prev:
                continue
            prev = i
            iid = ids[i]
            cls = direct_get(iid)
            if cls is not None:
                if not flow:
                    continue
                at = i * record + ops_at
                m = target_text(blob, at, at + 20)
                if m is not None:
                    add_addr(addrs[i])
                    add_size(sizes[i])
                    add_cls(cls)
                    t = int(m.group(), 16)
                    add_target(t if t < limit else out.far(t))
                    continue
            elif iid in ret_ids or iid == _X86_INVALID:
                if not flow:
                    continue
                add_addr(addrs[i])
                add_size(sizes[i])
                add_cls(RET if iid != _X86_INVALID else STOP)
                add_target(-1)
                continue
            elif iid == push_id and (not want & DATA or (i not in named and text[i * _SLOT : i * _SLOT + 2] != b"0x")):
                continue
            f = x86_flow(batch.insn(i), mapped)
            self._keep(f, addrs[i], sizes[i], batch, i, tail, window_limit, out, want)

    def _keep(
        self,
        f: Flow,
        address: int,
        size: int,
        batch: Batch,
        i: int,
        tail: list[Insn],
        window_limit: Callable[[int], int],
        out: Facts,
        want: int,
    ) -> None:
        """Record what ``want`` asks of one instruction's flow."""
        if f.cls != FALL:
            if want & FLOW:
                table = None
                if (self.x86 or self.arch == "arm64") and f.cls == JUMP and f.target is None and f.slot is None:
                    table = self._table(self._window(batch, i, tail), window_limit)
                data = f.data if want & DATA else _NO_DATA
                out.add(
                    address,
                    size,
                    f.cls,
                    f.target,
                    Extra(f.slot, data, table) if f.slot is not None or data or table else None,
                )
        elif f.data and want & DATA:
            out.add(address, size, FALL, None, Extra(None, f.data, None))

    def _generic_facts(
        self,
        batch: Batch,
        keep: int,
        syncs: list[int],
        flow: FlowReader,
        tail: list[Insn],
        window_limit: Callable[[int], int],
        out: Facts,
        want: int,
    ) -> None:
        s = bisect.bisect_left(syncs, batch.addrs[0]) if batch.addrs else 0
        for i in range(keep):
            a = batch.addrs[i]
            while s < len(syncs) and syncs[s] <= a:
                if syncs[s] == a:
                    flow.reset()  # per-procedure register tracking, as when a procedure is decoded alone
                s += 1
            insn = batch.insn(i)
            if insn.mnemonic == ".byte":
                if want & FLOW:
                    out.add(a, insn.size, STOP, None, None)
                continue
            self._keep(flow(insn), a, insn.size, batch, i, tail, window_limit, out, want)


def _data_pick(slot: bytes, push: bool) -> bool:
    """Whether a DATA sweep reads the instruction whose operand text (its record's slot) is ``slot``."""
    end = slot.find(b"\0")
    live = slot if end < 0 else slot[:end]
    return b"rip" in live or b"[0x" in live or _X86_IMM.search(live) is not None or (push and live[:2] == b"0x")


def _positions(values: list[int], wanted: int, stop: int) -> Iterator[int]:
    """Indices below ``stop`` where ``values`` holds ``wanted`` (list.index scans in C)."""
    if wanted not in values:
        return
    at = -1
    while True:
        try:
            at = values.index(wanted, at + 1, stop)
        except ValueError:
            return
        yield at


def table_targets(extra: Extra | None, start: int, end: int) -> list[int]:
    """A jump table's entries inside ``[start, end)``: the leading run of them, as x86_jump_table reads."""
    out: list[int] = []
    for t in (extra.table or ()) if extra is not None else ():
        if not start <= t < end:
            break
        out.append(t)
    return out


class BudgetExceeded(Exception):
    """A descent visited more instructions than its budget allows."""


class Descent(NamedTuple):
    end: int
    computed: bool  # an unresolved computed jump: the extent may hide code
    visited: int


def descend(facts: Facts, start: int, limit: int, budget: int) -> Descent:
    """Recursive descent from ``start`` inside ``[start, limit)`` over swept facts.

    Runs fall through to the next fact; jumps and conditional branches inside the range are followed,
    jump tables through their entries; a run stops at a jump, a path end or undecodable bytes. ``end``
    is the furthest instruction end reached (``limit`` when a run reaches it).
    """
    addrs, sizes, classes, targets, extras = facts.addr, facts.size, facts.cls, facts.target, facts.extra.get
    wide = facts.wide
    todo = [start]
    seen: set[int] = set()
    done: set[int] = set()
    end = start
    computed = False
    visited = 0
    n = len(addrs)
    while todo:
        a = todo.pop()
        if a in seen or not start <= a < limit:
            continue
        seen.add(a)
        i = bisect.bisect_left(addrs, a)
        while True:
            if i >= n or addrs[i] >= limit:
                end = limit
                break
            if i in done:
                break
            done.add(i)
            visited += 1
            if visited > budget:
                raise BudgetExceeded(budget)
            cls = classes[i]
            if cls == STOP:
                if addrs[i] > a:
                    end = max(end, addrs[i])
                break
            end = max(end, addrs[i] + sizes[i])
            if cls in (JUMP, COND):
                t = targets[i]
                if t >= 0 or t == WIDE:
                    if t == WIDE:
                        t = wide[i]
                    if start <= t < limit:
                        todo.append(t)
                elif cls == JUMP and t != FAR:
                    extra = extras(i)
                    if extra is None or extra.slot is None:
                        table = table_targets(extra, start, limit)
                        if table:
                            todo.extend(table)
                        else:
                            computed = True
            if cls in (JUMP, RET):
                break
            i += 1
    return Descent(max(end, start + 1), computed, visited)
