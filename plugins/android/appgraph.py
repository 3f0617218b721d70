"""project_android_application_graph: the application as entry points, modules and edges.

Identity follows the JavaScript application graph: a file is ``mod:<path>``, a module inside a container is
``mod:<container path>!<name>`` (here a DEX class, ``mod:classes.dex!com.a.B``).
"""

from __future__ import annotations

import json
from typing import Any

from rea_plugins.android import loader
from rea_plugins.android.common import java_name
from rea_plugins.android.model import (
    SCHEMA_VERSION,
    ApplicationGraph,
    GraphEdge,
    GraphEntryPoint,
    GraphModule,
    page,
)
from rea_plugins.android.package import components, native_libraries

from rea.errors import invalid_request, issue

MANIFEST = "AndroidManifest.xml"
LOAD_LIBRARY = ("Ljava/lang/System;", "loadLibrary")


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


def project(loaded: loader.Loaded, offset: int, limit: int) -> ApplicationGraph:
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
    total = max(len(modules), len(edges))
    if offset > total:
        raise invalid_request(
            f"offset {offset} is past the end ({total})",
            [issue("offset", "out_of_range", f"at most {total}", total=total)],
        )
    counts = {
        "modules": len(modules),
        "classes": len(classes),
        "edges": len(edges),
        "entry_points": len(entry_points),
        "native_libraries": len(libs),
    }
    return ApplicationGraph(
        schema_version=SCHEMA_VERSION,
        input_kind=loaded.kind,  # type: ignore[arg-type]
        package=(loaded.apk.get_package() or None) if loaded.kind == "apk" else None,
        entry_points=entry_points,
        modules=modules[offset : offset + limit],
        edges=edges[offset : offset + limit],
        pages={"modules": page(len(modules), offset, limit), "edges": page(len(edges), offset, limit)},
        counts=counts,
    )
