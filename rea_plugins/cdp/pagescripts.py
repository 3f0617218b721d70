"""A page's scripts as the browser holds them, for the tools that read their sources: module imports, source
locations, exports and listener locations.

Passive as inspect_web_page is: rea attaches a session, enables the Debugger domain (which replays every script
already parsed) with every pause skipped, reads sources with ``Debugger.getScriptSource``, and detaches. A source
map is read the way DevTools reads one: an inline ``data:`` URL is decoded, any other is fetched by the browser for
the page's frame (``Network.loadNetworkResource``, no credentials), only on an origin in scope.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import devtools
from rea.plugin import origin_of
from rea.plugin import read_regular
from rea.plugin import sourcemap
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.pagemodel import OriginalLocation
from rea_plugins.cdp.targets import attached
from rea_plugins.cdp.targets import file_page_target
from rea_plugins.cdp.targets import page_target
from rea_plugins.cdp.urls import sanitize

MAX_SOURCE_LINE = 240
IO_CHUNK = 1 << 20


@dataclass
class PageScript:
    script_id: str
    url: str
    frame_id: str | None
    start_line: int
    start_column: int
    is_module: bool
    v8_hash: str
    source_map_url: str | None
    source: str | None = None
    sha256: str | None = None

    @property
    def inline(self) -> bool:
        return self.start_line > 0 or self.start_column > 0


@dataclass
class PageSession:
    """An attached, passive session on one page target, its scripts collected as the browser reports them."""

    conn: cdp.Connection
    session: str
    target: BrowserTarget
    scope: list[str]
    # The browser's /json/version and scriptParsed events: its protocol JSON, read key by key.
    info: JSONObject
    parsed: list[JSONObject] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    maps: dict[str, sourcemap.Decoded | str] = field(default_factory=dict)
    # An Electron page's scope: file:// URLs inside these roots (then ``scope``, the origins, is empty).
    file_roots: list[str] = field(default_factory=list)

    def contains(self, url: str) -> bool:
        """``url`` is in the request's scope: on an allowed origin, or a file inside allowed_file_roots."""
        if self.file_roots:
            path = devtools.file_path(url)
            return path is not None and devtools.inside(path, self.file_roots)
        return origin_of(url) in self.scope

    def scripts(self) -> list[JSONObject]:
        with self.lock:
            return list(self.parsed)


@contextlib.contextmanager
def page_session(
    endpoint: str, target_id: str, origins: list[str], ctx: CallContext, file_roots: list[str] | None = None
) -> Iterator[PageSession]:
    """A passive session on a page on allowed origins, or (``file_roots`` given) on a file:// page inside them."""
    info = cdp.browser_version(endpoint, ctx)
    with cdp.opened(endpoint, ctx, info) as conn:
        scope: list[str] = []
        if file_roots is not None:
            target = file_page_target(conn, target_id, file_roots, ctx)
        else:
            target, scope = page_target(conn, target_id, origins, ctx)
        holder: dict[str, PageSession] = {}

        def on_event(method: str, params: JSONObject, session: str | None) -> None:
            page = holder.get("page")
            if page is not None and session == page.session and method == "Debugger.scriptParsed":
                with page.lock:
                    page.parsed.append(params)

        conn.subscribe(on_event)
        try:
            with attached(conn, target_id, ctx) as session:
                page = holder["page"] = PageSession(conn, session, target, scope, info, file_roots=file_roots or [])
                conn.call("Debugger.enable", session=session, ctx=ctx)
                # A `debugger;` statement must never pause the page because rea listens.
                conn.call("Debugger.setSkipAllPauses", {"skip": True}, session=session, ctx=ctx)
                # Debugger.enable's reply comes after the replayed scriptParsed events of what the page holds.
                yield page
                if conn.closed is None:
                    conn.call("Debugger.disable", session=session, ctx=ctx)
        finally:
            conn.unsubscribe(on_event)


def script_of(params: JSONObject) -> PageScript:
    """A script from its ``Debugger.scriptParsed`` event (the browser's JSON)."""
    aux = cdp.obj(params.get("executionContextAuxData"))
    map_url = params.get("sourceMapURL")
    return PageScript(
        script_id=str(params.get("scriptId", "")),
        url=str(params.get("url", "")),
        frame_id=aux.get("frameId") if isinstance(aux.get("frameId"), str) else None,
        start_line=cdp.as_int(params.get("startLine", 0) or 0),
        start_column=cdp.as_int(params.get("startColumn", 0) or 0),
        is_module=params.get("isModule") is True,
        v8_hash=str(params.get("hash", "")),
        source_map_url=map_url if isinstance(map_url, str) and map_url else None,
    )


def in_scope(page: PageSession) -> tuple[list[PageScript], int, int]:
    """The page's scripts on an origin in scope (sorted by URL and position), and the anonymous and out-of-scope
    ones counted."""
    kept: list[PageScript] = []
    anonymous = outside = 0
    for params in page.scripts():
        url = str(params.get("url", ""))
        if not url:
            anonymous += 1
        elif not page.contains(url):
            outside += 1
        else:
            kept.append(script_of(params))
    kept.sort(key=lambda s: (s.url, s.start_line, s.start_column, s.script_id))
    return kept, anonymous, outside


