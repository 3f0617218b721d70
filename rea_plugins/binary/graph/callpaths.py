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

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import render
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import every_row
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import CallPath
from rea_plugins.binary.core.shapes import CallPathTrace
from rea_plugins.binary.core.shapes import PathHop
from rea_plugins.binary.core.shapes import PathNode
from rea_plugins.binary.core.shapes import PathStop
from rea_plugins.binary.graph.crossbinary import Across
from rea_plugins.binary.graph.crossbinary import Neighbour
from rea_plugins.binary.graph.crossbinary import follow_imports
from rea_plugins.binary.graph.crossbinary import neighbour
from rea_plugins.binary.graph.thunks import function_of_stub
from rea_plugins.binary.graph.thunks import own_stub

MAX_PATHS = 32
_NO_CODE = ("import", "external")
MAX_AT = 16
PAGE = 1000
# A procedure of an open target: (target_id, address).
Key = tuple[str, str]
# (node, sites into it, edge kind: "call", "address-taken", or "import" into another open target)
Edge = tuple[Key, list[str], str]


def _node(names: dict[Key, str | None], key: Key, home: str) -> PathNode:
    return PathNode(address=key[1], name=names.get(key), target_id=None if key[0] == home else key[0])


def _order(key: Key) -> tuple[str, int]:
    return key[0], int(key[1], 16)


def _paths(parents: dict[Key, list[Edge]], root: Key, end: Key) -> list[list[Edge]]:
    """Every shortest path root -> end as (node, call sites into it) steps, at most MAX_PATHS, in order."""
    out: list[list[Edge]] = []

    def walk(node: Key, tail: list[Edge]) -> None:
        if len(out) >= MAX_PATHS:
            return
        if node == root:
            out.append([(root, [], "call"), *tail])
            return
        for parent, sites, kind in parents.get(node, []):
            walk(parent, [(node, sites, kind), *tail])

    walk(end, [])
    return out


def _render(steps: list[Edge], names: dict[Key, str | None], forward: bool, home: str) -> CallPath:
    nodes = [_node(names, a, home) for a, _, _ in steps]
    hops = []
    for (prev, _, _), (here, sites, kind) in pairwise(steps):
        src, dst = (prev[1], here[1]) if forward else (here[1], prev[1])
        if kind in ("call", "import"):
            hops.append(PathHop(source=src, to=dst, edge=kind, call_sites=sites))
        else:
            # The site is where the caller side takes the callee's address, not a call instruction.
            hops.append(PathHop(source=src, to=dst, edge=kind, reference_sites=sites))
    if not forward:
        nodes.reverse()
        hops.reverse()
    return CallPath(nodes=nodes, hops=hops, length=len(hops))


def _starts(call: ToolCall) -> dict[str, str | None]:
    """Every procedure start of the target that has code here, with its name. An import is left out: its
    procedure may be its GOT slot (``__gmon_start__``'s, a weak undefined symbol's), which the code that reads it
    does not call and nothing can walk into; a call to an import is a call edge already."""
    procedures = every_row(call, "list_procedures", "procedures", {}, "procedure starts")
    starts: dict[str, str | None] = {}
    for p in procedures:
        if p.get("kind") not in _NO_CODE:
            name = p.get("name")
            starts[str(p["address"])] = name if isinstance(name, str) else None
    return starts


def _address_taken(call: ToolCall, here: str, forward: bool, starts: dict[str, str | None]) -> list[Neighbour]:
    """Procedures whose start ``here``'s code takes as a value (forward), or procedures taking ``here``'s (backward)."""
    sites: dict[str, list[str]] = {}
    asked: JSONObject = {"procedure": here, "direction": "outgoing" if forward else "incoming"}
    for ref in every_row(call, "procedure_references", "references", asked, "address-taken references"):
        other = ref.get("to") if forward else ref.get("from_procedure")
        # Only code taking the address counts: a data slot holding it has no procedure to walk from. radare2
        # calls arm64's adrp+add into a register a "write"; nothing writes to a procedure start.
        if (
            ref.get("kind") in ("data", "read", "write")
            and ref.get("from_procedure")
            and isinstance(other, str)
            and other in starts
            and other != here
        ):
            sites.setdefault(other, []).append(str(ref["from"]))
    return [
        Neighbour(address=a, name=starts[a], kind="address-taken", call_sites=sorted(s, key=lambda x: int(x, 16)))
        for a, s in sites.items()
    ]


