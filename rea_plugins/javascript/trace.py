"""trace_application_feature and trace_javascript_semantics: bounded walks over application Evidence."""

from __future__ import annotations

from collections import deque
from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import render
from rea_plugins.javascript import appgraph
from rea_plugins.javascript.appgraph import Index
from rea_plugins.javascript.appgraph import Loaded
from rea_plugins.javascript.model import FunctionRecord
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.results import FeatureTrace
from rea_plugins.javascript.results import GraphEdge
from rea_plugins.javascript.results import Seed
from rea_plugins.javascript.results import SeedMatch
from rea_plugins.javascript.results import SemanticsTarget
from rea_plugins.javascript.results import SemanticsTrace
from rea_plugins.javascript.results import TracedCall
from rea_plugins.javascript.results import TracedFunction
from rea_plugins.javascript.results import TraceLimits
from rea_plugins.javascript.results import TraceNode

CHECK_EVERY = 256
Role = Literal["seed", "caller", "exported"]
Direction = Literal["both", "imports", "importers"]
DIRECTIONS: tuple[Direction, ...] = ("both", "imports", "importers")


def _matches(value: str, wanted: str, mode: str) -> bool:
    return value == wanted if mode == "exact" else wanted in value


def _symbol_matches(name: str, wanted: str, mode: str) -> bool:
    if mode == "exact":
        return name == wanted or name.endswith("." + wanted)
    return wanted in name


def _names(fn: FunctionRecord) -> tuple[str, ...]:
    """A function's name, and its original name when a source map gave one (a minified bundle's `n.handleClick` is
    also `Panel.handleClick`)."""
    original = fn.original.name if fn.original is not None else None
    return (fn.name, original) if original and original != fn.name else (fn.name,)


# Seed matches listed: per module for strings, and in all (``matches_total`` counts every one).
MAX_STRING_MATCHES_PER_MODULE = 20
MAX_MATCHES = 100


def _seed_matches(index: Index, seed: Seed) -> tuple[list[SeedMatch], set[str], set[str], int]:
    """Seed hits, the modules they sit in, the functions they name, and how many matched (beyond those listed)."""
    kind, value, mode = seed.kind, seed.value, seed.match
    hits: list[SeedMatch] = []
    unlisted = 0
    modules: set[str] = set()
    functions: set[str] = set()
    for m in index.app.modules:
        if kind == "module":
            if m.node_id == value or _matches(m.path, value, mode):
                hits.append(SeedMatch(node_id=m.node_id, type="module", path=m.path, via="path", value=m.path))
                modules.add(m.node_id)
        elif kind == "string":
            found = [s for s in m.strings.items if _matches(s.value, value, mode)]
            for s in found[:MAX_STRING_MATCHES_PER_MODULE]:
                hits.append(
                    SeedMatch(node_id=m.node_id, type="module", path=m.path, via="string", value=s.value, line=s.line)
                )
                holder = innermost(m, s.line, s.column)
                if holder is not None:
                    functions.add(holder.node_id)
            if found:
                modules.add(m.node_id)
                unlisted += max(0, len(found) - MAX_STRING_MATCHES_PER_MODULE)
        else:
            for fn in m.functions:
                if fn.kind != "module-body" and any(_symbol_matches(n, value, mode) for n in _names(fn)):
                    hits.append(
                        SeedMatch(
                            node_id=fn.node_id,
                            type="function",
                            path=m.path,
                            via="function",
                            value=fn.name,
                            line=fn.line,
                        )
                    )
                    modules.add(m.node_id)
                    functions.add(fn.node_id)
            for ex in m.exports:
                if _symbol_matches(ex.name, value, mode):
                    hits.append(
                        SeedMatch(
                            node_id=m.node_id, type="module", path=m.path, via="export", value=ex.name, line=ex.line
                        )
                    )
                    modules.add(m.node_id)
    return hits, modules, functions, len(hits) + unlisted


