"""The whole-program call graph from the index's reference columns: one pass, compact columns, paged answers.

Each procedure's edges are exactly what ``procedure_callees`` answers for it (a split-off part's calls are
its parent's, as there): a call, or a jump to another procedure's start that is not a jump between one
procedure's parts; the callee's kind is ``import`` for an import or thunk, ``indirect`` for a register call that
register loads resolve, ``tail`` for a jump, else ``direct``; a call through a register nothing resolves, or a
computed jump with no table, is one ``indirect`` edge with no callee. ``calls`` counts distinct call sites.
"""

from __future__ import annotations

import array
import itertools
import operator
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Protocol

import msgspec
from msgspec import UNSET
from msgspec import UnsetType

from rea.plugin import CALL_GRAPH_LEGEND
from rea.plugin import EDGE_KIND_CODES
from rea.plugin import CalleeRow
from rea.plugin import ProgramCallGraphRows
from rea.plugin import next_offset
from rea_plugins.native.index import REF_KINDS
from rea_plugins.native.index import column
from rea_plugins.native.rows import CallEdgeRow
from rea_plugins.native.rows import CallGraphPage
from rea_plugins.native.sweep import NARROW_END

if TYPE_CHECKING:
    from rea_plugins.native.index import Proc

# Alphabetical, so ordering by the code orders by the kind's name (as procedure_callees sorts its items).
EDGE_KINDS: tuple[str, ...] = ("direct", "import", "indirect", "tail")
_DIRECT, _IMPORT, _INDIRECT_EDGE, _TAIL = range(4)
_CALL, _JUMP, _INDIRECT, _COMPUTED = (REF_KINDS.index(k) for k in ("call", "jump", "indirect", "computed"))
_NONE_LAST = (1 << 63) - 1  # the sort key of an edge with no callee: after every address


class CallGraph(msgspec.Struct, frozen=True):
    """Every call edge as four parallel columns (native-endian int32 or int64 caller and callee, a column's width its
    length over the edges, -1 for none; one byte of ``EDGE_KINDS``; uint32 call-site count), ordered by caller,
    callee (none last), kind."""

    caller: bytes
    callee: bytes
    kind: bytes
    calls: bytes
    procedures: int
    references: int  # the flow table's rows it was built from (a graph of another index is never adopted)


class Slices(Protocol):
    """Each procedure's rows of a reference table."""

    def get(self, owner: int, default: tuple[int, int] = ..., /) -> tuple[int, int]: ...


class Columns(Protocol):
    """One reference table's columns with each procedure's slice (``out``: procedure -> (lo, hi))."""

    @property
    def src(self) -> Sequence[int]: ...
    @property
    def dst(self) -> Sequence[int]: ...
    @property
    def kind(self) -> bytes: ...
    @property
    def out(self) -> Slices: ...


def build(
    procs: Sequence[Proc],
    tables: Sequence[Columns],
    by_addr: dict[int, Proc],
    tick: Callable[[str], None] | None = None,
    narrow: bool = False,
) -> CallGraph:
    """The call graph of ``procs`` (by address) from the flow table and the register-call table; ``narrow``: every
    address fits int32 (the columns are int32 unless a callee does not fit)."""
    parts: dict[int, list[int]] = {}
    for p in procs:
        if p.part_of is not None:
            parts.setdefault(p.part_of, []).append(p.address)

    def home(address: int) -> int:
        q = by_addr.get(address)
        return q.part_of if q is not None and q.part_of is not None else address

    # Register calls that register loads resolve: their site's unresolved marker is not an edge of its own. Only the
    # register-call tables (after the flow table) resolve a site: in the flow table an indirect site carries a slot
    # read and its marker, never a call with a target. Their few sites are looked for among the indirect ones (a
    # set of every indirect site is a million entries in a chromium).
    proposed = {
        s for t in tables[1:] for k, s, d in zip(t.kind, t.src, t.dst, strict=True) if k in (_CALL, _JUMP) and d >= 0
    }
    resolved: set[int] = set()
    marker = bytes([_INDIRECT])
    for t in tables if proposed else ():
        i = t.kind.find(marker)
        while i >= 0:
            if t.src[i] in proposed:
                resolved.add(t.src[i])
            i = t.kind.find(marker, i + 1)

    caller_col = array.array("i" if narrow else "q")
    callee_col = array.array(caller_col.typecode)
    limit = NARROW_END if narrow else 1 << 63
    kind_col = bytearray()
    calls_col = array.array("I")
    for n, p in enumerate(procs):
        if tick is not None and n % 4096 == 0:
            tick("building the call graph")
        if p.part_of is not None or p.kind not in ("local", "thunk"):
            continue
        groups: dict[tuple[int, int], set[int]] = {}
        owners = (p.address, *parts.get(p.address, ()))
        for t in tables:
            src, dst, kinds = t.src, t.dst, t.kind
            for owner in owners:
                lo, hi = t.out.get(owner, (0, 0))
                for i in _candidates(t, lo, hi, by_addr) if hi > lo else ():
                    k = kinds[i]
                    s = src[i]
                    if k in (_CALL, _JUMP):
                        d = dst[i]
                        target = by_addr.get(d) if d >= 0 else None
                        if k == _JUMP and (target is None or d == owner or home(d) == home(owner)):
                            continue
                        if target is not None and target.kind in ("import", "thunk"):
                            edge = _IMPORT
                        elif s in resolved:
                            edge = _INDIRECT_EDGE
                        else:
                            edge = _TAIL if k == _JUMP else _DIRECT
                        groups.setdefault((d, edge), set()).add(s)
                    elif (k == _INDIRECT and s not in resolved) or (k == _COMPUTED and dst[i] < 0):
                        groups.setdefault((-1, _INDIRECT_EDGE), set()).add(s)
        for (d, edge), sites in sorted(groups.items(), key=lambda g: (_NONE_LAST if g[0][0] < 0 else g[0][0], g[0][1])):
            if d >= limit:  # a callee beyond int32 (a branch beyond the image): int64 callees from here
                callee_col, limit = array.array("q", callee_col), 1 << 63
            caller_col.append(p.address)
            callee_col.append(d)
            kind_col.append(edge)
            calls_col.append(len(sites))
    # Each column is released as soon as it is copied (a peak of one column, not of all four twice).
    caller = caller_col.tobytes()
    del caller_col
    callee = callee_col.tobytes()
    del callee_col
    kind = bytes(kind_col)
    del kind_col
    calls = calls_col.tobytes()
    del calls_col
    return CallGraph(
        caller=caller,
        callee=callee,
        kind=kind,
        calls=calls,
        procedures=len(procs),
        references=len(tables[0].kind) if tables else 0,
    )


