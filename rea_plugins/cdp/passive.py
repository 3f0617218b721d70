"""Passive page observation: inspect a page, discover its WebMCP tools, capture its viewport.

Nothing here evaluates page JavaScript, navigates, clicks or changes the page: rea attaches a session,
enables the domains that report what the page already holds (scripts, console messages, frames), listens
for a bounded window, reads the DOM and storage keys, and detaches.

The browser's protocol JSON (event params, command replies, the DOM and frame trees) is typed ``JSONObject``: it is
the browser's, and rea reads it key by key, with type checks, into its records.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError
from rea.plugin import now_iso
from rea.plugin import origin_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp import png
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.model import CaptureWindow
from rea_plugins.cdp.model import Console
from rea_plugins.cdp.model import ConsoleEvent
from rea_plugins.cdp.model import Dom
from rea_plugins.cdp.model import DomNode
from rea_plugins.cdp.model import Form
from rea_plugins.cdp.model import FormField
from rea_plugins.cdp.model import Frame
from rea_plugins.cdp.model import Initiator
from rea_plugins.cdp.model import Inspection
from rea_plugins.cdp.model import Network
from rea_plugins.cdp.model import NetworkRequest
from rea_plugins.cdp.model import PngArtifact
from rea_plugins.cdp.model import RemovedTool
from rea_plugins.cdp.model import Resource
from rea_plugins.cdp.model import SchemaSummary
from rea_plugins.cdp.model import Screenshot
from rea_plugins.cdp.model import Script
from rea_plugins.cdp.model import Scripts
from rea_plugins.cdp.model import SourceLocation
from rea_plugins.cdp.model import Storage
from rea_plugins.cdp.model import TargetRef
from rea_plugins.cdp.model import WebMcpAnnotations
from rea_plugins.cdp.model import WebMcpDiscovery
from rea_plugins.cdp.model import WebMcpTool
from rea_plugins.cdp.model import WebMcpTools
from rea_plugins.cdp.model import completeness
from rea_plugins.cdp.targets import attached
from rea_plugins.cdp.targets import page_target
from rea_plugins.cdp.targets import version

MAX_CONSOLE_TEXT = 2048
MAX_SCRIPT_SOURCES = 500
MAX_SCRIPT_BYTES = 64 * 1024 * 1024


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def console_text(args: list[Any]) -> str:
    """Console arguments as the text a developer would read (values for primitives, descriptions otherwise)."""
    parts = []
    for arg in args:
        if not isinstance(arg, dict):
            continue
        if "value" in arg and arg.get("type") != "object":
            value = arg["value"]
            parts.append(value if isinstance(value, str) else json.dumps(value))
        else:
            parts.append(str(arg.get("description", arg.get("type", ""))))
    return " ".join(parts)


def _text(value: JSONValue) -> str | None:
    """A string of the browser's JSON, or None."""
    return value if isinstance(value, str) else None


