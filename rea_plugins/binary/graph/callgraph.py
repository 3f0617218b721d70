"""get_call_graph: a bounded caller or callee graph from one procedure, or every call edge of the program.

From a procedure, the walk follows an import into the open library that exports it (forward) and an export
back to the open programs that import it (backward): such an edge names the other end's ``target_id``
(crossbinary.Across). Without a procedure, the provider's ``program_call_graph`` answers, paged.
"""

from __future__ import annotations

from collections import deque
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import CALL_GRAPH_LEGEND
from rea.plugin import EDGE_KIND_CODES
from rea.plugin import FORMAT_PROPERTY
from rea.plugin import Arguments
from rea.plugin import CalleeRow
from rea.plugin import Edge
from rea.plugin import Evidence
from rea.plugin import Graph
from rea.plugin import Node
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ProgramCallGraph
from rea.plugin import ProgramCallGraphRows
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import render
from rea.plugin import requested
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import COMPLETE
from rea_plugins.binary.core.schema import LEAN
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import CallGraph
from rea_plugins.binary.core.shapes import DepthStop
from rea_plugins.binary.core.shapes import GraphEdge
from rea_plugins.binary.core.shapes import GraphNode
from rea_plugins.binary.core.shapes import StoppedBy
from rea_plugins.binary.core.shapes import paging_of
from rea_plugins.binary.graph.crossbinary import Across
from rea_plugins.binary.graph.crossbinary import Neighbour
from rea_plugins.binary.graph.crossbinary import neighbour
from rea_plugins.binary.graph.thunks import function_of_stub
from rea_plugins.binary.graph.thunks import own_stub

# The whole program's pages: lean rows by default (about 35 bytes an edge), the complete edges on request.
DETAIL = prop(
    "string",
    "Whole program: lean rows (default) or complete edge objects.",
    ["complete"],
    enum=[LEAN, COMPLETE],
)

# (target_id, procedure address); the address is None for a callee of unknown address (a computed call)
Key = tuple[str, str | None]


def _program(call: ToolCall) -> Evidence:
    """Every call edge of the program, paged, with the analyst's names: lean rows unless ``detail`` is complete."""
    if not call.session.supports("program_call_graph"):
        raise ReaError(
            "capability_unavailable",
            "this provider does not list the whole program's call graph",
            remediation="Name a procedure in address, or open the target on native, angr or radare2.",
            details={"operation": "program_call_graph"},
        )
    params: Arguments = {k: call.args[k] for k in ("offset", "limit") if k in call.args}
    complete = arg_str(call.args, "detail", LEAN) == COMPLETE
    # The native provider answers the lean rows itself (no dict per edge); another provider's complete page is
    # projected here.
    result = run(call, "program_call_graph", params if complete else {**params, "detail": LEAN})
    user = annotate.notebook(call).names()
    if complete:
        body: Any = result.normalized
        if user:
            body = dict(body)
            mentioned = {e["caller"] for e in body["edges"]} | {e["callee"] for e in body["edges"] if e["callee"]}
            body["names"] = {**body["names"], **{a: n for a, n in user.items() if a in mentioned}}
    else:
        body = result.normalized
        if not isinstance(body, ProgramCallGraphRows):
            body = lean_call_graph(body)
        if user:
            mentioned = set(body.callees) | {r.callee for rows in body.callees.values() for r in rows if r.callee}
            names = {**body.names, **{a: n for a, n in user.items() if a in mentioned}}
            body = msgspec.structs.replace(body, names=names)
    # The complete page keeps the parameters (and so the evidence id) it had before the lean default; the lean
    # page's parameters say which projection it is.
    parameters = {k: v for k, v in annotate.parameters(call).items() if k != "detail"}
    if not complete:
        parameters["detail"] = LEAN
    # The provider's limitations, locations and confidence stay as it said them.
    out = result if body is result.normalized else msgspec.structs.replace(result, normalized=body)
    return call.session.evidence(call.tool.name, parameters, out)


def lean_call_graph(page: Any) -> ProgramCallGraphRows:
    """A complete ``ProgramCallGraph`` page (a dict or the Struct) as lean rows, the same facts."""
    full = page if isinstance(page, ProgramCallGraph) else msgspec.convert(page, ProgramCallGraph)
    names = {a: n for a, n in full.names.items() if not _made(a, n)}
    callees: dict[str, list[CalleeRow]] = {}
    for e in full.edges:
        # A callee with no address (an import some engines leave unmapped) is said by its name.
        callee = e.callee if e.callee is not None else e.callee_name
        callees.setdefault(e.caller, []).append(CalleeRow(callee, EDGE_KIND_CODES[e.kind], e.calls))
        if e.callee is not None and e.callee_name and e.callee not in full.names and not _made(e.callee, e.callee_name):
            names[e.callee] = e.callee_name
    return ProgramCallGraphRows(
        **paging_of(full),
        legend=CALL_GRAPH_LEGEND,
        procedures=full.procedures,
        callees=callees,
        names=names,
    )