def innermost(m: Module, line: int, column: int = 0) -> FunctionRecord | None:
    """The innermost function of ``m`` that holds ``line`` (and ``column``, when known: a minified bundle is one
    line), module bodies excluded."""
    best: FunctionRecord | None = None
    best_start = (0, 0)
    for fn in m.functions:
        if fn.kind == "module-body" or not fn.line <= line <= fn.end_line:
            continue
        start = (fn.line, int(fn.node_id.rpartition(":")[2]))
        if column and fn.end_column:
            if not start <= (line, column) <= (fn.end_line, fn.end_column):
                continue
            # Of the functions holding the position, the innermost starts last.
            if best is None or start > best_start:
                best, best_start = fn, start
        elif best is None or fn.end_line - fn.line < best.end_line - best.line:
            best, best_start = fn, start
    return best


def _module_node(m: Module, depth: int) -> TraceNode:
    return TraceNode(node_id=m.node_id, type="module", path=m.path, kind=m.kind, depth=depth, container=m.container)


def _function_node(m: Module, fn: FunctionRecord, depth: int, role: Role) -> TraceNode:
    return TraceNode(
        node_id=fn.node_id,
        type="function",
        path=m.path,
        name=fn.name,
        line=fn.line,
        module=m.node_id,
        depth=depth,
        role=role,
        original=fn.original,
    )


def trace_feature(call: ToolCall) -> Evidence:
    loaded = appgraph.load(call, "application")
    index = loaded.index
    seed = msgspec.convert({"match": "exact", **(arg_object(call.args, "seed") or {})}, Seed)
    max_nodes, max_depth = arg_int(call.args, "max_nodes", 200), arg_int(call.args, "max_depth", 4)
    direction = arg_choice(call.args, "direction", DIRECTIONS, "both")
    hits, seed_modules, seed_functions, matches_total = _seed_matches(index, seed)
    depth_of: dict[str, int] = {}
    queue: deque[str] = deque()
    truncated = False
    for node_id in sorted(seed_modules):
        if len(depth_of) >= max_nodes:
            truncated = True
            break
        depth_of[node_id] = 0
        queue.append(node_id)
    edges: set[tuple[str, str, str, str]] = set()
    steps = 0
    while queue:
        steps += 1
        if steps % CHECK_EVERY == 0:
            call.ctx.check("tracing")
        current = queue.popleft()
        depth = depth_of[current]
        if depth >= max_depth:
            continue
        for edge in sorted(index.neighbours(current, direction)):
            other = edge[1] if edge[0] == current else edge[0]
            if other not in depth_of:
                if len(depth_of) >= max_nodes:
                    truncated = True
                    continue
                depth_of[other] = depth + 1
                queue.append(other)
            edges.add(edge)
    nodes = [_module_node(index.modules[n], d) for n, d in depth_of.items()]
    names = {index.functions[f][1].name.rsplit(".", 1)[-1] for f in seed_functions}
    fn_edges: set[tuple[str, str, str, str]] = set()
    for node_id in sorted(depth_of):
        m = index.modules[node_id]
        for fn in m.functions:
            role: Role | None = None
            if fn.node_id in seed_functions:
                role = "seed"
            elif names and any(c.callee.rsplit(".", 1)[-1] in names for c in fn.calls) and fn.kind != "module-body":
                role = "caller"
                for c in fn.calls:
                    for target in seed_functions:
                        if c.callee.rsplit(".", 1)[-1] == index.functions[target][1].name.rsplit(".", 1)[-1]:
                            fn_edges.add((fn.node_id, target, "calls", c.callee))
            elif node_id in seed_modules and seed.kind != "symbol" and _exported(m, fn):
                role = "exported"
            if role is None:
                continue
            if len(nodes) >= max_nodes:
                truncated = True
                break
            nodes.append(_function_node(m, fn, depth_of[node_id], role))
            fn_edges.add((m.node_id, fn.node_id, "defines", fn.name))
    kept = {n.node_id for n in nodes}
    all_edges = [e for e in sorted(edges | fn_edges) if e[0] in kept and e[1] in kept]
    result = FeatureTrace(
        seed=seed,
        matches=hits[:MAX_MATCHES],
        matches_total=matches_total,
        nodes=sorted(nodes, key=lambda n: (n.depth, n.type, n.path, n.node_id)),
        edges=[GraphEdge(source=a, target=b, kind=k, label=s) for a, b, k, s in all_edges],
        truncated=truncated,
        limits=TraceLimits(max_nodes=max_nodes, max_depth=max_depth, direction=direction),
        application_coverage=loaded.app.coverage.status,
    )
    result, asked = appgraph.drawn(call, result, _drawing)
    params: JSONObject = {
        "application": appgraph.reference(loaded),
        "seed": msgspec.to_builtins(seed),
        "max_nodes": max_nodes,
        "max_depth": max_depth,
        "direction": direction,
        **asked,
    }
    limits = ["The trace is truncated at max_nodes."] if truncated else []
    return appgraph.derive("trace_application_feature", params, msgspec.to_builtins(result), [loaded], limits)


