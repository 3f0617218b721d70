"""Electron renderers over the Chrome DevTools Protocol: page targets whose file:// URLs lie inside
``allowed_file_roots``, listed and inspected passively.

An Electron app started with ``--remote-debugging-port`` on loopback serves its renderers as page targets, as
Chromium does; its main process is a V8 inspector target (``--inspect``: the runtime tools). The same code reads a
Chromium page opened from a file:// URL, which is how the tests drive it where Electron cannot be installed.
"""

from __future__ import annotations

import hashlib
import threading

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import devtools
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.model import BrowserRecord
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.model import BrowserVersion
from rea_plugins.cdp.model import ConsoleEvent
from rea_plugins.cdp.pagemodel import Page
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.pagescripts import PageSession
from rea_plugins.cdp.pagescripts import in_scope
from rea_plugins.cdp.pagescripts import read_source
from rea_plugins.cdp.passive import console_text
from rea_plugins.cdp.targets import _target
from rea_plugins.cdp.targets import target_infos
from rea_plugins.cdp.targets import version

SCHEMA_VERSION = 1
MAX_TEXT = 2048


class ElectronTarget(BrowserRecord):
    target_id: str
    type: str
    title: str
    url: str
    file_path: str


class ElectronExcluded(BrowserRecord):
    outside_file_roots: int
    not_file: int
    non_page: int


class ElectronTargetList(BrowserRecord):
    """list_electron_targets: the page targets of a loopback DevTools endpoint on files inside allowed_file_roots."""

    schema_version: int
    browser: BrowserVersion
    endpoint: str
    allowed_file_roots: list[str]
    page: Page
    targets: list[ElectronTarget]
    excluded: ElectronExcluded


class ElectronScript(BrowserRecord):
    url: str
    file_path: str | None
    script_id: str
    inline: bool
    is_module: bool
    sha256: str | None
    source_map_url: str | None


class ElectronContext(BrowserRecord):
    context_id: int
    name: str
    origin: str
    # "default" is the page's world; an isolated world (a preload under contextIsolation) says "isolated".
    aux_type: str | None


class ElectronDom(BrowserRecord):
    total_nodes: int
    html_sha256: str | None
    html_bytes: int | None


class ElectronPage(BrowserRecord):
    """inspect_electron_page: one renderer's scripts, worlds, console and DOM digest, read passively."""

    schema_version: int
    target: BrowserTarget
    file_path: str
    allowed_file_roots: list[str]
    dom: ElectronDom
    execution_contexts: list[ElectronContext]
    scripts_total: int
    excluded_outside_file_roots: int
    page: Page
    scripts: list[ElectronScript]
    console: list[ConsoleEvent]
    console_dropped: int
    limitations: list[str]


def list_targets(endpoint: str, roots: list[str], offset: int, limit: int, ctx: CallContext) -> ElectronTargetList:
    info = cdp.browser_version(endpoint, ctx)
    kept: list[ElectronTarget] = []
    outside = not_file = non_page = 0
    with cdp.opened(endpoint, ctx, info) as conn:
        for raw in target_infos(conn, ctx):
            target = _target(raw)
            path = devtools.file_path(target.url)
            if target.type != "page":
                non_page += 1
            elif path is None:
                not_file += 1
            elif not devtools.inside(path, roots):
                outside += 1
            else:
                kept.append(
                    ElectronTarget(
                        target_id=target.target_id, type=target.type, title=target.title, url=target.url, file_path=path
                    )
                )
    kept.sort(key=lambda t: t.target_id)
    return ElectronTargetList(
        schema_version=SCHEMA_VERSION,
        browser=version(info),
        endpoint=endpoint,
        allowed_file_roots=roots,
        page=page_of(len(kept), offset, limit),
        targets=kept[offset : offset + limit],
        excluded=ElectronExcluded(outside_file_roots=outside, not_file=not_file, non_page=non_page),
    )


def _world(raw: JSONObject) -> ElectronContext:
    """An execution context as the browser describes it (its protocol JSON, read key by key)."""
    kind = cdp.obj(raw.get("auxData")).get("type")
    return ElectronContext(
        context_id=cdp.as_int(raw["id"]),
        name=str(raw.get("name", ""))[:240],
        origin=str(raw.get("origin", ""))[:240],
        aux_type=kind if isinstance(kind, str) else None,
    )


def inspect_page(
    page: PageSession, observation_ms: int, max_events: int, offset: int, limit: int, ctx: CallContext
) -> ElectronPage:
    conn, session = page.conn, page.session
    lock = threading.Lock()
    # The browser's execution-context events, as sent (protocol JSON rea does not shape).
    contexts: list[JSONObject] = []
    console: list[ConsoleEvent] = []
    seen = [0]

    def on_event(method: str, params: JSONObject, sid: str | None) -> None:
        if sid != session:
            return
        with lock:
            if method == "Runtime.executionContextCreated":
                contexts.append(cdp.obj(params.get("context")))
            elif method == "Runtime.consoleAPICalled":
                seen[0] += 1
                if len(console) < max_events:
                    args = cdp.arr(params.get("args"))
                    console.append(
                        ConsoleEvent(
                            source="console-api",
                            level=str(params.get("type", "log")),
                            text=console_text(args)[:MAX_TEXT],
                            argument_types=[str(a.get("type", "")) for a in args if isinstance(a, dict)],
                            timestamp=ts if isinstance(ts := params.get("timestamp"), float) else None,
                            url=None,
                            line=None,
                            column=None,
                        )
                    )

    conn.subscribe(on_event)
    try:
        # Runtime.enable replays the execution contexts (the page's world and isolated ones) and logged messages.
        conn.call("Runtime.enable", session=session, ctx=ctx)
        devtools.wait(ctx, observation_ms / 1000, "observing the renderer")
        document = cdp.obj(conn.call("DOM.getDocument", {"depth": -1}, session=session, ctx=ctx).get("root"))
        try:
            html = conn.call("DOM.getOuterHTML", {"nodeId": document.get("nodeId")}, session=session, ctx=ctx)
        except cdp.CommandFailed:
            html = {}
    finally:
        conn.unsubscribe(on_event)
    scripts, _, outside = in_scope(page)
    listed = []
    for script in scripts[offset : offset + limit]:
        read_source(page, script, ctx)
        listed.append(
            ElectronScript(
                url=script.url,
                file_path=devtools.file_path(script.url),
                script_id=script.script_id,
                inline=script.inline,
                is_module=script.is_module,
                sha256=script.sha256,
                source_map_url=script.source_map_url,
            )
        )
    nodes = 0
    stack = [document]
    while stack:
        node = stack.pop()
        nodes += 1
        stack.extend(cdp.obj(c) for c in cdp.arr(node.get("children")))
    markup = html.get("outerHTML")
    data = markup.encode() if isinstance(markup, str) else None
    with lock:
        worlds = [_world(c) for c in contexts if isinstance(c.get("id"), int)]
        events, dropped = list(console), seen[0] - len(console)
    path = devtools.file_path(page.target.url) or ""
    limitations = []
    if outside:
        limitations.append(f"{outside} scripts outside allowed_file_roots are counted only.")
    return ElectronPage(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        file_path=path,
        allowed_file_roots=page.file_roots,
        dom=ElectronDom(
            total_nodes=nodes,
            html_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
            html_bytes=len(data) if data is not None else None,
        ),
        execution_contexts=worlds,
        scripts_total=len(scripts),
        excluded_outside_file_roots=outside,
        page=page_of(len(scripts), offset, limit),
        scripts=listed,
        console=events,
        console_dropped=dropped,
        limitations=limitations,
    )