def _made(address: str, name: str) -> bool:
    """Whether ``name`` is the made ``sub_<address>`` (the lean page leaves it out)."""
    return name[:4] == "sub_" and name[4:] == address[2:]


def _thunk_item(function: ProcedureRef) -> Neighbour:
    """The neighbour of the hop through a function's own stub."""
    return Neighbour(address=function.address, name=function.name, kind="thunk", call_sites=[])


def _neighbours(across: Across, key: Key, forward: bool, stubs: dict[str, ProcedureRef]) -> list[tuple[Key, Neighbour]]:
    """Each neighbour of ``key``; an import an open library exports is that library's procedure."""
    tid, address = key
    assert address is not None  # only procedures with an address are walked
    out: list[tuple[Key, Neighbour]] = []
    if forward:
        if tid == across.home and address in stubs:
            # A function's own PLT stub goes on to the function (the lazily bound entry's jump to PLT0 runs once).
            return [((tid, stubs[address].address), _thunk_item(stubs[address]))]
        for row in across.callees(tid, address):
            into = row.get("exported_by")
            if isinstance(into, dict) and into:
                imported = neighbour({**row, "name": into["name"], "kind": "import"})
                out.append(((str(into["target_id"]), str(into["address"])), imported))
                continue
            item = neighbour(row)
            function = function_of_stub(across.call, item.name or "") if tid == across.home else None
            if function is not None and item.address:
                stubs[item.address] = function
                item.kind = "thunk"  # expanded, on to the function it stands for
            out.append(((tid, item.address), item))
        return out
    callers = across.run(tid, "procedure_callers", {"procedure": address}).normalized
    out.extend(((tid, item.address), item) for item in map(neighbour, callers["callers"]))
    name = callers["procedure"].get("name")
    if tid == across.home:
        # The function's own PLT stub (a library calling its export through its PLT) is a hop to its callers.
        listed = {item.get("address") for item in callers["callers"]}
        own = own_stub(across.call, name, {a for a in listed if a} | {address})
        if own is not None:
            out.append(((tid, own.address), _thunk_item(own)))
    # An export of a library: the open programs importing it call it through their import.
    for program, stub in across.importers(tid, name) if name else []:
        for item in across.run(program, "procedure_callers", {"procedure": stub}).normalized["callers"]:
            if item.get("kind") != "thunk":
                imported = neighbour({**item, "kind": "import"})
                out.append(((program, imported.address), imported))
    return out


