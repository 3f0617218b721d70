"""trace_call_path: bounded, deterministic call paths from a start procedure to a goal.

Breadth-first over ``procedure_callees`` (forward) or ``procedure_callers`` (backward), neighbours in
address order, so the paths found are the shortest ones and the same on every run. Paths are
reported in call order (caller first) whatever the direction walked. A procedure whose start another
procedure's code takes as a value (``lea``/``mov imm``/``adrp+add``: a callback handed to a call) is an
``address-taken`` edge, built from any provider's ``procedure_references`` (kind data/read to a procedure start).
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from typing import Any

from rea_plugins.binary.schema import PROCEDURE, evidence, obj, prop, run
from rea_plugins.binary.shapes import CallPathTrace

from rea.catalog.tool import ToolCall, ToolDef
from rea.evidence import Evidence
from rea.providers import OperationResult

MAX_PATHS = 32
MAX_AT = 16
PAGE = 1000
# (node, sites into it, edge kind: "call" or "address-taken")
Edge = tuple[str, list[str], str]


def _node(names: dict[str, str | None], address: str) -> dict[str, Any]:
    return {"address": address, "name": names.get(address)}


def _paths(parents: dict[str, list[Edge]], root: str, end: str) -> list[list[Edge]]:
    """Every shortest path root -> end as (node, call sites into it) steps, at most MAX_PATHS, in order."""
    out: list[list[Edge]] = []

    def walk(node: str, tail: list[Edge]) -> None:
        if len(out) >= MAX_PATHS:
            return
        if node == root:
            out.append([(root, [], "call"), *tail])
            return
        for parent, sites, kind in parents.get(node, []):
            walk(parent, [(node, sites, kind), *tail])

    walk(end, [])
    return out


def _render(steps: list[Edge], names: dict[str, str | None], forward: bool) -> dict[str, Any]:
    nodes = [_node(names, a) for a, _, _ in steps]
    hops = []
    for (prev, _, _), (here, sites, kind) in pairwise(steps):
        src, dst = (prev, here) if forward else (here, prev)
        if kind == "call":
            hops.append({"from": src, "to": dst, "edge": "call", "call_sites": sites})
        else:
            # The site is where the caller side takes the callee's address, not a call instruction.
            hops.append({"from": src, "to": dst, "edge": kind, "reference_sites": sites})
    if not forward:
        nodes.reverse()
        hops.reverse()
    return {"nodes": nodes, "hops": hops, "length": len(hops)}


def _starts(call: ToolCall) -> dict[str, str | None]:
    """Every procedure start of the target (imports too) with its name."""
    starts: dict[str, str | None] = {}
    offset: int | None = 0
    while offset is not None:
        body = run(call, "list_procedures", {"offset": offset, "limit": PAGE}).normalized
        starts.update((p["address"], p.get("name")) for p in body["procedures"])
        offset = body["next_offset"]
    return starts


def _address_taken(call: ToolCall, here: str, forward: bool, starts: dict[str, str | None]) -> list[dict[str, Any]]:
    """Procedures whose start ``here``'s code takes as a value (forward), or procedures taking ``here``'s (backward)."""
    sites: dict[str, list[str]] = {}
    offset: int | None = 0
    while offset is not None:
        body = run(
            call,
            "procedure_references",
            {"procedure": here, "direction": "outgoing" if forward else "incoming", "offset": offset, "limit": PAGE},
        ).normalized
        for ref in body["references"]:
            other = ref.get("to") if forward else ref.get("from_procedure")
            # Only code taking the address counts: a data slot holding it has no procedure to walk from. radare2
            # calls arm64's adrp+add into a register a "write"; nothing writes to a procedure start.
            if (
                ref.get("kind") in ("data", "read", "write")
                and ref.get("from_procedure")
                and other in starts
                and other != here
            ):
                sites.setdefault(other, []).append(ref["from"])
        offset = body["next_offset"]
    return [
        {"address": a, "name": starts[a], "kind": "address-taken", "call_sites": sorted(s, key=lambda x: int(x, 16))}
        for a, s in sites.items()
    ]


def _neighbours(
    call: ToolCall, here: str, forward: bool, starts: dict[str, str | None] | None = None
) -> list[dict[str, Any]]:
    """Callees (forward) or callers (backward) of one procedure, then address-taken edges when ``starts`` is given."""
    if forward:
        items = list(run(call, "procedure_callees", {"procedure": here}).normalized["callees"])
    else:
        items = list(run(call, "procedure_callers", {"procedure": here}).normalized["callers"])
    if starts is not None:
        called = {i.get("address") for i in items}
        items.extend(i for i in _address_taken(call, here, forward, starts) if i["address"] not in called)
    return items


def _stop(stops: dict[str, dict[str, Any]], bound: str, limit: int, at: list[str]) -> None:
    """Record that ``bound`` (= ``limit``) kept the walk from going on past the procedures ``at``."""
    entry = stops.setdefault(bound, {"bound": bound, "limit": limit, "at": []})
    entry["at"].extend(a for a in at if a not in entry["at"])


def _stop_record(stop: dict[str, Any], names: dict[str, str | None]) -> dict[str, Any]:
    """A stop as reported: the bound, its value and (at most MAX_AT of) the procedures the walk did not go past."""
    at = stop["at"]
    return {
        "bound": stop["bound"],
        "limit": stop["limit"],
        "procedures": len(at),
        "at": [_node(names, a) for a in at[:MAX_AT]],
        "at_truncated": len(at) > MAX_AT,
    }


def _trace(call: ToolCall) -> Evidence:
    forward = call.args.get("direction", "forward") == "forward"
    max_depth = call.args.get("max_depth", 4)
    max_nodes = call.args.get("max_nodes", 200)
    budget = call.args.get("max_operations", 200)
    start = run(call, "procedure_address", {"procedure": call.args["start"]}).normalized
    goal = run(call, "procedure_address", {"procedure": call.args["goal"]}).normalized if "goal" in call.args else None
    root = start["address"]
    taken = call.args.get("address_taken", True) and all(
        call.session.supports(op) for op in ("procedure_references", "list_procedures")
    )
    starts = _starts(call) if taken else None
    names: dict[str, str | None] = {root: start["name"]}
    if goal is not None:
        names[goal["address"]] = goal["name"]
    depth = {root: 0}
    parents: dict[str, list[Edge]] = {}
    children: set[str] = set()
    queue: deque[str] = deque([root])
    operations = unresolved = 0
    truncated: list[str] = []
    stops: dict[str, dict[str, Any]] = {}
    frontier: list[str] = []
    while queue:
        here = queue.popleft()
        if goal is not None and here == goal["address"]:
            continue
        if depth[here] >= max_depth:
            frontier.append(here)
            continue
        if operations >= budget:
            truncated.append(f"max_operations={budget}")
            _stop(stops, "max_operations", budget, [here, *queue])
            break
        operations += 1
        call.ctx.check("trace_call_path")
        call.ctx.progress(f"trace_call_path: {len(depth)} procedures reached")
        items = _neighbours(call, here, forward, starts)
        for item in sorted(items, key=lambda i: (i.get("address") is None, int(i.get("address") or "0x0", 16))):
            other = item.get("address")
            if other is None:
                unresolved += len(item.get("call_sites", []))
                continue
            names.setdefault(other, item.get("name"))
            sites = list(item.get("call_sites", []))
            kind = "address-taken" if item.get("kind") == "address-taken" else "call"
            if other not in depth:
                if len(depth) >= max_nodes:
                    if f"max_nodes={max_nodes}" not in truncated:
                        truncated.append(f"max_nodes={max_nodes}")
                    _stop(stops, "max_nodes", max_nodes, [here])
                    continue
                depth[other] = depth[here] + 1
                parents[other] = [(here, sites, kind)]
                children.add(here)
                # Imports have no code to walk.
                if item.get("kind", "direct") != "import":
                    queue.append(other)
            elif depth[other] == depth[here] + 1:
                parents[other].append((here, sites, kind))
                children.add(here)
    # A procedure left at max_depth only stopped the walk if it calls something not yet reached; a leaf did not.
    if frontier and not (goal is not None and goal["address"] in depth) and "max_operations" not in stops:
        for here in sorted(set(frontier), key=lambda a: int(a, 16)):
            if operations >= budget:
                truncated.append(f"max_operations={budget}")
                _stop(stops, "max_operations", budget, [here])
                break
            operations += 1
            more = _neighbours(call, here, forward, starts)
            if any(i.get("address") is not None and i["address"] not in depth for i in more):
                if f"max_depth={max_depth}" not in truncated:
                    truncated.append(f"max_depth={max_depth}")
                _stop(stops, "max_depth", max_depth, [here])
    if goal is not None:
        reached = goal["address"] in depth
        ends = [goal["address"]] if reached else []
    else:
        reached = None
        ends = sorted((a for a in depth if a not in children and a != root), key=lambda a: (depth[a], int(a, 16)))
    paths: list[dict[str, Any]] = []
    for end in ends:
        for steps in _paths(parents, root, end):
            if len(paths) < MAX_PATHS:
                paths.append(_render(steps, names, forward))
            else:
                _stop(stops, "max_paths", MAX_PATHS, [end])
    body: dict[str, Any] = {
        "start": _node(names, root),
        "goal": None if goal is None else _node(names, goal["address"]),
        "direction": "forward" if forward else "backward",
        "reached": reached,
        "paths": paths,
        "procedures_reached": len(depth),
        "operations": operations,
        "unresolved_call_sites": unresolved,
        "truncated": bool(truncated) or len(paths) >= MAX_PATHS,
        "stopped_by": [_stop_record(s, names) for s in stops.values()],
        "limits": {"max_depth": max_depth, "max_nodes": max_nodes, "max_operations": budget, "max_paths": MAX_PATHS},
    }
    lims = (
        [f"the walk stopped at {', '.join(truncated)} (stopped_by names where); raise it to search further"]
        if truncated
        else []
    )
    if goal is not None and not reached:
        lims.append(f"no path within {max_depth} calls" + (" (the walk was truncated)" if truncated else ""))
    if unresolved:
        lims.append(f"{unresolved} indirect call sites have unknown targets: paths through them are not followed")
    call.ctx.finish("trace_call_path: done")
    return evidence(call, OperationResult(normalized=body, limitations=lims, confidence="derived"))


def tools() -> list[ToolDef]:
    return [
        ToolDef(
            name="trace_call_path",
            result_type=CallPathTrace,
            family="binary",
            description=(
                "Shortest call paths from start to goal (forward through callees, backward through callers), "
                "bounded by depth, procedures and lookups; without goal, paths to every procedure reached. "
                "Paths read in call order; each hop says its edge: call (with call sites) or address-taken."
            ),
            input_schema=obj(
                {
                    "start": {**PROCEDURE, "description": "Procedure to start from: name or entry address."},
                    "goal": {**PROCEDURE, "description": "Procedure to reach: name (an import too) or entry address."},
                    "direction": prop(
                        "string",
                        "forward (callees, default) or backward (callers).",
                        ["forward"],
                        enum=["forward", "backward"],
                    ),
                    "max_depth": prop("integer", "Calls to follow (1-8, default 4).", [4], minimum=1, maximum=8),
                    "max_nodes": prop(
                        "integer", "Procedures to reach at most (1-2000, default 200).", [200], minimum=1, maximum=2000
                    ),
                    "max_operations": prop(
                        "integer",
                        "Callee/caller lookups at most (1-2000, default 200).",
                        [200],
                        minimum=1,
                        maximum=2000,
                    ),
                    "address_taken": prop(
                        "boolean",
                        "Also follow address-taken edges: a procedure whose start code takes "
                        "as a value, such as a callback passed to a call (default true).",
                        [True],
                    ),
                },
                ("start",),
            ),
            handler=_trace,
            requires_target=True,
            requires_operations=("procedure_address", "procedure_callees", "procedure_callers"),
            cli_subject="start",
            examples=(
                {"start": "main", "goal": "strlen"},
                {"start": "strlen", "goal": "main", "direction": "backward"},
                {"start": "main", "max_depth": 2},
            ),
        )
    ]
