"""trace_call_path: bounded, deterministic call paths from a start procedure to a goal.

Breadth-first over ``procedure_callees`` (forward) or ``procedure_callers`` (backward), neighbours in
address order, so the paths found are the shortest ones and the same on every run. Paths are
reported in call order (caller first) whatever the direction walked.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from typing import Any

from rea_plugins.binary.schema import PROCEDURE, evidence, obj, prop, run

from rea.catalog.tool import ToolCall, ToolDef
from rea.evidence import Evidence
from rea.providers import OperationResult

MAX_PATHS = 32
Edge = tuple[str, list[str]]


def _node(names: dict[str, str | None], address: str) -> dict[str, Any]:
    return {"address": address, "name": names.get(address)}


def _paths(parents: dict[str, list[Edge]], root: str, end: str) -> list[list[Edge]]:
    """Every shortest path root -> end as (node, call sites into it) steps, at most MAX_PATHS, in order."""
    out: list[list[Edge]] = []

    def walk(node: str, tail: list[Edge]) -> None:
        if len(out) >= MAX_PATHS:
            return
        if node == root:
            out.append([(root, []), *tail])
            return
        for parent, sites in parents.get(node, []):
            walk(parent, [(node, sites), *tail])

    walk(end, [])
    return out


def _render(steps: list[Edge], names: dict[str, str | None], forward: bool) -> dict[str, Any]:
    nodes = [_node(names, a) for a, _ in steps]
    hops = []
    for (prev, _), (here, sites) in pairwise(steps):
        src, dst = (prev, here) if forward else (here, prev)
        hops.append({"from": src, "to": dst, "call_sites": sites})
    if not forward:
        nodes.reverse()
        hops.reverse()
    return {"nodes": nodes, "hops": hops, "length": len(hops)}


def _trace(call: ToolCall) -> Evidence:
    forward = call.args.get("direction", "forward") == "forward"
    max_depth = call.args.get("max_depth", 4)
    max_nodes = call.args.get("max_nodes", 200)
    budget = call.args.get("max_operations", 200)
    start = run(call, "procedure_address", {"procedure": call.args["start"]}).normalized
    goal = (run(call, "procedure_address", {"procedure": call.args["goal"]}).normalized
            if "goal" in call.args else None)
    root = start["address"]
    names: dict[str, str | None] = {root: start["name"]}
    if goal is not None:
        names[goal["address"]] = goal["name"]
    depth = {root: 0}
    parents: dict[str, list[Edge]] = {}
    children: set[str] = set()
    queue: deque[str] = deque([root])
    operations = unresolved = 0
    truncated: list[str] = []
    while queue:
        here = queue.popleft()
        if goal is not None and here == goal["address"]:
            continue
        if depth[here] >= max_depth:
            continue
        if operations >= budget:
            truncated.append(f"max_operations={budget}")
            break
        operations += 1
        call.ctx.check("trace_call_path")
        call.ctx.progress(f"trace_call_path: {len(depth)} procedures reached")
        if forward:
            items = run(call, "procedure_callees", {"procedure": here}).normalized["callees"]
        else:
            items = run(call, "procedure_callers", {"procedure": here}).normalized["callers"]
        for item in sorted(items, key=lambda i: (i.get("address") is None, int(i.get("address") or "0x0", 16))):
            other = item.get("address")
            if other is None:
                unresolved += len(item.get("call_sites", []))
                continue
            names.setdefault(other, item.get("name"))
            sites = list(item.get("call_sites", []))
            if other not in depth:
                if len(depth) >= max_nodes:
                    if f"max_nodes={max_nodes}" not in truncated:
                        truncated.append(f"max_nodes={max_nodes}")
                    continue
                depth[other] = depth[here] + 1
                parents[other] = [(here, sites)]
                children.add(here)
                # Imports have no code to walk.
                if item.get("kind", "direct") != "import":
                    queue.append(other)
            elif depth[other] == depth[here] + 1:
                parents[other].append((here, sites))
                children.add(here)
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
    body: dict[str, Any] = {
        "start": _node(names, root), "goal": None if goal is None else _node(names, goal["address"]),
        "direction": "forward" if forward else "backward", "reached": reached, "paths": paths,
        "procedures_reached": len(depth), "operations": operations, "unresolved_call_sites": unresolved,
        "truncated": bool(truncated) or len(paths) >= MAX_PATHS,
        "limits": {"max_depth": max_depth, "max_nodes": max_nodes, "max_operations": budget, "max_paths": MAX_PATHS},
    }
    lims = [f"the walk stopped at {', '.join(truncated)}; raise it to search further"] if truncated else []
    if goal is not None and not reached:
        lims.append(f"no path within {max_depth} calls" + (" (the walk was truncated)" if truncated else ""))
    if unresolved:
        lims.append(f"{unresolved} indirect call sites have unknown targets: paths through them are not followed")
    call.ctx.finish("trace_call_path: done")
    return evidence(call, OperationResult(normalized=body, limitations=lims, confidence="derived"))


def tools() -> list[ToolDef]:
    return [ToolDef(
        name="trace_call_path", family="binary",
        description=("Shortest call paths from start to goal (forward through callees, backward through callers), "
                     "bounded by depth, procedures and lookups; without goal, paths to every procedure reached. "
                     "Paths read in call order, with their call sites."),
        input_schema=obj({
            "start": {**PROCEDURE, "description": "Procedure to start from: name or entry address."},
            "goal": {**PROCEDURE, "description": "Procedure to reach: name (an import too) or entry address."},
            "direction": prop("string", "forward (callees, default) or backward (callers).", ["forward"],
                              enum=["forward", "backward"]),
            "max_depth": prop("integer", "Calls to follow (1-8, default 4).", [4], minimum=1, maximum=8),
            "max_nodes": prop("integer", "Procedures to reach at most (1-2000, default 200).", [200], minimum=1,
                              maximum=2000),
            "max_operations": prop("integer", "Callee/caller lookups at most (1-2000, default 200).", [200],
                                   minimum=1, maximum=2000)}, ("start",)),
        handler=_trace, requires_target=True,
        requires_operations=("procedure_address", "procedure_callees", "procedure_callers"), cli_subject="start",
        examples=({"start": "main", "goal": "strlen"}, {"start": "strlen", "goal": "main", "direction": "backward"},
                  {"start": "main", "max_depth": 2}))]