def _rooted(call: ToolCall) -> Evidence:
    depth = arg_int(call.args, "depth", 2)
    max_nodes = arg_int(call.args, "max_nodes", 200)
    forward = arg_str(call.args, "direction", "forward") == "forward"
    direction: Literal["forward", "backward"] = "forward" if forward else "backward"
    across = Across(call)
    home = across.home
    root = run(call, "procedure_address", {"procedure": call.args["address"]}).normalized
    start: Key = (home, root["address"])
    nodes: dict[Key, GraphNode] = {start: GraphNode(address=root["address"], name=root["name"], depth=0)}
    edges: list[GraphEdge] = []
    unresolved = 0
    truncated = False
    queue: deque[tuple[Key, int]] = deque([(start, 0)])
    stubs: dict[str, ProcedureRef] = {}  # a function's own PLT stub -> the function
    frontier: list[Key] = []
    while queue:
        here, level = queue.popleft()
        if level >= depth:
            frontier.append(here)
            continue
        call.ctx.check("call graph")
        call.ctx.progress(f"call graph: {len(nodes)} nodes")
        for other, item in _neighbours(across, here, forward, stubs):
            if other[1] is None:
                unresolved += len(item.call_sites)
                continue
            src, dst = (here, other) if forward else (other, here)
            assert src[1] is not None and dst[1] is not None  # other[1] is not None here
            edges.append(
                GraphEdge(
                    source=src[1],
                    to=dst[1],
                    call_sites=item.call_sites,
                    kind=item.kind,
                    from_target=src[0] if src[0] != home else None,
                    to_target=dst[0] if dst[0] != home else None,
                )
            )
            if other not in nodes:
                if len(nodes) >= max_nodes:
                    truncated = True
                    continue
                nodes[other] = GraphNode(
                    address=other[1],
                    name=item.name,
                    depth=level + 1,
                    target_id=other[0] if other[0] != home else None,
                )
                # Procedures with code here are expanded (a function's own PLT stub too: a hop to its callers); an
                # import left unfollowed and computed targets are leaves.
                if item.kind in ("direct", "tail", "thunk") or item.exported or other[0] != here[0]:
                    queue.append((other, level + 1))
    # A procedure left at the depth bound only cut the graph short if it calls (or is called by) something more.
    deeper = [
        k
        for k in frontier
        if any(o[1] is not None and o not in nodes for o, _ in _neighbours(across, k, forward, stubs))
    ]
    stopped_by: list[StoppedBy] = [StoppedBy(bound="max_nodes", limit=max_nodes)] if truncated else []
    if deeper:
        stopped_by.append(
            DepthStop(
                bound="depth",
                limit=depth,
                procedures=len(deeper),
                at=[a for _, a in deeper[:16] if a is not None],
                at_truncated=len(deeper) > 16,
            )
        )
    body = CallGraph(
        root=ProcedureRef(address=root["address"], name=root["name"]),
        direction=direction,
        depth=depth,
        nodes=sorted(nodes.values(), key=lambda n: (n.depth, n.target_id or "", int(n.address, 16))),
        edges=edges,
        unresolved_call_sites=unresolved,
        truncated=bool(stopped_by),
        stopped_by=stopped_by,
        max_nodes=max_nodes,
    )
    lims = [f"graph stopped at max_nodes={max_nodes}; raise it or lower depth"] if truncated else []
    if deeper:
        lims.append(
            f"{len(deeper)} procedures at depth {depth} have further {'callees' if forward else 'callers'} not shown"
        )
    fmt = requested(call.args)
    if fmt is not None:
        body.picture = render.picture(_graph(body), fmt)
    if any(e.from_target is not None or e.to_target is not None for e in edges):
        lims.append("from_target/to_target name the other open target an edge crosses into (an import and its export)")
    return evidence(call, OperationResult(normalized=body, limitations=lims))


def _graph(body: CallGraph) -> Graph:
    """The walk as a picture: each procedure once (another target's with its id), edges labelled unless direct."""

    def key(address: str, target: str | None) -> str:
        return f"{target}:{address}" if target else address

    nodes = [
        Node(
            id=key(n.address, n.target_id),
            label=(n.name or n.address) + (f" ({n.target_id[:8]})" if n.target_id else ""),
            emphasis=n.depth == 0,
        )
        for n in body.nodes
    ]
    edges = [
        Edge(
            source=key(e.source, e.from_target),
            target=key(e.to, e.to_target),
            label=None if e.kind == "direct" else e.kind,
        )
        for e in body.edges
    ]
    return Graph(nodes=nodes, edges=edges, title=f"call graph of {body.root.name or body.root.address}")


def _call_graph(call: ToolCall) -> Evidence:
    if "address" in call.args:
        return _rooted(call)
    if requested(call.args) is not None:
        raise ReaError(
            "invalid_request",
            "a picture (format mermaid or dot) is drawn from one procedure's graph, not the whole program's pages",
            remediation="Name a procedure in address, or leave format at structured.",
            details={"issues": [{"path": "format", "reason": "invalid_value", "message": "needs address"}]},
        )
    return _program(call)


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="get_call_graph",
            result_type=(CallGraph, ProgramCallGraphRows, ProgramCallGraph),
            description=(
                "Bounded caller or callee graph from one procedure (depth at most 5), across open libraries; "
                "without address, every call edge of the program, paged."
            ),
            input_schema=obj(
                {
                    "address": PROCEDURE,
                    "depth": prop("integer", "Levels to follow (1-5).", [2], minimum=1, maximum=5),
                    "direction": prop(
                        "string", "forward (callees) or backward (callers).", ["forward"], enum=["forward", "backward"]
                    ),
                    "max_nodes": prop("integer", "Node budget (1-1000).", [200], minimum=1, maximum=1000),
                    "offset": prop("integer", "Whole program: first edge (0-based).", [0], minimum=0),
                    "limit": prop("integer", "Whole program: edges per page (1-5000).", [500], minimum=1, maximum=5000),
                    "format": FORMAT_PROPERTY,
                    "detail": DETAIL,
                },
                (),
            ),
            handler=_call_graph,
            requires_operations=("procedure_address", "procedure_callees", "procedure_callers"),
            cli_subject="address",
            examples=(
                {"address": "main"},
                {"address": "main", "depth": 3, "direction": "backward"},
                {"address": "main", "format": "mermaid"},
                {"limit": 500},
                {"limit": 500, "detail": "complete"},
            ),
        )
    ]
