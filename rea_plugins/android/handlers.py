"""The Android tools' handlers: load the application, compute one result, wrap it into Evidence."""

from __future__ import annotations

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import render
from rea.plugin import search as rea_search
from rea_plugins.android import appgraph
from rea_plugins.android import code
from rea_plugins.android import common
from rea_plugins.android import compare
from rea_plugins.android import loader
from rea_plugins.android import package as pkg
from rea_plugins.android import trace
from rea_plugins.android.model import ApplicationGraph
from rea_plugins.android.model import SourceText

AAB_MANIFEST = (
    "An AAB's manifest is a protocol buffer, which androguard does not read: manifest facts (package, "
    "components, permissions, signing) are absent."
)
DEX_ONLY = "A bare DEX has no manifest, resources, signature or native libraries."


def _kind_limits(loaded: loader.Loaded) -> list[str]:
    return [AAB_MANIFEST] if loaded.kind == "aab" else [DEX_ONLY] if loaded.kind == "dex" else []


def _window(args: Arguments, limit: int) -> tuple[int, int]:
    """The call's offset and limit (``limit`` when it gives none)."""
    return arg_int(args, "offset", 0), arg_int(args, "limit", limit)


def inspect_package(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    offset, limit = _window(call.args, 50)
    with loader.LOCK:
        result = pkg.inspect(loaded, offset, limit)
    call.ctx.finish(f"inspected {len(loaded.dexes)} DEX file(s)")
    return common.evidence(call, loaded, result, _kind_limits(loaded))


def search_classes(call: ToolCall) -> Evidence:
    match = rea_search.matcher(call.args)
    loaded = common.load(call)
    offset, limit = _window(call.args, 100)
    with loader.LOCK:
        result = code.search(loaded, match, arg_str(call.args, "scope", "names"), offset, limit, call.ctx)
    return common.evidence(call, loaded, result, [])


def inspect_class(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    offset, limit = _window(call.args, 200)
    with loader.LOCK:
        result = code.inspect_class(loaded, arg_str(call.args, "class_name", ""), offset, limit)
    return common.evidence(call, loaded, result, [])


def inspect_method(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args = call.args
    offset, limit = _window(args, 200)
    with loader.LOCK:
        result = code.inspect_method(
            loaded,
            arg_str(args, "class_name", ""),  # required by the schema, as is method
            arg_str(args, "method", ""),
            arg_str(args, "descriptor"),
            offset,
            limit,
            arg_int(args, "source_offset", 0),
            arg_int(args, "max_source_chars", 20000),
        )
    source: SourceText = result.source
    limits = (
        [code.DECOMPILED]
        if source.status == "decompiled"
        else [f"No decompiled source: {source.reason}; the source is the smali listing."]
        if source.status == "smali"
        else [f"No decompiled source: {source.reason}; the bytecode listing stands alone."]
    )
    return common.evidence(call, loaded, result, limits)


def trace_references(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    with loader.LOCK:
        result = trace.trace(loaded, call.args, call.ctx)
    limits = ["References are static: calls through reflection, JNI or dynamic dispatch to overrides are not seen."]
    if result.truncated:
        limits.append(f"The trace stopped at {trace.MAX_REFERENCES} references; lower max_depth.")
    return common.evidence(call, loaded, result, limits)


def project_graph(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args: Arguments = call.args
    fmt = render.requested(args)
    if fmt is not None and "detail" not in args:
        # A picture draws modules and edges, which only the full detail pages.
        args = {**args, "detail": "full"}
    with loader.LOCK:
        result = appgraph.project(loaded, appgraph.View(args))
    if fmt is not None:
        result = msgspec.structs.replace(result, picture=render.picture(_drawing(result), fmt))
    return common.evidence(call, loaded, result, _kind_limits(loaded))


def _drawing(result: ApplicationGraph) -> render.Graph:
    """This page's modules (the manifest first, then the result's order) and the edges between them."""
    ordered = sorted(result.modules, key=lambda m: m.kind != "manifest")
    nodes = [
        render.Node(id=m.node_id, label=m.path.rsplit("/", 1)[-1] or m.path, emphasis=m.kind == "manifest")
        for m in ordered
    ]
    edges = [render.Edge(source=e.source, target=e.target, label=e.kind) for e in result.edges]
    return render.Graph(nodes=nodes, edges=edges, title="android application", direction="TB")


def compare_packages(call: ToolCall) -> Evidence:
    args = call.args
    left = loader.load(arg_str(args, "left_path", ""), call.ctx)  # both required by the schema
    right = loader.load(arg_str(args, "right_path", ""), call.ctx)
    with loader.LOCK:
        result = compare.compare(left, right, args, call.ctx)
    # The Evidence is about the right (newer) application; the left one enters by its hash, not its path.
    parameters = {k: v for k, v in args.items() if k not in ("left_path", "right_path")}
    parameters["left_sha256"] = left.target.sha256
    limits = [
        common.STATIC,
        f"Compared against {left.target.name} (SHA-256 {left.target.sha256}); the Evidence subject is the right file.",
        "Methods are compared by their resolved instructions; a method moved between classes is a removal and an add.",
        *_kind_limits(left),
        *(x for x in _kind_limits(right) if x not in _kind_limits(left)),
    ]
    return call.session.evidence(
        call.tool.name,
        parameters,
        OperationResult(normalized=msgspec.to_builtins(result), limitations=limits),
        bound=False,
        target=right.target,
        provider=common.provider(),
        analysis_profile=common.profile(),
    )
