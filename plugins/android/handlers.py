"""The Android tools' handlers: load the application, compute one result, wrap it into Evidence."""

from __future__ import annotations

from rea_plugins.android import appgraph, code, common, loader
from rea_plugins.android import package as pkg
from rea_plugins.android.model import SourceText

from rea import search as rea_search
from rea.catalog.tool import ToolCall
from rea.evidence import Evidence

AAB_MANIFEST = (
    "An AAB's manifest is a protocol buffer, which androguard does not read: manifest facts (package, "
    "components, permissions, signing) are absent."
)
DEX_ONLY = "A bare DEX has no manifest, resources, signature or native libraries."


def _kind_limits(loaded: loader.Loaded) -> list[str]:
    return [AAB_MANIFEST] if loaded.kind == "aab" else [DEX_ONLY] if loaded.kind == "dex" else []


def inspect_package(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args = call.args
    with loader.LOCK:
        result = pkg.inspect(loaded, args.get("offset", 0), args.get("limit", 200))
    call.ctx.finish(f"inspected {len(loaded.dexes)} DEX file(s)")
    return common.evidence(call, loaded, result, _kind_limits(loaded))


def search_classes(call: ToolCall) -> Evidence:
    match = rea_search.matcher(call.args)
    loaded = common.load(call)
    args = call.args
    with loader.LOCK:
        result = code.search(
            loaded, match, args.get("scope", "names"), args.get("offset", 0), args.get("limit", 100), call.ctx
        )
    return common.evidence(call, loaded, result, [])


def inspect_class(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args = call.args
    with loader.LOCK:
        result = code.inspect_class(loaded, args["class_name"], args.get("offset", 0), args.get("limit", 200))
    return common.evidence(call, loaded, result, [])


def inspect_method(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args = call.args
    with loader.LOCK:
        result = code.inspect_method(
            loaded,
            args["class_name"],
            args["method"],
            args.get("descriptor"),
            args.get("offset", 0),
            args.get("limit", 500),
            args.get("source_offset", 0),
            args.get("max_source_chars", 20000),
        )
    source: SourceText = result.source
    limits = (
        [code.DECOMPILED]
        if source.status == "decompiled"
        else [f"No decompiled source: {source.reason}; the bytecode listing stands alone."]
    )
    return common.evidence(call, loaded, result, limits)


def trace_references(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    with loader.LOCK:
        result = code.trace(loaded, call.args, call.ctx)
    limits = ["References are static: calls through reflection, JNI or dynamic dispatch to overrides are not seen."]
    if result.truncated:
        limits.append(f"The trace stopped at {code.MAX_REFERENCES} references; lower max_depth.")
    return common.evidence(call, loaded, result, limits)


def project_graph(call: ToolCall) -> Evidence:
    loaded = common.load(call)
    args = call.args
    with loader.LOCK:
        result = appgraph.project(loaded, args.get("offset", 0), args.get("limit", 500))
    return common.evidence(call, loaded, result, _kind_limits(loaded))