def _number(value: JSONValue) -> float | None:
    """A number of the browser's JSON (an int stays an int), or None."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class _Pending:
    """A request seen in the window, completed by its response events as they arrive (the browser's values)."""

    url: str
    method: str
    type: str | None
    # The request's initiator as the browser sent it (its JSON, read by _initiator).
    initiator: JSONObject
    status: int | None = None
    mime_type: str | None = None
    encoded: int | None = None
    failure: str | None = None


class _Observer:
    """Collects one session's events during the observation window (runs on the reader thread)."""

    def __init__(self, max_events: int, include_text: bool) -> None:
        self.session: str | None = None
        self.max_events = max_events
        self.include_text = include_text
        self.lock = threading.Lock()
        self.scripts: list[JSONObject] = []
        self.console: list[ConsoleEvent] = []
        self.console_seen = 0
        self.requests: dict[str, _Pending] = {}
        self.requests_seen = 0

    def __call__(self, method: str, params: JSONObject, session: str | None) -> None:
        if session is None or session != self.session:
            return
        with self.lock:
            if method == "Debugger.scriptParsed":
                self.scripts.append(params)
            elif method in ("Runtime.consoleAPICalled", "Log.entryAdded", "Runtime.exceptionThrown"):
                self._console(method, params)
            elif method.startswith("Network."):
                self._network(method, params)

    def _console(self, method: str, params: JSONObject) -> None:
        self.console_seen += 1
        if len(self.console) >= self.max_events:
            return
        if method == "Runtime.consoleAPICalled":
            args = cdp.arr(params.get("args"))
            top = cdp.obj((cdp.arr(cdp.obj(params.get("stackTrace")).get("callFrames")) or [{}])[0])
            event = ConsoleEvent(
                source="console-api",
                level=str(params.get("type", "log")),
                text=console_text(args)[:MAX_CONSOLE_TEXT] if self.include_text else None,
                argument_types=[str(a.get("type", "")) for a in args if isinstance(a, dict)],
                timestamp=ts if isinstance(ts := params.get("timestamp"), float) else None,
                url=top.get("url") or None,
                line=_int(top.get("lineNumber")),
                column=_int(top.get("columnNumber")),
            )
        elif method == "Log.entryAdded":
            entry = cdp.obj(params.get("entry"))
            event = ConsoleEvent(
                source="log",
                level=str(entry.get("level", "info")),
                text=str(entry.get("text", ""))[:MAX_CONSOLE_TEXT] if self.include_text else None,
                argument_types=[],
                timestamp=entry.get("timestamp") if isinstance(entry.get("timestamp"), float) else None,
                url=entry.get("url") or None,
                line=_int(entry.get("lineNumber")),
                column=None,
            )
        else:
            details = cdp.obj(params.get("exceptionDetails"))
            exc = cdp.obj(details.get("exception"))
            text = str(exc.get("description") or details.get("text", ""))
            event = ConsoleEvent(
                source="exception",
                level="error",
                text=text[:MAX_CONSOLE_TEXT] if self.include_text else None,
                argument_types=[],
                timestamp=ts if isinstance(ts := params.get("timestamp"), float) else None,
                url=details.get("url") or None,
                line=_int(details.get("lineNumber")),
                column=_int(details.get("columnNumber")),
            )
        self.console.append(event)

    def _network(self, method: str, params: JSONObject) -> None:
        rid = params.get("requestId")
        if not isinstance(rid, str):
            return
        if method == "Network.requestWillBeSent":
            self.requests_seen += 1
            request = cdp.obj(params.get("request"))
            if rid in self.requests or len(self.requests) < self.max_events:
                self.requests[rid] = _Pending(
                    url=str(request.get("url", "")),
                    method=str(request.get("method", "")),
                    type=_text(params.get("type")),
                    initiator=cdp.obj(params.get("initiator")),
                )
            return
        entry = self.requests.get(rid)
        if entry is None:
            return
        if method == "Network.responseReceived":
            response = cdp.obj(params.get("response"))
            entry.status = _int(response.get("status"))
            entry.mime_type = _text(response.get("mimeType"))
            entry.type = _text(params.get("type")) or entry.type
        elif method == "Network.loadingFinished":
            entry.encoded = _int(params.get("encodedDataLength"))
        elif method == "Network.loadingFailed":
            entry.failure = str(params.get("errorText") or params.get("blockedReason") or "failed")


def _initiator(raw: JSONObject) -> Initiator:
    url, line, column = raw.get("url"), _int(raw.get("lineNumber")), _int(raw.get("columnNumber"))
    frames = cdp.arr(cdp.obj(raw.get("stack")).get("callFrames"))
    if url is None and frames:
        top = cdp.obj(frames[0])
        url, line, column = top.get("url"), _int(top.get("lineNumber")), _int(top.get("columnNumber"))
    return Initiator(type=str(raw.get("type", "other")), url=_text(url) or None, line=line, column=column)


def _frames(tree: JSONObject) -> list[tuple[JSONObject, list[JSONValue]]]:
    """Each frame of Page.getResourceTree's tree (the browser's JSON) with its resources, in document order."""
    out: list[tuple[JSONObject, list[JSONValue]]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(frame := node.get("frame"), dict):
            out.append((frame, cdp.arr(node.get("resources", []))))
        stack.extend(c for c in reversed(cdp.arr(node.get("childFrames"))) if isinstance(c, dict))
    return out


def _flatten_dom(root: JSONObject) -> list[tuple[int, JSONObject]]:
    """Document order, each node with its parent's index."""
    out: list[tuple[int, JSONObject]] = []
    stack: list[tuple[int, JSONObject]] = [(-1, root)]
    while stack:
        parent, node = stack.pop()
        index = len(out)
        out.append((parent, node))
        children = [c for c in cdp.arr(node.get("children")) if isinstance(c, dict)]
        stack.extend((index, c) for c in reversed(children))
    return out


def _attributes(node: JSONObject) -> dict[str, str]:
    attrs = cdp.arr(node.get("attributes"))
    return {str(attrs[i]).lower(): str(attrs[i + 1]) for i in range(0, len(attrs) - 1, 2)}


def _forms(flat: list[tuple[int, JSONObject]]) -> list[Form]:
    forms: dict[int, Form] = {}
    owner: dict[int, int] = {}
    for index, (parent, node) in enumerate(flat):
        name = str(node.get("nodeName", "")).upper()
        if parent in owner:
            owner[index] = owner[parent]
        if name == "FORM":
            attrs = _attributes(node)
            forms[index] = Form(
                node_index=index,
                action=attrs.get("action"),
                method=attrs.get("method", "get").lower(),
                id=attrs.get("id"),
                webmcp_tool_name=attrs.get("toolname"),
                fields=[],
            )
            owner[index] = index
        elif name in ("INPUT", "SELECT", "TEXTAREA") and index in owner:
            attrs = _attributes(node)
            forms[owner[index]].fields.append(
                FormField(
                    tag=name.lower(), name=attrs.get("name"), type=attrs.get("type"), required="required" in attrs
                )
            )
    return list(forms.values())


def _optional(
    conn: cdp.Connection, method: str, params: JSONObject, session: str, ctx: CallContext, problems: list[str]
) -> JSONObject | None:
    try:
        return conn.call(method, params, session=session, ctx=ctx)
    except cdp.CommandFailed as exc:
        problems.append(f"{method} failed: {exc.details['cdp_message']}")
        return None


def _storage(
    conn: cdp.Connection, session: str, target: BrowserTarget, include_keys: bool, ctx: CallContext, problems: list[str]
) -> Storage:
    origin = target.origin or ""
    keys: dict[str, list[str]] = {"local": [], "session": []}
    cookies: list[str] = []
    idb: list[str] = []
    caches: list[str] = []
    if include_keys:
        for kind, local in (("local", True), ("session", False)):
            got = _optional(
                conn,
                "DOMStorage.getDOMStorageItems",
                {"storageId": {"securityOrigin": origin, "isLocalStorage": local}},
                session,
                ctx,
                problems,
            )
            if got is not None:
                keys[kind] = sorted({str(e[0]) for e in cdp.arr(got.get("entries")) if isinstance(e, list) and e})
        got = _optional(conn, "Network.getCookies", {"urls": [target.url]}, session, ctx, problems)
        if got is not None:
            cookies = sorted({str(c.get("name", "")) for c in cdp.arr(got.get("cookies")) if isinstance(c, dict)})
        got = _optional(conn, "IndexedDB.requestDatabaseNames", {"securityOrigin": origin}, session, ctx, problems)
        if got is not None:
            idb = sorted(str(n) for n in cdp.arr(got.get("databaseNames")))
        got = _optional(conn, "CacheStorage.requestCacheNames", {"securityOrigin": origin}, session, ctx, problems)
        if got is not None:
            caches = sorted(str(c.get("cacheName", "")) for c in cdp.arr(got.get("caches")) if isinstance(c, dict))
    usage = _optional(conn, "Storage.getUsageAndQuota", {"origin": origin}, session, ctx, problems) or {}
    return Storage(
        origin=origin,
        keys_captured=include_keys,
        local_storage_keys=keys["local"],
        session_storage_keys=keys["session"],
        cookie_names=cookies,
        indexed_db_names=idb,
        cache_names=caches,
        usage_bytes=_number(usage.get("usage")),
        quota_bytes=_number(usage.get("quota")),
        values_redacted=True,
    )


MAX_NODE_TEXT = 200
# Text under these is no visible page text (scripts, styles) or is what a user typed (a form field's value).
_NO_TEXT = frozenset({"SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"})
_FIELD_TEXT = frozenset({"TEXTAREA", "INPUT", "SELECT", "OPTION"})


def _node_text(flat: list[tuple[int, JSONObject]], index: int) -> str | None:
    """The visible text of a text node, bounded; a form field's value redacted; None for other nodes."""
    parent, node = flat[index]
    if cdp.as_int(node.get("nodeType", 0)) != 3:
        return None
    owner = str(flat[parent][1].get("nodeName", "")).upper() if parent >= 0 else ""
    if owner in _NO_TEXT:
        return None
    if owner in _FIELD_TEXT:
        return "[input value redacted]"
    text = " ".join(str(node.get("nodeValue", "")).split())
    return text[:MAX_NODE_TEXT] if text else None


def inspect_page(
    endpoint: str,
    target_id: str,
    origins: list[str],
    *,
    observation_ms: int,
    include_console_text: bool,
    include_storage_keys: bool,
    max_dom_nodes: int,
    max_events: int,
    ctx: CallContext,
    include_text: bool = False,
) -> Inspection:
    """One passive observation of a page target (see the module docstring for what it never does)."""
    info = cdp.browser_version(endpoint, ctx)
    missing: set[str] = set()
    truncated: set[str] = set()
    problems: list[str] = []
    observer = _Observer(max_events, include_console_text)
    with cdp.opened(endpoint, ctx, info) as conn:
        target, scope = page_target(conn, target_id, origins, ctx)
        conn.subscribe(observer)
        with attached(conn, target_id, ctx) as session:
            observer.session = session
            started = now_iso()
            conn.call("Runtime.enable", session=session, ctx=ctx)
            conn.call("Log.enable", session=session, ctx=ctx)
            conn.call("Debugger.enable", session=session, ctx=ctx)
            # A `debugger;` statement must never pause the page because rea listens.
            conn.call("Debugger.setSkipAllPauses", {"skip": True}, session=session, ctx=ctx)
            conn.call("Network.enable", session=session, ctx=ctx)
            network_from = now_iso()
            ctx.progress(f"inspect: observing {observation_ms} ms")
            cdp.wait(ctx, observation_ms / 1000, "observation window")
            ended = now_iso()
            tree = conn.call("Page.getResourceTree", session=session, ctx=ctx).get("frameTree") or {}
            document = conn.call("DOM.getDocument", {"depth": -1}, session=session, ctx=ctx).get("root") or {}
            html = _optional(conn, "DOM.getOuterHTML", {"nodeId": document.get("nodeId")}, session, ctx, problems)
            with observer.lock:
                parsed = list(observer.scripts)
            ctx.progress(f"inspect: hashing {len(parsed)} scripts")
            scripts = _scripts(conn, session, parsed, scope, ctx, truncated, problems)
            storage = _storage(conn, session, target, include_storage_keys, ctx, problems)
            conn.call("Debugger.disable", session=session, ctx=ctx)
        conn.unsubscribe(observer)
    frames_raw = _frames(tree)
    frames = [
        Frame(
            frame_id=str(f.get("id", "")),
            parent_frame_id=_text(f.get("parentId")),
            url=str(f.get("url", "")),
            origin=origin_of(str(f.get("url", ""))),
            name=_text(f.get("name")) or None,
            mime_type=_text(f.get("mimeType")),
        )
        for f, _ in frames_raw
        if origin_of(str(f.get("url", ""))) in scope
    ]
    resources = [
        Resource(
            url=str(r.get("url", "")),
            origin=origin_of(str(r.get("url", ""))),
            type=str(r.get("type", "")),
            mime_type=str(r.get("mimeType", "")),
            content_size=_int(r.get("contentSize")),
            frame_id=str(f.get("id", "")),
        )
        for f, listed in frames_raw
        for r in listed
        if isinstance(r, dict) and origin_of(str(r.get("url", ""))) in scope
    ]
    flat = _flatten_dom(document)
    if len(flat) > max_dom_nodes:
        truncated.add("dom")
    nodes = [
        DomNode(
            index=i,
            parent_index=parent,
            node_type=cdp.as_int(n.get("nodeType", 0)),
            node_name=str(n.get("nodeName", "")),
            node_value_length=len(str(n.get("nodeValue", ""))),
            attribute_names=sorted(_attributes(n)),
            text=_node_text(flat, i) if include_text else None,
        )
        for i, (parent, n) in enumerate(flat[:max_dom_nodes])
    ]
    html_bytes = str(html.get("outerHTML", "")).encode() if html is not None else None
    if html_bytes is None:
        missing.add("dom")
    dom = Dom(
        total_nodes=len(flat),
        html_sha256=_sha(html_bytes) if html_bytes is not None else None,
        html_bytes=len(html_bytes) if html_bytes is not None else None,
        truncated=len(flat) > max_dom_nodes,
        nodes=nodes,
    )
    with observer.lock:
        requests = dict(observer.requests)
        console = list(observer.console)
        requests_seen, console_seen = observer.requests_seen, observer.console_seen
    kept = [_request(rid, r) for rid, r in requests.items() if origin_of(r.url) in scope]
    if requests_seen > len(requests) or console_seen > len(console):
        truncated.add("network" if requests_seen > len(requests) else "console")
    if any(p.split(".", 1)[0] in ("DOMStorage", "Network", "IndexedDB", "CacheStorage", "Storage") for p in problems):
        missing.add("storage")
    limitations = [*problems]
    if len(frames) < len(frames_raw):
        limitations.append(f"{len(frames_raw) - len(frames)} frames outside allowed_origins are not described.")
    limitations.append(
        "Network requests are those observed during the capture window; earlier activity is not "
        "available to a passive observer."
    )
    return Inspection(
        schema_version=1,
        browser=version(info),
        target=target,
        allowed_origins=scope,
        capture_window=CaptureWindow(started_at=started, ended_at=ended, observation_ms=observation_ms),
        completeness=completeness(missing, truncated),
        frames=frames,
        dom=dom,
        forms=_forms(flat),
        scripts=scripts,
        resources=sorted(resources, key=lambda r: (r.url, r.type)),
        network=Network(
            coverage_started_at=network_from,
            prior_activity_available=False,
            observed=requests_seen,
            excluded_disallowed_origin=len(requests) - len(kept),
            dropped=requests_seen - len(requests),
            requests=kept,
        ),
        console=Console(
            text_capture="included" if include_console_text else "not_requested",
            replayed_prior_messages=True,
            observed=console_seen,
            dropped=console_seen - len(console),
            events=console,
        ),
        storage=storage,
        limitations=limitations,
    )


def _request(rid: str, r: _Pending) -> NetworkRequest:
    return NetworkRequest(
        request_id=rid,
        url=r.url,
        origin=origin_of(r.url),
        method=r.method,
        resource_type=r.type,
        status=r.status,
        mime_type=r.mime_type,
        encoded_data_length=r.encoded,
        failure=r.failure,
        initiator=_initiator(r.initiator),
    )


def _scripts(
    conn: cdp.Connection,
    session: str,
    parsed: list[JSONObject],
    scope: list[str],
    ctx: CallContext,
    truncated: set[str],
    problems: list[str],
) -> Scripts:
    anonymous = disallowed = 0
    items: list[Script] = []
    budget = MAX_SCRIPT_BYTES
    for p in parsed:
        url = str(p.get("url", ""))
        if not url:
            anonymous += 1
            continue
        if origin_of(url) not in scope:
            disallowed += 1
            continue
        sha = None
        length = _int(p.get("length"))
        if len(items) < MAX_SCRIPT_SOURCES and budget > 0:
            got = _optional(conn, "Debugger.getScriptSource", {"scriptId": p.get("scriptId")}, session, ctx, problems)
            if got is not None:
                data = str(got.get("scriptSource", "")).encode()
                budget -= len(data)
                sha, length = _sha(data), len(data)
        else:
            truncated.add("scripts")
        start_line, start_column = cdp.as_int(p.get("startLine", 0)), cdp.as_int(p.get("startColumn", 0))
        aux = cdp.obj(p.get("executionContextAuxData"))
        inline = start_line > 0 or start_column > 0 or p.get("hasSourceURL") is True
        key = "scr_" + _sha(f"{url}\n{start_line}:{start_column}\n{sha or p.get('hash', '')}".encode())
        items.append(
            Script(
                script_key=key,
                script_id=str(p.get("scriptId", "")),
                frame_id=aux.get("frameId"),
                url=url,
                origin=origin_of(url),
                inline=inline,
                start_line=start_line,
                start_column=start_column,
                sha256=sha,
                cdp_hash=str(p.get("hash", "")),
                length=length,
                is_module=bool(p.get("isModule", False)),
                source_map_url=_text(p.get("sourceMapURL")) or None,
            )
        )
        ctx.check("hashing scripts")
    items.sort(key=lambda s: (s.url, s.start_line, s.start_column, s.script_id))
    return Scripts(total=len(parsed), excluded_anonymous=anonymous, excluded_disallowed_origin=disallowed, items=items)


# -- WebMCP ----------------------------------------------------------------------------------------


def measure(schema: Any) -> tuple[int, int, int]:
    """Canonical JSON bytes, nesting depth and node count of a page-declared schema (no recursion)."""
    size = len(json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode())
    depth = nodes = 0
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        value, level = stack.pop()
        nodes += 1
        depth = max(depth, level)
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
    return size, depth, nodes


class _ToolWatcher:
    def __init__(self) -> None:
        self.session: str | None = None
        self.lock = threading.Lock()
        self.live: dict[tuple[str, str], JSONObject] = {}
        self.removed: list[RemovedTool] = []

    def __call__(self, method: str, params: JSONObject, session: str | None) -> None:
        if session is None or session != self.session:
            return
        tools = cdp.arr(params.get("tools"))
        with self.lock:
            for tool in tools:
                if not isinstance(tool, dict):
                    continue
                key = (str(tool.get("frameId", "")), str(tool.get("name", "")))
                if method == "WebMCP.toolsAdded":
                    self.live[key] = tool
                elif method == "WebMCP.toolsRemoved" and self.live.pop(key, None) is not None:
                    self.removed.append(RemovedTool(name=key[1], frame_id=key[0]))


def _page_has_webmcp(conn: cdp.Connection, session: str, ctx: CallContext) -> bool:
    """Whether the page's main world exposes a model context (the WebMCP API the domain reports on)."""
    reply = conn.call(
        "Runtime.evaluate",
        {"expression": "!!(document.modelContext || navigator.modelContext)", "returnByValue": True},
        session=session,
        ctx=ctx,
    )
    return bool(cdp.obj(reply.get("result")).get("value"))


def discover_tools(
    endpoint: str,
    target_id: str,
    origins: list[str],
    *,
    observation_ms: int,
    max_tools: int,
    max_schema_bytes: int,
    max_schema_depth: int,
    max_schema_nodes: int,
    ctx: CallContext,
) -> WebMcpDiscovery:
    """Tools the page registered through WebMCP, as Chromium's experimental WebMCP domain reports them."""
    info = cdp.browser_version(endpoint, ctx)
    watcher = _ToolWatcher()
    limitations = ["Tool metadata is declared by the page and untrusted; rea never invokes discovered tools."]
    status = "available"
    with cdp.opened(endpoint, ctx, info) as conn:
        target, scope = page_target(conn, target_id, origins, ctx)
        conn.subscribe(watcher)
        with attached(conn, target_id, ctx) as session:
            watcher.session = session
            tree = conn.call("Page.getFrameTree", session=session, ctx=ctx).get("frameTree") or {}
            try:
                conn.call("WebMCP.enable", session=session, ctx=ctx)
            except cdp.CommandFailed as exc:
                if not exc.method_missing:
                    raise
                status = "unavailable"
                limitations.append(
                    "This browser has no WebMCP DevTools domain (Chromium 156 exposes it, and "
                    "document.modelContext, with --enable-features=WebMCP)."
                )
            if status == "available" and not _page_has_webmcp(conn, session, ctx):
                # The domain answers, but the page has no model context: the feature is off in this browser.
                conn.call("WebMCP.disable", session=session, ctx=ctx)
                status = "unavailable"
                limitations.append(
                    "The page has no document.modelContext (nor navigator.modelContext): WebMCP is "
                    "off in this browser. Launch it with --enable-features=WebMCP (rea's own "
                    "launches do)."
                )
            if status == "available":
                cdp.wait(ctx, observation_ms / 1000, "observation window")
                conn.call("WebMCP.disable", session=session, ctx=ctx)
        conn.unsubscribe(watcher)
    frame_urls = {str(f.get("id", "")): str(f.get("url", "")) for f, _ in _frames(tree)}
    with watcher.lock:
        live = sorted(watcher.live.items())
        removed = list(watcher.removed)
    items: list[WebMcpTool] = []
    excluded = 0
    truncated: set[str] = set()
    for (frame_id, name), raw in live:
        frame_url = frame_urls.get(frame_id)
        owner = origin_of(frame_url) if frame_url else None
        if owner not in scope:
            excluded += 1
            continue
        if len(items) >= max_tools:
            truncated.add("tools")
            continue
        items.append(
            _tool(
                frame_id, name, raw, frame_url, owner, max_schema_bytes, max_schema_depth, max_schema_nodes, truncated
            )
        )
    if excluded:
        limitations.append(
            f"{excluded} tools registered by frames outside allowed_origins (or unknown frames) are not listed."
        )
    return WebMcpDiscovery(
        schema_version=1,
        browser=version(info),
        target=TargetRef(target_id=target.target_id, url=target.url, origin=target.origin),
        allowed_origins=scope,
        status="available" if status == "available" else "unavailable",
        source="WebMCP DevTools domain (experimental): tools registered through document.modelContext."
        "registerTool (navigator.modelContext where a browser offers it) and declarative <form toolname>",
        observation_ms=observation_ms,
        tools=WebMcpTools(total=len(live) - excluded, items=items),
        removed=removed,
        excluded_disallowed_origin=excluded,
        completeness=completeness(set() if status == "available" else {"tools"}, truncated),
        limitations=limitations,
    )


def _tool(
    frame_id: str,
    name: str,
    raw: JSONObject,
    frame_url: str | None,
    owner: str | None,
    max_bytes: int,
    max_depth: int,
    max_nodes: int,
    truncated: set[str],
) -> WebMcpTool:
    schema = raw.get("inputSchema")
    if schema is None:
        summary = SchemaSummary(bytes=0, depth=0, nodes=0, status="absent", exceeded=[])
        digest = None
    else:
        size, depth, nodes = measure(schema)
        exceeded = [
            label
            for label, value, cap in (
                ("max_schema_bytes", size, max_bytes),
                ("max_schema_depth", depth, max_depth),
                ("max_schema_nodes", nodes, max_nodes),
            )
            if value > cap
        ]
        summary = SchemaSummary(
            bytes=size,
            depth=depth,
            nodes=nodes,
            status="exceeds_limits" if exceeded else "within_limits",
            exceeded=exceeded,
        )
        digest = _sha(json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode())
        if exceeded:
            truncated.add("tools")
            schema = None
    notes = cdp.obj(raw.get("annotations"))

    def flag(key: str) -> bool | None:
        value = notes.get(key)
        return value if isinstance(value, bool) else None

    frames = cdp.arr(cdp.obj(raw.get("stackTrace")).get("callFrames"))
    top = cdp.obj(frames[0]) if frames else None
    source = (
        SourceLocation(
            url=str(top.get("url", "")), line=_int(top.get("lineNumber")), column=_int(top.get("columnNumber"))
        )
        if top
        else None
    )
    backend = _int(raw.get("backendNodeId"))
    return WebMcpTool(
        tool_key="webmcp_" + _sha(f"{frame_url or frame_id}\n{name}".encode()),
        name=name,
        description=str(raw.get("description", "")),
        frame_id=frame_id,
        frame_url=frame_url,
        owner_origin=owner,
        declaration_kind="declarative" if backend is not None else "imperative",
        backend_node_id=backend,
        input_schema=schema,
        input_schema_sha256=digest,
        schema_summary=summary,
        annotations=WebMcpAnnotations(
            read_only=flag("readOnly"),
            untrusted_content=flag("untrustedContent"),
            consequential=flag("consequential"),
            autosubmit=flag("autosubmit"),
        ),
        registration_source=source,
        trust="page-declared-untrusted",
    )


# -- screenshots -----------------------------------------------------------------------------------


def png_artifact(data: bytes, path: str = "screenshot") -> PngArtifact:
    width, height = png.dimensions(data, path)
    return PngArtifact(
        sha256=_sha(data),
        bytes=len(data),
        media_type="image/png",
        width=width,
        height=height,
        data_base64=base64.b64encode(data).decode("ascii"),
    )


def grab_png(conn: cdp.Connection, session: str, maximum_bytes: int, ctx: CallContext) -> bytes:
    """The visible viewport as PNG bytes; larger than ``maximum_bytes`` is ``resource_constraint``."""
    reply = conn.call(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, session=session, ctx=ctx
    )
    try:
        data = base64.b64decode(str(reply.get("data", "")), validate=True)
    except ValueError:
        raise ReaError(
            "unreadable_output",
            "the browser's screenshot is not base64",
            details={"reason": "protocol_violation", "method": "Page.captureScreenshot"},
        ) from None
    if len(data) > maximum_bytes:
        raise ReaError(
            "resource_constraint",
            f"the screenshot is {len(data)} bytes, over maximum_image_bytes ({maximum_bytes})",
            remediation="Raise maximum_image_bytes or shrink the browser window.",
            details={"resource": "file-size", "bytes": len(data), "maximum_image_bytes": maximum_bytes},
        )
    return data


def capture_screenshot(
    endpoint: str, target_id: str, origins: list[str], maximum_bytes: int, ctx: CallContext
) -> Screenshot:
    info = cdp.browser_version(endpoint, ctx)
    began = time.monotonic()
    with cdp.opened(endpoint, ctx, info) as conn:
        target, _ = page_target(conn, target_id, origins, ctx)
        with attached(conn, target_id, ctx) as session:
            data = grab_png(conn, session, maximum_bytes, ctx)
    ctx.progress(f"screenshot: {len(data)} bytes in {int((time.monotonic() - began) * 1000)} ms")
    return Screenshot(
        schema_version=1,
        browser=version(info),
        target=TargetRef(target_id=target.target_id, url=target.url, origin=target.origin),
        captured_at=now_iso(),
        clip="viewport",
        artifact=png_artifact(data),
        limitations=["The visible viewport only: rea never scrolls or resizes the page."],
    )