def _drawing(trace: FeatureTrace) -> render.Graph:
    """Modules by path and functions by name, nearest the seed first (the result's order); edges by kind."""
    nodes = [
        render.Node(
            id=n.node_id,
            label=n.name if n.type == "function" and n.name else n.path.rsplit("/", 1)[-1] or n.path,
            emphasis=n.depth == 0,
        )
        for n in trace.nodes
    ]
    edges = [render.Edge(source=e.source, target=e.target, label=e.kind) for e in trace.edges]
    return render.Graph(nodes=nodes, edges=edges, title="application feature")


def _exported(m: Module, fn: FunctionRecord) -> bool:
    names = {e.name for e in m.exports} | {e.local for e in m.exports if e.local}
    return fn.name in names or fn.name.rsplit(".", 1)[-1] in names


# -- semantics ------------------------------------------------------------------------------


def _targets(loaded: Loaded, target: SemanticsTarget) -> tuple[list[tuple[Module, FunctionRecord]], str]:
    index = loaded.index
    kind, value = target.kind, target.value
    if kind == "module":
        found = index.module(value)
        if not found:
            raise appgraph.not_found("target/value", f"no module matches {value!r}")
        if len(found) > 1:
            raise appgraph.not_found(
                "target/value",
                f"{value!r} names {len(found)} modules; pass a node_id",
                sorted(m.node_id for m in found),
            )
        return [(found[0], fn) for fn in found[0].functions], found[0].node_id
    if value in index.functions:
        return [index.functions[value]], value
    scope = index.module(target.module) if target.module else loaded.app.modules
    hits = [
        (m, fn)
        for m in scope
        for fn in m.functions
        if fn.kind != "module-body" and any(n == value or n.endswith("." + value) for n in _names(fn))
    ]
    if not hits:
        raise appgraph.not_found(
            "target/value",
            f"no function named {value!r}" + (f" in {target.module!r}" if target.module else ""),
        )
    if len(hits) > 1:
        raise appgraph.not_found(
            "target/value",
            f"{value!r} names {len(hits)} functions; pass a node_id or module",
            sorted(fn.node_id for _, fn in hits),
        )
    return hits, hits[0][1].node_id


def _resolve_call(index: Index, m: Module, callee: str) -> tuple[tuple[Module, FunctionRecord] | None, str | None]:
    """The function a call names, through local declarations, imports and bundle references."""
    # `new X(...)` calls the constructor X names.
    head, _, member = callee.removeprefix("new ").partition(".")
    if not member:
        local = index.function_named(m, head)
        if local is not None:
            return (m, local), "local"
    for edge in m.imports:
        if edge.resolved is None or edge.resolved not in index.modules:
            continue
        target = index.modules[edge.resolved]
        wanted: str | None = None
        if edge.kind in ("bundle-reference",) and edge.specifier == head and not member:
            wanted = head
        for binding in edge.names:
            imported, local_name = appgraph.local_name(binding)
            if local_name == head:
                # A whole module called or constructed (`const M = require(...); new M()`) is its default export.
                wanted = (
                    member
                    if imported == "*" and member
                    else ("default" if imported == "*" else imported if not member else None)
                )
        if wanted is None:
            continue
        if wanted == "default":
            for ex in target.exports:
                if ex.name in ("default", "module.exports"):
                    name = ex.shape.get("name") if ex.shape.get("type") == "reference" else None
                    named = ex.local or (name if isinstance(name, str) else None)
                    wanted = named or (head if ex.name == "module.exports" else wanted)
        for ex in target.exports:
            if ex.name == wanted and ex.local:
                wanted = ex.local
        found = index.function_named(target, wanted)
        if found is not None:
            return (target, found), edge.kind
    return None, None