def read_source(page: PageSession, script: PageScript, ctx: CallContext) -> str | None:
    """The script's source (hashed into ``script.sha256``); None when the browser no longer holds it."""
    if script.source is None:
        try:
            got = page.conn.call(
                "Debugger.getScriptSource", {"scriptId": script.script_id}, session=page.session, ctx=ctx
            )
        except cdp.CommandFailed:
            return None
        text = got.get("scriptSource")
        if not isinstance(text, str):
            return None
        script.source = text
        script.sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return script.source


def _fetch(page: PageSession, script: PageScript, url: str, ctx: CallContext) -> bytes:
    params: JSONObject = {"url": url, "options": {"disableCache": False, "includeCredentials": False}}
    if script.frame_id is not None:
        params["frameId"] = script.frame_id
    reply = page.conn.call("Network.loadNetworkResource", params, session=page.session, ctx=ctx)
    resource = cdp.obj(reply.get("resource"))
    stream = resource.get("stream")
    if resource.get("success") is not True or not isinstance(stream, str):
        status = resource.get("httpStatusCode") or resource.get("netErrorName") or "failed"
        raise sourcemap.SourceMapError(f"the browser could not load the source map ({status})")
    out = bytearray()
    try:
        while True:
            chunk = page.conn.call("IO.read", {"handle": stream, "size": IO_CHUNK}, session=page.session, ctx=ctx)
            data = chunk.get("data")
            if isinstance(data, str):
                out += base64.b64decode(data) if chunk.get("base64Encoded") else data.encode()
            if len(out) > sourcemap.MAX_MAP_BYTES:
                raise sourcemap.SourceMapError(f"source map larger than {sourcemap.MAX_MAP_BYTES} bytes", "limit")
            if chunk.get("eof") is True or not data:
                return bytes(out)
    finally:
        page.conn.send("IO.close", {"handle": stream}, page.session)


def _map_url(script: PageScript) -> str | None:
    raw = script.source_map_url
    if raw is None:
        return None
    return raw if raw.startswith("data:") else urllib.parse.urljoin(script.url, raw)


def _load(page: PageSession, script: PageScript, url: str, ctx: CallContext) -> bytes:
    """A source map's bytes; ``SourceMapError`` says why they cannot be had."""
    try:
        if url.startswith("data:"):
            data = sourcemap.decode_data_url(url)
            if data is None:
                raise sourcemap.SourceMapError("the inline source map is not a valid data: URL")
            return data
        if not page.contains(url):
            raise sourcemap.SourceMapError("the source map is outside allowed_origins (or allowed_file_roots)")
        local = devtools.file_path(url)
        if local is None:
            return _fetch(page, script, url, ctx)
        # An Electron page's map is a file inside allowed_file_roots: read where it lies.
        try:
            return read_regular(local, sourcemap.MAX_MAP_BYTES, what="source map")
        except OSError as exc:
            raise sourcemap.SourceMapError(f"the source map cannot be read: {exc.strerror}") from None
    except cdp.CommandFailed as exc:
        raise sourcemap.SourceMapError(
            f"the browser refused to load the source map: {exc.details['cdp_message']}"
        ) from None
    except ReaError as exc:
        if exc.code not in ("resource_constraint", "invalid_request"):
            raise
        raise sourcemap.SourceMapError(exc.message) from None


def map_bytes(page: PageSession, script: PageScript, ctx: CallContext) -> bytes | None:
    """The script's source map as the page would load it, or None when it names none or it cannot be had."""
    url = _map_url(script)
    if url is None:
        return None
    try:
        return _load(page, script, url, ctx)
    except sourcemap.SourceMapError:
        return None


def source_map(page: PageSession, script: PageScript, ctx: CallContext) -> tuple[sourcemap.Decoded | None, str]:
    """The script's decoded map and its URL (sanitized), or None and why it is not there."""
    url = _map_url(script)
    if url is None:
        return None, "the script names no source map"
    shown = "data:" if url.startswith("data:") else sanitize(url).url
    if url not in page.maps:
        try:
            page.maps[url] = sourcemap.decode(_load(page, script, url, ctx))
        except sourcemap.SourceMapError as exc:
            page.maps[url] = str(exc)
    decoded = page.maps[url]
    return (decoded, shown) if isinstance(decoded, sourcemap.Decoded) else (None, decoded)


def original(
    page: PageSession, script: PageScript, line: int, column: int, ctx: CallContext
) -> tuple[OriginalLocation | None, str | None]:
    """The original of a generated 1-based (line, column) of ``script``, or None and why."""
    decoded, shown = source_map(page, script, ctx)
    if decoded is None:
        return None, shown
    token = decoded.lookup(line - 1, column - 1)
    if token is None:
        return None, "the source map has no segment at that position"
    text = decoded.source_content(token.source)
    source_line = None
    if text is not None:
        lines = text.splitlines()
        if 0 <= token.line < len(lines):
            source_line = lines[token.line][:MAX_SOURCE_LINE]
    return (
        OriginalLocation(
            source=token.source,
            line=token.line + 1,
            column=token.column + 1,
            name=token.name,
            map_url=shown,
            source_line=source_line,
        ),
        None,
    )


def unavailable(message: str, reason: str, **details: Any) -> ReaError:
    return ReaError(
        "target_unavailable",
        message,
        remediation="Call inspect_web_page for the page's scripts and pass one of their URLs.",
        details={"reason": reason, **details},
    )