_EDGE_ROWS = bytes(1 if k in (_CALL, _INDIRECT, _COMPUTED) else 0 for k in range(256))


def _candidates(table: Columns, lo: int, hi: int, by_addr: dict[int, Proc]) -> Iterator[int]:
    """The rows ``lo .. hi`` of ``table`` that can make an edge, found at C speed: calls, indirect and computed
    markers, and rows into a procedure start (a jump inside its procedure, most jumps, makes none; the loop reading
    these ignores the other kinds)."""
    marked = table.kind[lo:hi].translate(_EDGE_ROWS)
    return itertools.compress(range(lo, hi), map(operator.or_, marked, map(by_addr.__contains__, table.dst[lo:hi])))


class Edges:
    """A call graph's columns for paging."""

    def __init__(self, graph: CallGraph) -> None:
        self.graph = graph
        self.caller = column(graph.caller, len(graph.kind))
        self.callee = column(graph.callee, len(graph.kind))
        self.calls = memoryview(graph.calls).cast("I")

    def __len__(self) -> int:
        return len(self.graph.kind)

    def rows(self, lo: int, hi: int) -> Iterator[tuple[int, int | None, str, int]]:
        """(caller, callee or None, kind, calls) of edges ``lo .. hi``."""
        kinds = self.graph.kind
        for i in range(lo, min(hi, len(kinds))):
            d = self.callee[i]
            yield self.caller[i], (None if d < 0 else d), EDGE_KINDS[kinds[i]], self.calls[i]


def answer(
    edges: Edges,
    offset: int,
    limit: int,
    name_of: Callable[[int], str | None],
    target_name: Callable[[int], str | None],
) -> CallGraphPage:
    """One page of the program's edges as ``rea.operations.shapes.ProgramCallGraph``: ``names`` holds the page's
    procedures (``name_of``); a callee that is no procedure but has a name (an import's slot) carries it as
    ``callee_name`` (``target_name``)."""
    total = len(edges)
    rows: list[CallEdgeRow] = []
    names: dict[str, str] = {}
    for caller, callee, kind, calls in edges.rows(offset, offset + limit):
        at = hex(caller)  # each address's text made once (a page is thousands of edges)
        to = None if callee is None else hex(callee)
        callee_name: str | UnsetType = UNSET
        if at not in names:
            name = name_of(caller)
            if name:
                names[at] = name
        if to is not None and callee is not None and to not in names:
            name = name_of(callee)
            if name:
                names[to] = name
            else:
                other = target_name(callee)
                if other:
                    callee_name = other
        rows.append(CallEdgeRow(caller=at, callee=to, kind=kind, calls=calls, callee_name=callee_name))
    return CallGraphPage(
        offset=offset,
        limit=limit,
        total=total,
        next_offset=next_offset(offset, len(rows), total),
        procedures=edges.graph.procedures,
        edges=rows,
        names=names,
    )


_CODES = tuple(EDGE_KIND_CODES[k] for k in EDGE_KINDS)  # the lean row's letter of each kind code


def lean_answer(edges: Edges, offset: int, limit: int, name_of: Callable[[int], str | None]) -> ProgramCallGraphRows:
    """One page of the program's edges as ``rea.operations.shapes.ProgramCallGraphRows``, straight from the columns:
    each caller's rows in one list, each address's text made once, and a name per distinct address (``name_of``: a
    procedure's or an import slot's), a made ``sub_<address>`` left out."""
    total = len(edges)
    hi = min(offset + limit, total)
    caller, callee, calls, kinds = edges.caller, edges.callee, edges.calls, edges.graph.kind
    text: dict[int, str] = {}  # address -> its hex, shared by every row that names it
    names: dict[str, str] = {}
    callees: dict[str, list[CalleeRow]] = {}

    def text_of(address: int) -> str:
        """The address's text, made once; its name noted the first time, unless it is the made ``sub_`` one."""
        at = text.get(address)
        if at is None:
            at = text[address] = hex(address)
            name = name_of(address)
            if name and not (name[:4] == "sub_" and name[4:] == at[2:]):
                names[at] = name
        return at

    last = -1
    rows: list[CalleeRow] = []
    for i in range(offset, hi) if offset < hi else ():
        s, d = caller[i], callee[i]
        if s != last:  # the columns are ordered by caller: a new caller starts its list
            last = s
            rows = callees[text_of(s)] = []
        rows.append(CalleeRow(text_of(d) if d >= 0 else None, _CODES[kinds[i]], calls[i]))
    return ProgramCallGraphRows(
        offset=offset,
        limit=limit,
        total=total,
        next_offset=next_offset(offset, hi - offset if offset < hi else 0, total),
        legend=CALL_GRAPH_LEGEND,
        procedures=edges.graph.procedures,
        callees=callees,
        names=names,
    )