def _handler(m: Module, reference: str) -> FunctionRecord | None:
    """The function of ``m`` a handler reference names (``panel.onClick``: the one function named ``*.onClick`` or
    ``onClick``), when exactly one does."""
    tail = reference.rsplit(".", 1)[-1]
    hits = [
        f
        for f in m.functions
        if f.kind != "module-body" and (f.name == tail or f.name.endswith("." + tail) or f.name == reference)
    ]
    return hits[0] if len(hits) == 1 else None


def trace_semantics(call: ToolCall) -> Evidence:
    loaded = appgraph.load(call, "application")
    index = loaded.index
    # The caller's target as sent (its parameters echo it); read as the Struct its schema describes.
    target = arg_object(call.args, "target") or {}
    wanted = msgspec.convert(target, SemanticsTarget)
    max_nodes, max_depth = arg_int(call.args, "max_nodes", 200), arg_int(call.args, "max_depth", 4)
    roots, root_id = _targets(loaded, wanted)
    seen: dict[str, int] = {}
    queue: deque[tuple[Module, FunctionRecord, int]] = deque()
    truncated = False
    for m, fn in roots:
        if len(seen) >= max_nodes:
            truncated = True
            break
        seen[fn.node_id] = 0
        queue.append((m, fn, 0))
    functions: list[TracedFunction] = []
    edges: set[tuple[str, str, str, str]] = set()
    unresolved = 0
    while queue:
        if len(functions) % CHECK_EVERY == 0:
            call.ctx.check("tracing semantics")
        m, fn, depth = queue.popleft()
        calls = []
        for site in fn.calls:
            found, via = _resolve_call(index, m, site.callee)
            resolved = found[1].node_id if found else None
            handler = _handler(m, site.handler) if site.handler is not None else None
            calls.append(
                TracedCall(
                    callee=site.callee,
                    line=site.line,
                    resolved=resolved,
                    via=via,
                    argument=site.argument,
                    handler=site.handler,
                    handler_resolved=handler.node_id if handler is not None else None,
                )
            )
            if handler is not None:
                # A registered handler is followed as a call is: it runs when what it handles happens.
                edges.add((fn.node_id, handler.node_id, "handles", site.argument or ""))
                if handler.node_id not in seen and depth < max_depth and len(seen) < max_nodes:
                    seen[handler.node_id] = depth + 1
                    queue.append((m, handler, depth + 1))
            if found is None:
                unresolved += 1
                continue
            edges.add((fn.node_id, found[1].node_id, "calls", site.callee))
            if found[1].node_id not in seen and depth < max_depth:
                if len(seen) >= max_nodes:
                    truncated = True
                    continue
                seen[found[1].node_id] = depth + 1
                queue.append((found[0], found[1], depth + 1))
        for closure in fn.closures:
            edges.add((fn.node_id, closure, "closure", ""))
        if fn.parent is not None and fn.parent in index.functions and fn.captures:
            edges.add((fn.parent, fn.node_id, "closure", ",".join(fn.captures)))
        functions.append(
            TracedFunction(
                node_id=fn.node_id,
                name=fn.name,
                kind=fn.kind,
                module=m.node_id,
                path=m.path,
                line=fn.line,
                end_line=fn.end_line,
                depth=depth,
                params=fn.params,
                is_async=fn.is_async,
                calls=calls,
                returns=fn.returns,
                assignments=fn.assignments,
                captures=fn.captures,
                closures=fn.closures,
                parent=fn.parent,
                truncated=fn.truncated,
                original=fn.original,
            )
        )
    result = SemanticsTrace(
        target=wanted,
        root=root_id,
        functions=sorted(functions, key=lambda f: (f.depth, f.path, f.line, f.node_id)),
        edges=[GraphEdge(source=a, target=b, kind=k, label=s) for a, b, k, s in sorted(edges)],
        unresolved_calls=unresolved,
        truncated=truncated,
        limits=TraceLimits(max_nodes=max_nodes, max_depth=max_depth),
        application_coverage=loaded.app.coverage.status,
    )
    params: JSONObject = {
        "application": appgraph.reference(loaded),
        "target": target,
        "max_nodes": max_nodes,
        "max_depth": max_depth,
    }
    limits = [
        "Calls through values tree-sitter cannot resolve statically (callbacks, dynamic members) stay unresolved."
    ]
    if truncated:
        limits.append("The trace is truncated at max_nodes.")
    return appgraph.derive("trace_javascript_semantics", params, msgspec.to_builtins(result), [loaded], limits)