def _neighbours(
    across: Across,
    key: Key,
    forward: bool,
    starts: dict[str, str | None] | None = None,
    stubs: dict[str, ProcedureRef] | None = None,
) -> list[tuple[str, Neighbour]]:
    """Callees (forward) or callers (backward) of one procedure, each with its open target, then (in the start's
    target) address-taken edges when ``starts`` is given. An import an open library exports leads into it."""
    tid, here = key
    items: list[tuple[str, Neighbour]] = []
    if forward:
        for row in across.callees(tid, here):
            into = row.get("exported_by")
            if isinstance(into, dict) and into:
                imported = {**row, "address": into["address"], "name": into["name"], "kind": "import"}
                items.append((str(into["target_id"]), neighbour(imported)))
            else:
                items.append((tid, neighbour(row)))
        if tid == across.home and stubs is not None and here in stubs:
            # A function's own PLT stub goes on to the function (through a slot some providers do not follow; the
            # lazily bound entry's jump to PLT0 runs once, at binding, and is no call of the program).
            function = stubs[here]
            items = [(tid, Neighbour(address=function.address, name=function.name, kind="direct", call_sites=[]))]
        elif tid == across.home and stubs is not None:
            for _, item in items:
                name = item.name or ""
                if name.endswith("@plt") and item.address and item.address not in stubs:
                    found = function_of_stub(across.call, name)
                    if found is not None:
                        stubs[item.address] = found
                        item.kind = "thunk"  # walked on, to the function it stands for
    else:
        body = across.run(tid, "procedure_callers", {"procedure": here}).normalized
        items = [(tid, neighbour(i)) for i in body["callers"]]
        name = body["procedure"].get("name")
        if tid == across.home:
            # The function's own PLT stub (a library calling its export through its PLT) is a hop to its callers.
            own = own_stub(across.call, name, {i["address"] for i in body["callers"]} | {here})
            if own is not None:
                items.append((tid, Neighbour(address=own.address, name=own.name, kind="direct", call_sites=[])))
        for program, stub in across.importers(tid, name) if name else []:
            callers = across.run(program, "procedure_callers", {"procedure": stub}).normalized["callers"]
            items.extend((program, neighbour({**i, "kind": "import"})) for i in callers if i.get("kind") != "thunk")
    if starts is not None and tid == across.home:
        called = {i.address for t, i in items if t == tid}
        items.extend((tid, i) for i in _address_taken(across.call, here, forward, starts) if i.address not in called)
    return items


def _leaf_or_neighbours(
    across: Across,
    key: Key,
    root: Key,
    forward: bool,
    starts: dict[str, str | None] | None,
    stubs: dict[str, ProcedureRef],
) -> list[tuple[str, Neighbour]]:
    """``_neighbours``, where a node an engine reported as a callee but that is no procedure of the target (the GOT
    slot of a weak undefined symbol, ``__gmon_start__``'s in a stripped PIE such as /bin/ls) is a leaf: there is no
    code there to walk, and the walk goes on from the others instead of failing."""
    try:
        return _neighbours(across, key, forward, starts, stubs)
    except ReaError as exc:
        if key == root or exc.code != "invalid_request":
            raise
        return []


# A bound that stopped the walk (by its name): its value and the procedures the walk did not go past.
Stops = dict[str, tuple[int, list[Key]]]


def _stop(stops: Stops, bound: str, limit: int, at: list[Key]) -> None:
    """Record that ``bound`` (= ``limit``) kept the walk from going on past the procedures ``at``."""
    held = stops.setdefault(bound, (limit, []))[1]
    held.extend(a for a in at if a not in held)


