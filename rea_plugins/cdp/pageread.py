"""Reading a page's scripts: its event listeners (``DOMDebugger.getEventListeners``), its ES module graph (the
scripts it parsed and their static import specifiers) and a generated location's original.

All passive: DOM nodes are resolved to handles for the listener query (``DOM.resolveNode``, released after), no page
JavaScript is evaluated, and nothing on the page changes.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.pagemodel import EventListener
from rea_plugins.cdp.pagemodel import GeneratedLocation
from rea_plugins.cdp.pagemodel import ImportCounts
from rea_plugins.cdp.pagemodel import ImportKind
from rea_plugins.cdp.pagemodel import ImportTarget
from rea_plugins.cdp.pagemodel import ListenerInventory
from rea_plugins.cdp.pagemodel import ListenerNode
from rea_plugins.cdp.pagemodel import ModuleGraph
from rea_plugins.cdp.pagemodel import ModuleImport
from rea_plugins.cdp.pagemodel import SourceTrace
from rea_plugins.cdp.pagemodel import WebModule
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.pagescripts import PageScript
from rea_plugins.cdp.pagescripts import PageSession
from rea_plugins.cdp.pagescripts import in_scope
from rea_plugins.cdp.pagescripts import original
from rea_plugins.cdp.pagescripts import read_source
from rea_plugins.cdp.pagescripts import unavailable

SCHEMA_VERSION = 1
OBJECT_GROUP = "rea-listeners"
MAX_NODES_PER_SELECTOR = 1000
MAX_PARSED_BYTES = 8 << 20


# -- listeners ------------------------------------------------------------------------------------------------------


def describe_node(page: PageSession, backend: int, ctx: CallContext, cache: dict[int, ListenerNode]) -> ListenerNode:
    if backend not in cache:
        try:
            node = cdp.obj(
                page.conn.call("DOM.describeNode", {"backendNodeId": backend}, session=page.session, ctx=ctx).get(
                    "node"
                )
            )
        except cdp.CommandFailed:
            node = {}
        attrs = cdp.arr(node.get("attributes"))
        pairs = dict(zip(attrs[::2], attrs[1::2], strict=False))
        ident = pairs.get("id")
        cache[backend] = ListenerNode(
            backend_node_id=backend,
            node_name=str(node.get("nodeName", "")),
            id=ident if isinstance(ident, str) else None,
            classes=str(pairs.get("class", "")).split(),
        )
    return cache[backend]


def listeners_of(page: PageSession, node_id: int, depth: int, ctx: CallContext) -> list[tuple[JSONObject, int]]:
    # Each listener as DOMDebugger.getEventListeners sends it (the browser's JSON), with its node's backend id.
    handle = page.conn.call(
        "DOM.resolveNode", {"nodeId": node_id, "objectGroup": OBJECT_GROUP}, session=page.session, ctx=ctx
    )
    object_id = cdp.obj(handle.get("object")).get("objectId")
    if not isinstance(object_id, str):
        return []
    found = page.conn.call(
        "DOMDebugger.getEventListeners",
        {"objectId": object_id, "depth": depth, "pierce": True},
        session=page.session,
        ctx=ctx,
    )
    own = page.conn.call("DOM.describeNode", {"nodeId": node_id}, session=page.session, ctx=ctx)
    own_backend = cdp.obj(own.get("node")).get("backendNodeId")
    out = []
    for raw in cdp.arr(found.get("listeners")):
        listener = cdp.obj(raw)
        backend = listener.get("backendNodeId", own_backend)
        out.append((listener, backend if isinstance(backend, int) else -1))
    return out


def event_listeners(
    page: PageSession,
    selectors: list[str],
    map_sources: bool,
    offset: int,
    limit: int,
    ctx: CallContext,
) -> ListenerInventory:
    conn, session = page.conn, page.session
    root = cdp.obj(conn.call("DOM.getDocument", {"depth": 0}, session=session, ctx=ctx).get("root"))
    root_id = root.get("nodeId")
    if not isinstance(root_id, int):
        raise unavailable("the page has no document", "no_document")
    raw: list[tuple[JSONObject, int]] = []
    matched = 0
    limitations: list[str] = []
    try:
        if not selectors:
            raw = listeners_of(page, root_id, -1, ctx)
        for i, selector in enumerate(selectors):
            try:
                ids = conn.call(
                    "DOM.querySelectorAll", {"nodeId": root_id, "selector": selector}, session=session, ctx=ctx
                ).get("nodeIds")
            except cdp.CommandFailed:
                raise invalid_request(
                    f"selectors/{i} is not a CSS selector the page accepts",
                    [issue(f"selectors/{i}", "invalid_value", "expected a CSS selector")],
                ) from None
            node_ids = [n for n in cdp.arr(ids) if isinstance(n, int)]
            if len(node_ids) > MAX_NODES_PER_SELECTOR:
                limitations.append(
                    f"selectors/{i} matched {len(node_ids)} nodes; the first {MAX_NODES_PER_SELECTOR} read."
                )
            for node_id in node_ids[:MAX_NODES_PER_SELECTOR]:
                matched += 1
                raw.extend(listeners_of(page, node_id, 0, ctx))
                ctx.check("reading listeners")
    finally:
        conn.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP}, session)
    scripts = {s.script_id: s for s in in_scope(page)[0]}
    seen: set[tuple[Any, ...]] = set()
    kept: list[tuple[JSONObject, int, PageScript]] = []
    outside = 0
    for listener, backend in raw:
        key = (
            backend,
            listener.get("type"),
            listener.get("scriptId"),
            listener.get("lineNumber"),
            listener.get("columnNumber"),
            listener.get("useCapture"),
        )
        if key in seen:  # the same listener reached through two selectors
            continue
        seen.add(key)
        script = scripts.get(str(listener.get("scriptId", "")))
        if script is None:
            outside += 1
            continue
        kept.append((listener, backend, script))
    kept.sort(
        key=lambda k: (
            str(k[0].get("type")),
            k[2].url,
            cdp.as_int(k[0].get("lineNumber", 0)),
            cdp.as_int(k[0].get("columnNumber", 0)),
        )
    )
    by_type: dict[str, int] = {}
    for listener, _, _ in kept:
        by_type[str(listener.get("type", ""))] = by_type.get(str(listener.get("type", "")), 0) + 1
    nodes: dict[int, ListenerNode] = {}
    listed: list[EventListener] = []
    for listener, backend, script in kept[offset : offset + limit]:
        line = cdp.as_int(listener.get("lineNumber", 0)) + 1
        column = cdp.as_int(listener.get("columnNumber", 0)) + 1
        mapped = original(page, script, line, column, ctx)[0] if map_sources and script.source_map_url else None
        listed.append(
            EventListener(
                type=str(listener.get("type", "")),
                use_capture=listener.get("useCapture") is True,
                passive=listener.get("passive") is True,
                once=listener.get("once") is True,
                node=describe_node(page, backend, ctx, nodes) if backend >= 0 else None,
                script_url=script.url,
                script_id=script.script_id,
                line=line,
                column=column,
                original=mapped,
            )
        )
    if outside:
        limitations.append(
            f"{outside} listeners with handlers outside allowed_origins (or in no named script) are counted only."
        )
    limitations.append(
        "Listeners on window are not read (only the document tree: a passive reader has no window handle)."
    )
    return ListenerInventory(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        allowed_origins=page.scope,
        selectors=selectors,
        nodes_matched=matched if selectors else 1,
        page=page_of(len(kept), offset, limit),
        by_type=dict(sorted(by_type.items())),
        excluded_outside_origins=outside,
        listeners=listed,
        limitations=limitations,
    )


# -- module imports -------------------------------------------------------------------------------------------------


def specifiers(source: str) -> list[tuple[ImportKind, str, int]]:
    """Static import specifiers (string literals) of a script: imports, re-exports and literal dynamic imports."""
    import tree_sitter_javascript
    from tree_sitter import Language
    from tree_sitter import Parser

    parser = Parser(Language(tree_sitter_javascript.language()))
    tree = parser.parse(source.encode("utf-8", "surrogatepass"))
    out: list[tuple[ImportKind, str, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        kind: ImportKind | None = None
        literal = None
        if node.type == "import_statement":
            kind, literal = "import", node.child_by_field_name("source")
        elif node.type == "export_statement" and node.child_by_field_name("source") is not None:
            kind, literal = "re-export", node.child_by_field_name("source")
        elif node.type == "call_expression":
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            if function is not None and function.type == "import" and arguments is not None:
                strings = [c for c in arguments.named_children if c.type == "string"]
                if len(arguments.named_children) >= 1 and strings and arguments.named_children[0] == strings[0]:
                    kind, literal = "dynamic-import", strings[0]
        if kind is not None and literal is not None and literal.type == "string":
            text = b"".join(c.text or b"" for c in literal.named_children if c.type == "string_fragment")
            out.append((kind, text.decode("utf-8", "replace"), node.start_point[0] + 1))
        stack.extend(reversed(node.children))
    return out


def _resolve(base: str, specifier: str, loaded: set[str], page: PageSession) -> tuple[str | None, ImportTarget]:
    if not specifier.startswith(("./", "../", "/")) and "://" not in specifier:
        return None, "bare"  # resolved by an import map or a bundler, not by URL
    url = urllib.parse.urljoin(base, specifier)
    if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
        return url, "unsupported"
    if not page.contains(url):
        return url, "outside-origins"
    return url, "loaded" if url in loaded else "not-loaded"


def module_graph(page: PageSession, offset: int, limit: int, ctx: CallContext) -> ModuleGraph:
    scripts, _, _ = in_scope(page)
    loaded = {s.url for s in scripts}
    nodes: list[tuple[PageScript, list[ModuleImport]]] = []
    limitations: list[str] = []
    unread = 0
    read_bytes = 0
    for i, script in enumerate(scripts):
        ctx.progress("reading scripts", done=i, total=len(scripts))
        source = read_source(page, script, ctx) if read_bytes < MAX_PARSED_BYTES else None
        if source is None:
            unread += 1
            continue
        read_bytes += len(source)
        found = specifiers(source)
        if not script.is_module and not found:
            continue
        imports = []
        for kind, spec, line in found:
            resolved, target = _resolve(script.url, spec, loaded, page)
            imports.append(ModuleImport(kind=kind, specifier=spec, line=line, resolved_url=resolved, target=target))
        nodes.append((script, imports))
    importers: dict[str, set[str]] = {}
    for script, imports in nodes:
        for imp in imports:
            if imp.resolved_url is not None:
                importers.setdefault(imp.resolved_url, set()).add(script.url)
    edges = [imp for _, imports in nodes for imp in imports]
    counts = ImportCounts(
        modules=sum(1 for s, _ in nodes if s.is_module),
        classic_scripts_with_imports=sum(1 for s, _ in nodes if not s.is_module),
        edges=len(edges),
        loaded=sum(1 for e in edges if e.target == "loaded"),
        not_loaded=sum(1 for e in edges if e.target == "not-loaded"),
        bare=sum(1 for e in edges if e.target == "bare"),
        outside_origins=sum(1 for e in edges if e.target == "outside-origins"),
    )
    if unread:
        limitations.append(
            f"{unread} scripts were not read (no longer held by the browser, or past {MAX_PARSED_BYTES} bytes)."
        )
    if counts.not_loaded:
        limitations.append(
            "A not-loaded import is one the page had not parsed while observed (a lazy import not yet run)."
        )
    modules = [
        WebModule(
            url=s.url,
            script_id=s.script_id,
            is_module=s.is_module,
            sha256=s.sha256,
            imports=imports,
            imported_by=sorted(importers.get(s.url, ())),
        )
        for s, imports in nodes[offset : offset + limit]
    ]
    return ModuleGraph(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        allowed_origins=page.scope,
        counts=counts,
        page=page_of(len(nodes), offset, limit),
        modules=modules,
        limitations=limitations,
    )


# -- source location ------------------------------------------------------------------------------------------------


def trace_location(
    page: PageSession, script_url: str | None, script_id: str | None, line: int, column: int, ctx: CallContext
) -> SourceTrace:
    scripts, _, _ = in_scope(page)
    if script_id is not None:
        chosen = [s for s in scripts if s.script_id == script_id]
    else:
        chosen = [s for s in scripts if s.url == script_url and not s.inline] or [
            s for s in scripts if s.url == script_url
        ]
    if not chosen:
        raise unavailable(
            f"the page holds no script {script_id or script_url!r} on an allowed origin", "script_not_found"
        )
    script = chosen[0]
    read_source(page, script, ctx)
    mapped, why = original(page, script, line, column, ctx)
    return SourceTrace(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        generated=GeneratedLocation(
            script_url=script.url, script_id=script.script_id, line=line, column=column, sha256=script.sha256
        ),
        status="mapped" if mapped is not None else "unmapped",
        original=mapped,
        reason=why,
    )
