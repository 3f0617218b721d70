"""``program_call_graph``: every call edge of a program, paged, from each procedure's callees.

A provider whose engine answers callees one procedure at a time (angr, radare2, the record-based ones) feeds its
own ``procedure_callees`` items through ``edges_of`` and pages them with ``answer``, so the whole-program graph
agrees with the per-procedure answer by construction. The shape is ``rea.operations.shapes.ProgramCallGraph``.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

from rea.operations.paging import page_fields
from rea.operations.paging import whole_program_paging
from rea.records import JSONObject


class Edge(NamedTuple):
    caller: int
    callee: int | None
    kind: str
    calls: int
    callee_name: str | None


def edges_of(caller: int, callees: Iterable[Mapping[str, Any]]) -> list[Edge]:
    """One procedure's ``procedure_callees`` items (addresses as hex strings) as edges."""
    out = []
    for item in callees:
        address = item.get("address")
        callee = None if address is None else int(address, 16)
        # An unaddressed callee keeps its name (an import); a named local procedure is in ``names`` instead.
        name = item.get("name") if callee is None or item.get("kind") == "import" else None
        out.append(Edge(caller, callee, str(item.get("kind", "direct")), len(item.get("call_sites", ())) or 1, name))
    return out


def _order(e: Edge) -> tuple[int, bool, int, str, str]:
    return e.caller, e.callee is None, e.callee or 0, e.kind, e.callee_name or ""


def check(params: Mapping[str, object]) -> tuple[int, int]:
    """The request's offset and limit, checked before the graph is built."""
    return whole_program_paging(params)


def answer(
    edges: Iterable[Edge], names: Mapping[int, str | None], procedures: int, params: Mapping[str, object]
) -> JSONObject:
    """One page of the program's edges (ordered by caller, then callee) as ``ProgramCallGraph``."""
    offset, limit = check(params)
    ordered = sorted(edges, key=_order)
    window = ordered[offset : offset + limit]
    mentioned: dict[str, str] = {}
    rows: list[JSONObject] = []
    for e in window:
        for address in (e.caller, e.callee):
            name = None if address is None else names.get(address)
            if address is not None and name:
                mentioned[hex(address)] = name
        row: JSONObject = {
            "caller": hex(e.caller),
            "callee": None if e.callee is None else hex(e.callee),
            "kind": e.kind,
            "calls": e.calls,
        }
        if e.callee_name and (e.callee is None or names.get(e.callee) != e.callee_name):
            row["callee_name"] = e.callee_name
        rows.append(row)
    return {
        **page_fields(offset, limit, len(window), len(ordered)),
        "procedures": procedures,
        "edges": rows,
        "names": mentioned,
    }