def _stop_record(bound: str, stop: tuple[int, list[Key]], names: dict[Key, str | None], home: str) -> PathStop:
    """A stop as reported: the bound, its value and (at most MAX_AT of) the procedures the walk did not go past."""
    limit, at = stop
    return PathStop(
        bound=bound,
        limit=limit,
        procedures=len(at),
        at=[_node(names, a, home) for a in at[:MAX_AT]],
        at_truncated=len(at) > MAX_AT,
    )


def _goal(across: Across, goal: str) -> tuple[Key, str | None]:
    """The goal procedure: in the start's target, else in the first other open target that has it."""
    call, session = across.call, across.call.session
    try:
        found = run(call, "procedure_address", {"procedure": goal}).normalized
    except ReaError as exc:
        others = [t.target_id for t in session.open_targets() if t.target_id != across.home]
        if exc.code != "invalid_request" or not others:
            raise
        for other in others:
            try:
                found = across.run(other, "procedure_address", {"procedure": goal}).normalized
            except ReaError:
                continue
            return (other, found["address"]), found["name"]
        raise
    if len(session.open_targets()) > 1:
        # An import an open library exports is reached there: the walk follows it into the library.
        info = run(call, "procedure_info", {"procedure": found["address"]}).normalized
        if info.get("kind") in ("import", "thunk"):
            stub: JSONObject = {"address": found["address"], "name": found["name"], "kind": "import", "call_sites": []}
            into = follow_imports(call, [stub])[0].get("exported_by")
            if isinstance(into, dict) and into:
                return (str(into["target_id"]), str(into["address"])), str(into["name"])
    return (across.home, found["address"]), found["name"]


def _trace(call: ToolCall) -> Evidence:
    forward = arg_str(call.args, "direction", "forward") == "forward"
    max_depth = arg_int(call.args, "max_depth", 4)
    max_nodes = arg_int(call.args, "max_nodes", 200)
    budget = arg_int(call.args, "max_operations", 200)
    across = Across(call)
    home = across.home
    start = run(call, "procedure_address", {"procedure": call.args["start"]}).normalized
    root: Key = (home, start["address"])
    names: dict[Key, str | None] = {root: start["name"]}
    goal: Key | None = None
    asked = arg_str(call.args, "goal")
    if asked is not None:
        goal, names_goal = _goal(across, asked)
        names[goal] = names_goal
    taken = arg_bool(call.args, "address_taken", True) and all(
        call.session.supports(op) for op in ("procedure_references", "list_procedures")
    )
    starts = _starts(call) if taken else None
    stubs: dict[str, ProcedureRef] = {}  # a function's own PLT stub -> the function
    depth = {root: 0}
    parents: dict[Key, list[Edge]] = {}
    children: set[Key] = set()
    queue: deque[Key] = deque([root])
    operations = unresolved = 0
    truncated: list[str] = []
    stops: Stops = {}
    frontier: list[Key] = []
    while queue:
        here = queue.popleft()
        if here == goal:
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
        items = _leaf_or_neighbours(across, here, root, forward, starts, stubs)
        for tid, item in sorted(
            items, key=lambda i: (i[1].address is None, i[0] != here[0], int(i[1].address or "0x0", 16))
        ):
            address = item.address
            if address is None:
                unresolved += len(item.call_sites)
                continue
            other: Key = (tid, address)
            names.setdefault(other, item.name)
            sites = list(item.call_sites)
            crossed = item.exported or tid != here[0]  # an import followed to the procedure exporting it
            kind = "address-taken" if item.kind == "address-taken" else "import" if crossed else "call"
            if other not in depth:
                if len(depth) >= max_nodes:
                    if f"max_nodes={max_nodes}" not in truncated:
                        truncated.append(f"max_nodes={max_nodes}")
                    _stop(stops, "max_nodes", max_nodes, [here])
                    continue
                depth[other] = depth[here] + 1
                parents[other] = [(here, sites, kind)]
                children.add(here)
                # An import has no code here to walk; one an open library exports is walked there.
                if item.kind != "import" or crossed:
                    queue.append(other)
            elif depth[other] == depth[here] + 1:
                parents[other].append((here, sites, kind))
                children.add(here)
    # A procedure left at max_depth only stopped the walk if it calls something not yet reached; a leaf did not.
    if frontier and not (goal is not None and goal in depth) and "max_operations" not in stops:
        for here in sorted(set(frontier), key=_order):
            if operations >= budget:
                truncated.append(f"max_operations={budget}")
                _stop(stops, "max_operations", budget, [here])
                break
            operations += 1
            more = _leaf_or_neighbours(across, here, root, forward, starts, stubs)
            if any(i.address is not None and (t, i.address) not in depth for t, i in more):
                if f"max_depth={max_depth}" not in truncated:
                    truncated.append(f"max_depth={max_depth}")
                _stop(stops, "max_depth", max_depth, [here])
    if goal is not None:
        reached = goal in depth
        ends = [goal] if reached else []
    else:
        reached = None
        ends = sorted((a for a in depth if a not in children and a != root), key=lambda a: (depth[a], *_order(a)))
    paths: list[CallPath] = []
    for end in ends:
        for steps in _paths(parents, root, end):
            if len(paths) < MAX_PATHS:
                paths.append(_render(steps, names, forward, home))
            else:
                _stop(stops, "max_paths", MAX_PATHS, [end])
    body = CallPathTrace(
        start=_node(names, root, home),
        goal=None if goal is None else _node(names, goal, home),
        direction="forward" if forward else "backward",
        reached=reached,
        paths=paths,
        procedures_reached=len(depth),
        operations=operations,
        unresolved_call_sites=unresolved,
        truncated=bool(truncated) or len(paths) >= MAX_PATHS,
        stopped_by=[_stop_record(bound, s, names, home) for bound, s in stops.items()],
        limits={"max_depth": max_depth, "max_nodes": max_nodes, "max_operations": budget, "max_paths": MAX_PATHS},
    )
    fmt = render.requested(call.args)
    if fmt is not None:
        body.picture = render.picture(_graph(body), fmt)
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


