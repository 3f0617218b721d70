"""project_android_application_graph: the application as entry points, modules and edges.

Identity follows the JavaScript application graph: a file is ``mod:<path>``, a module inside a container is
``mod:<container path>!<name>`` (here a DEX class, ``mod:classes.dex!com.a.B``).
"""

from __future__ import annotations

import json
from typing import Any

from rea.plugin import Arguments
from rea.plugin import Paged
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.android import loader
from rea_plugins.android.common import java_name
from rea_plugins.android.model import SCHEMA_VERSION
from rea_plugins.android.model import ApplicationGraph
from rea_plugins.android.model import GraphEdge
from rea_plugins.android.model import GraphEntryPoint
from rea_plugins.android.model import GraphModule
from rea_plugins.android.model import PackageCount
from rea_plugins.android.model import page
from rea_plugins.android.package import components
from rea_plugins.android.package import native_libraries

MANIFEST = "AndroidManifest.xml"
LOAD_LIBRARY = ("Ljava/lang/System;", "loadLibrary")
# Java packages named in a result, largest first.
TOP_PACKAGES = 25
# Entry points in a summary; detail full pages through the rest.
SUMMARY_ENTRY_POINTS = 50


def file_node(path: str) -> str:
    return f"mod:{path}"


def class_node(dex: str, descriptor: str) -> str:
    return f"mod:{dex}!{java_name(descriptor)}"


def _handoff(loaded: loader.Loaded, path: str) -> str:
    args = json.dumps({"path": loaded.target.path, "paths": [path]})
    return f"extract_artifact {args}, then open_binary on the extracted file"


def _class_edges(loaded: loader.Loaded, libs: dict[str, str]) -> list[GraphEdge]:
    """Calls between application classes (one edge per class pair) and System.loadLibrary of packaged libraries."""
    classes = loaded.classes()
    calls: set[tuple[str, str]] = set()
    loads: set[tuple[str, str, str]] = set()
    for desc, (dex, _cls) in classes.items():
        ca = loaded.analysis.get_class_analysis(desc)
        if ca is None:
            continue
        for mx in ca.get_methods():
            if mx.is_external():
                continue
            callees = {(c.class_name, c.name) for _k, c, _o in mx.get_xref_to()}
            for callee_class, _name in callees:
                if callee_class != desc and callee_class in classes:
                    calls.add((class_node(dex, desc), class_node(classes[callee_class][0], callee_class)))
            if LOAD_LIBRARY in callees:
                for value in _strings(mx):
                    lib = libs.get(f"lib{value}.so")
                    if lib is not None:
                        loads.add((class_node(dex, desc), lib, value))
    edges = [GraphEdge(source=s, target=t, kind="calls") for s, t in sorted(calls)]
    edges += [GraphEdge(source=s, target=t, kind="loads-library", detail=v) for s, t, v in sorted(loads)]
    return edges


def _strings(mx: Any) -> list[str]:
    method = mx.get_method()
    if method is None or not hasattr(method, "get_code") or method.get_code() is None:
        return []
    return [str(ins.get_string()) for ins in method.get_instructions() if ins.get_name().startswith("const-string")]


def project(loaded: loader.Loaded, view: View) -> ApplicationGraph:
    modules: list[GraphModule] = []
    edges: list[GraphEdge] = []
    entry_points: list[GraphEntryPoint] = []
    classes = loaded.classes()
    if loaded.kind == "apk":
        modules.append(
            GraphModule(node_id=file_node(MANIFEST), kind="manifest", path=MANIFEST, bytes=loaded.entries.get(MANIFEST))
        )
    for name, _dex in loaded.dexes:
        size = loaded.entries.get(name, loaded.target.size if loaded.kind == "dex" else None)
        modules.append(GraphModule(node_id=file_node(name), kind="dex", path=name, bytes=size))
    for desc, (dex, _cls) in sorted(classes.items(), key=lambda kv: (kv[1][0], kv[0])):
        node = class_node(dex, desc)
        modules.append(GraphModule(node_id=node, kind="class", path=java_name(desc), container=file_node(dex)))
        edges.append(GraphEdge(source=file_node(dex), target=node, kind="contains"))
    libs: dict[str, str] = {}
    for lib in native_libraries(loaded):
        node = file_node(lib.path)
        libs.setdefault(lib.path.rsplit("/", 1)[-1], node)
        modules.append(
            GraphModule(
                node_id=node, kind="native-library", path=lib.path, bytes=lib.bytes, handoff=_handoff(loaded, lib.path)
            )
        )
    if "resources.arsc" in loaded.entries:
        modules.append(
            GraphModule(
                node_id=file_node("resources.arsc"),
                kind="resources",
                path="resources.arsc",
                bytes=loaded.entries["resources.arsc"],
            )
        )
    with loader.guarded("the DEX code"):
        edges += _class_edges(loaded, libs)
    if loaded.kind == "apk":
        with loader.guarded("AndroidManifest.xml (binary XML)", entry=MANIFEST):
            sdk = loaded.apk.get_target_sdk_version()
            comps = components(loaded.apk, int(sdk) if sdk and str(sdk).isdigit() else None)
        for comp in comps:
            target = comp.target_activity if comp.kind == "activity-alias" else comp.name
            tdesc = "L" + (target or "").replace(".", "/") + ";"
            entry = class_node(classes[tdesc][0], tdesc) if tdesc in classes else None
            detail = ", ".join(
                filter(
                    None,
                    [
                        "exported" if comp.exported else "not exported",
                        "launcher" if comp.main else "",
                        f"permission {comp.permission}" if comp.permission else "",
                    ],
                )
            )
            entry_points.append(
                GraphEntryPoint(kind=comp.kind, name=comp.name, node_id=entry, declared_by=MANIFEST, detail=detail)
            )
            if entry is not None:
                edges.append(GraphEdge(source=file_node(MANIFEST), target=entry, kind="declares", detail=comp.kind))
    return _view(loaded, classes, modules, edges, entry_points, view)


class View:
    """What the caller asked to see: detail, filters and the page."""

    def __init__(self, args: Arguments) -> None:
        self.detail = arg_str(args, "detail", "summary")
        self.package = arg_str(args, "package") or None
        self.kind = arg_str(args, "kind")
        self.edge_kind = arg_str(args, "edge_kind")
        self.offset = arg_int(args, "offset", 0)
        self.limit = arg_int(args, "limit", 100)


def _in_package(name: str | None, prefix: str) -> bool:
    return name is not None and (name == prefix or name.startswith(prefix.rstrip(".") + "."))


def _view(
    loaded: loader.Loaded,
    classes: dict[str, tuple[str, Any]],
    modules: list[GraphModule],
    edges: list[GraphEdge],
    entry_points: list[GraphEntryPoint],
    view: View,
) -> ApplicationGraph:
    counts = {
        "modules": len(modules),
        "classes": len(classes),
        "edges": len(edges),
        "entry_points": len(entry_points),
        "native_libraries": sum(1 for m in modules if m.kind == "native-library"),
    }
    class_of = {m.node_id: m.path for m in modules if m.kind == "class"}
    if view.package:
        prefix = view.package
        modules = [m for m in modules if m.kind == "class" and _in_package(m.path, prefix)]
        edges = [
            e
            for e in edges
            if _in_package(class_of.get(e.source), prefix) or _in_package(class_of.get(e.target), prefix)
        ]
        entry_points = [e for e in entry_points if _in_package(e.name, prefix)]
    if view.kind:
        modules = [m for m in modules if m.kind == view.kind]
    if view.edge_kind:
        edges = [e for e in edges if e.kind == view.edge_kind]
    per_package: dict[str, int] = {}
    for m in modules:
        if m.kind == "class":
            pkg = m.path.rsplit(".", 1)[0] if "." in m.path else ""
            per_package[pkg] = per_package.get(pkg, 0) + 1
    ranked = sorted(per_package.items(), key=lambda kv: (-kv[1], kv[0]))
    full = view.detail == "full"
    offset, limit = view.offset, view.limit if full else min(view.limit, SUMMARY_ENTRY_POINTS)
    longest = max(len(modules), len(edges), len(entry_points)) if full else len(entry_points)
    if offset > longest:
        raise invalid_request(
            f"offset {offset} is past the end ({longest})",
            [issue("offset", "out_of_range", f"at most {longest}", total=longest)],
        )
    pages = {"entry_points": page(len(entry_points), offset, limit)}
    if full:
        pages |= {"modules": page(len(modules), offset, limit), "edges": page(len(edges), offset, limit)}
    else:
        # The summary names no modules or edges; their filtered totals say what detail full would page through.
        pages |= {
            "modules": Paged(offset=0, limit=0, total=len(modules), next_offset=None),
            "edges": Paged(offset=0, limit=0, total=len(edges), next_offset=None),
        }
    return ApplicationGraph(
        schema_version=SCHEMA_VERSION,
        input_kind=loaded.kind,
        detail="full" if full else "summary",
        package=(loaded.apk.get_package() or None) if loaded.kind == "apk" else None,
        counts=counts,
        module_kinds=_tally(m.kind for m in modules),
        edge_kinds=_tally(e.kind for e in edges),
        packages=[PackageCount(package=p, classes=n) for p, n in ranked[:TOP_PACKAGES]],
        packages_total=len(ranked),
        entry_points=entry_points[offset : offset + limit],
        modules=modules[offset : offset + limit] if full else [],
        edges=edges[offset : offset + limit] if full else [],
        pages=pages,
    )


def _tally(kinds: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind in kinds:
        out[kind] = out.get(kind, 0) + 1
    return dict(sorted(out.items()))