def _graph(body: CallPathTrace) -> render.Graph:
    """Every path's hops merged into one picture: the start first, then procedures as the paths reach them."""

    def key(node: PathNode) -> str:
        return f"{node.target_id}:{node.address}" if node.target_id else node.address

    ends = {key(body.start)} | ({key(body.goal)} if body.goal else set())
    nodes: dict[str, render.Node] = {}
    edges: list[render.Edge] = []
    for path in body.paths:
        by_address = {n.address: key(n) for n in path.nodes}
        for n in path.nodes:
            k = key(n)
            nodes.setdefault(k, render.Node(id=k, label=n.name or n.address, emphasis=k in ends))
        for hop in path.hops:
            label = None if hop.edge == "call" else hop.edge
            edges.append(render.Edge(source=by_address[hop.source], target=by_address[hop.to], label=label))
    if not nodes:
        start = body.start
        nodes[key(start)] = render.Node(id=key(start), label=start.name or start.address, emphasis=True)
    return render.Graph(nodes=list(nodes.values()), edges=edges, title="call paths")


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="trace_call_path",
            result_type=CallPathTrace,
            description=(
                "Shortest call paths from start to goal (forward through callees, backward through callers), "
                "bounded by depth, procedures and lookups; without goal, paths to every procedure reached. "
                "Paths read in call order; each hop says its edge: call (with call sites), import (into an open "
                "library) or address-taken."
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
                    "format": render.FORMAT_PROPERTY,
                },
                ("start",),
            ),
            handler=_trace,
            requires_operations=("procedure_address", "procedure_callees", "procedure_callers"),
            cli_subject="start",
            examples=(
                {"start": "main", "goal": "strlen"},
                {"start": "strlen", "goal": "main", "direction": "backward"},
                {"start": "main", "max_depth": 2},
            ),
        )
    ]
