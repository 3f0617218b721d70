"""Pages over time: a bounded timeline while the user drives the page (observe_web_session), and which scripts ran
and which listeners fired during a window (observe_web_execution).

Both attach to a page the user (or another tool) drives and only listen: no evaluation, no navigation, no input.
observe_web_execution turns on V8's precise coverage (call counts per function) for the window: the page runs the
same code, a little slower, and the counts say what ran; a listener fired when its handler's function was called.
"""

from __future__ import annotations

import bisect
import threading
import time

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import origin_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.model import BrowserRecord
from rea_plugins.cdp.pagemodel import ListenerNode
from rea_plugins.cdp.pagemodel import Page
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.pagescripts import PageSession
from rea_plugins.cdp.pagescripts import in_scope
from rea_plugins.cdp.pagescripts import read_source
from rea_plugins.cdp.passive import console_text
from rea_plugins.cdp.urls import sanitize

SCHEMA_VERSION = 1
MAX_TEXT = 240


class TimelineEvent(BrowserRecord):
    # Milliseconds since the window opened.
    t_ms: int
    kind: str
    url: str | None = None
    detail: str | None = None


class DomMutations(BrowserRecord):
    inserted: int
    removed: int
    attributes: int
    text: int
    # Mutations per second of the window (index = second).
    per_second: list[int]


class SessionCounts(BrowserRecord):
    navigations: int
    requests: int
    failed_requests: int
    console: int
    exceptions: int
    excluded_disallowed_origin: int


class SessionTimeline(BrowserRecord):
    """observe_web_session: what happened on a page during a bounded window while someone drove it."""

    schema_version: int
    target_id: str
    allowed_origins: list[str]
    observation_ms: int
    counts: SessionCounts
    dom_mutations: DomMutations
    events: list[TimelineEvent]
    events_dropped: int
    limitations: list[str]


class ScriptRun(BrowserRecord):
    url: str
    script_id: str
    functions_called: int
    calls: int


class ListenerRun(BrowserRecord):
    type: str
    node: ListenerNode | None
    script_url: str
    line: int
    column: int
    fired: bool
    calls: int


class ExecutionObservation(BrowserRecord):
    """observe_web_execution: the scripts that ran and the listeners that fired during a window."""

    schema_version: int
    target_id: str
    allowed_origins: list[str]
    observation_ms: int
    scripts_ran: int
    scripts: list[ScriptRun]
    listeners_fired: int
    page: Page
    listeners: list[ListenerRun]
    limitations: list[str]


# -- observe_web_session --------------------------------------------------------------------------------------------


class _Timeline:
    def __init__(self, session: str, scope: list[str], max_events: int) -> None:
        self.session = session
        self.scope = scope
        self.max_events = max_events
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.events: list[TimelineEvent] = []
        self.dropped = 0
        self.counts = {
            "navigations": 0,
            "requests": 0,
            "failed_requests": 0,
            "console": 0,
            "exceptions": 0,
            "excluded": 0,
        }
        self.mutations = {"inserted": 0, "removed": 0, "attributes": 0, "text": 0}
        self.per_second: dict[int, int] = {}
        self.requests: dict[str, str] = {}

    def _add(self, kind: str, url: str | None = None, detail: str | None = None) -> None:
        if len(self.events) >= self.max_events:
            self.dropped += 1
            return
        t_ms = int((time.monotonic() - self.start) * 1000)
        self.events.append(TimelineEvent(t_ms=t_ms, kind=kind, url=sanitize(url).url if url else None, detail=detail))

    def __call__(self, method: str, params: JSONObject, session: str | None) -> None:
        if session != self.session:
            return
        with self.lock:
            self._event(method, params)

    # A DevTools event's params: the browser's JSON, read key by key.
    def _event(self, method: str, params: JSONObject) -> None:
        mutation = {
            "DOM.childNodeInserted": "inserted",
            "DOM.childNodeRemoved": "removed",
            "DOM.attributeModified": "attributes",
            "DOM.attributeRemoved": "attributes",
            "DOM.characterDataModified": "text",
        }.get(method)
        if mutation is not None:
            self.mutations[mutation] += 1
            second = int(time.monotonic() - self.start)
            self.per_second[second] = self.per_second.get(second, 0) + 1
        elif method == "Page.frameNavigated":
            frame = cdp.obj(params.get("frame"))
            if frame.get("parentId") is None:
                self.counts["navigations"] += 1
                self._add("navigation", str(frame.get("url", "")))
        elif method == "Page.navigatedWithinDocument":
            self.counts["navigations"] += 1
            self._add("same-document-navigation", str(params.get("url", "")))
        elif method == "Page.loadEventFired":
            self._add("load")
        elif method == "Network.requestWillBeSent":
            request = cdp.obj(params.get("request"))
            url = str(request.get("url", ""))
            if origin_of(url) not in self.scope:
                self.counts["excluded"] += 1
                return
            self.counts["requests"] += 1
            self.requests[str(params.get("requestId"))] = url
            self._add("request", url, str(request.get("method", "GET")))
        elif method == "Network.responseReceived":
            answered = self.requests.get(str(params.get("requestId")))
            if answered is not None:
                self._add("response", answered, str(cdp.obj(params.get("response")).get("status", "")))
        elif method == "Network.loadingFailed":
            failed = self.requests.get(str(params.get("requestId")))
            if failed is not None:
                self.counts["failed_requests"] += 1
                self._add("request-failed", failed, str(params.get("errorText", ""))[:MAX_TEXT])
        elif method == "Runtime.consoleAPICalled":
            self.counts["console"] += 1
            text = console_text(cdp.arr(params.get("args")))[:MAX_TEXT]
            self._add("console", None, f"{params.get('type', 'log')}: {text}")
        elif method == "Runtime.exceptionThrown":
            self.counts["exceptions"] += 1
            details = cdp.obj(params.get("exceptionDetails"))
            description = cdp.obj(details.get("exception")).get("description") or details.get("text", "")
            self._add("exception", details.get("url") or None, str(description)[:MAX_TEXT])


def observe_session(page: PageSession, observation_ms: int, max_events: int, ctx: CallContext) -> SessionTimeline:
    conn, session = page.conn, page.session
    timeline = _Timeline(session, page.scope, max_events)
    conn.subscribe(timeline)
    try:
        for domain in ("Page", "Network", "Runtime"):
            conn.call(f"{domain}.enable", session=session, ctx=ctx)
        # Mutation events come for the nodes rea has been told about: the whole tree, once, at the start.
        conn.call("DOM.enable", session=session, ctx=ctx)
        conn.call("DOM.getDocument", {"depth": -1, "pierce": True}, session=session, ctx=ctx)
        with timeline.lock:
            # Console messages the page logged before the window are replayed by Runtime.enable: not this window's.
            timeline.start = time.monotonic()
            timeline.events.clear()
            timeline.counts["console"] = timeline.counts["exceptions"] = 0
        _window(observation_ms, ctx)
        for domain in ("DOM", "Network", "Page"):
            conn.send(f"{domain}.disable", session=session)
    finally:
        conn.unsubscribe(timeline)
    with timeline.lock:
        events, dropped = list(timeline.events), timeline.dropped
        counts, mutations = dict(timeline.counts), dict(timeline.mutations)
        seconds = max(timeline.per_second, default=-1) + 1
        per_second = [timeline.per_second.get(i, 0) for i in range(seconds)]
    limitations = ["Only what happened during the window is reported: earlier activity is not visible to a listener."]
    if dropped:
        limitations.append(f"{dropped} events past max_timeline_events are counted, not listed.")
    if counts["excluded"]:
        limitations.append(f"{counts['excluded']} requests outside allowed_origins are counted only.")
    return SessionTimeline(
        schema_version=SCHEMA_VERSION,
        target_id=page.target.target_id,
        allowed_origins=page.scope,
        observation_ms=observation_ms,
        counts=SessionCounts(
            navigations=counts["navigations"],
            requests=counts["requests"],
            failed_requests=counts["failed_requests"],
            console=counts["console"],
            exceptions=counts["exceptions"],
            excluded_disallowed_origin=counts["excluded"],
        ),
        dom_mutations=DomMutations(**mutations, per_second=per_second),
        events=events,
        events_dropped=dropped,
        limitations=limitations,
    )


def _window(observation_ms: int, ctx: CallContext) -> None:
    deadline = time.monotonic() + observation_ms / 1000
    while (left := deadline - time.monotonic()) > 0:
        ctx.progress("observing the page", done=observation_ms - int(left * 1000), total=observation_ms)
        cdp.wait(ctx, min(left, 0.25), "observing the page")


# -- observe_web_execution ------------------------------------------------------------------------------------------


def _offset(source: str, line: int, column: int) -> int:
    """The character offset of a 0-based (line, column) in ``source``."""
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    return starts[min(line, len(starts) - 1)] + column


# A script's entry of Profiler.takePreciseCoverage (the browser's JSON).
def _functions(entry: JSONObject) -> list[tuple[int, int, int]]:
    """(start, end, count) of each function's own range, innermost last when sorted by start then size."""
    out = []
    for fn in cdp.arr(entry.get("functions")):
        ranges = cdp.arr(cdp.obj(fn).get("ranges"))
        if ranges:
            first = cdp.obj(ranges[0])
            start, end, count = first.get("startOffset"), first.get("endOffset"), first.get("count")
            if isinstance(start, int) and isinstance(end, int) and isinstance(count, int):
                out.append((start, end, count))
    return sorted(out, key=lambda r: (r[0], -(r[1] - r[0])))


def _handler_calls(functions: list[tuple[int, int, int]], offset: int) -> int | None:
    """The call count of the innermost function starting at or holding ``offset`` (a handler's position)."""
    starts = [f[0] for f in functions]
    best = None
    for start, end, count in functions[: bisect.bisect_right(starts, offset)]:
        if start <= offset < end and (best is None or end - start <= best[1] - best[0]):
            best = (start, end, count)
    return best[2] if best is not None else None


def observe_execution(
    page: PageSession, observation_ms: int, offset: int, limit: int, ctx: CallContext
) -> ExecutionObservation:
    from rea_plugins.cdp.pageread import describe_node
    from rea_plugins.cdp.pageread import listeners_of

    conn, session = page.conn, page.session
    conn.call("Profiler.enable", session=session, ctx=ctx)
    conn.call("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False}, session=session, ctx=ctx)
    try:
        # Counts run from the first take: what ran before the window is not this window's.
        conn.call("Profiler.takePreciseCoverage", session=session, ctx=ctx)
        _window(observation_ms, ctx)
        coverage = cdp.arr(conn.call("Profiler.takePreciseCoverage", session=session, ctx=ctx).get("result"))
    finally:
        if conn.closed is None:
            conn.send("Profiler.stopPreciseCoverage", session=session)
            conn.send("Profiler.disable", session=session)
    scripts, _, _ = in_scope(page)
    by_id = {s.script_id: s for s in scripts}
    functions: dict[str, list[tuple[int, int, int]]] = {}
    runs: list[ScriptRun] = []
    for raw in coverage:
        entry = cdp.obj(raw)
        script = by_id.get(str(entry.get("scriptId", "")))
        if script is None:
            continue
        fns = _functions(entry)
        functions[script.script_id] = fns
        # The script's top level is the function spanning it; past the window it ran only if it was called again.
        called = [f for f in fns if f[2] > 0 and f[0] > 0]
        if called:
            runs.append(
                ScriptRun(
                    url=script.url,
                    script_id=script.script_id,
                    functions_called=len(called),
                    calls=sum(f[2] for f in called),
                )
            )
    runs.sort(key=lambda r: (r.url, r.script_id))
    root = cdp.obj(conn.call("DOM.getDocument", {"depth": 0}, session=session, ctx=ctx).get("root"))
    raw_listeners = listeners_of(page, int(root.get("nodeId", 0)), -1, ctx) if root.get("nodeId") else []
    conn.send("Runtime.releaseObjectGroup", {"objectGroup": "rea-listeners"}, session)
    nodes: dict[int, ListenerNode] = {}
    listeners: list[ListenerRun] = []
    limitations: list[str] = []
    for listener, backend in raw_listeners:
        script = by_id.get(str(listener.get("scriptId", "")))
        if script is None:
            continue
        line, column = cdp.as_int(listener.get("lineNumber", 0)), cdp.as_int(listener.get("columnNumber", 0))
        source = read_source(page, script, ctx)
        calls = None
        if source is not None:
            calls = _handler_calls(functions.get(script.script_id, []), _offset(source, line, column))
        listeners.append(
            ListenerRun(
                type=str(listener.get("type", "")),
                node=describe_node(page, backend, ctx, nodes) if backend >= 0 else None,
                script_url=script.url,
                line=line + 1,
                column=column + 1,
                fired=bool(calls),
                calls=calls or 0,
            )
        )
    listeners.sort(key=lambda r: (not r.fired, r.type, r.script_url, r.line, r.column))
    limitations.append("Listeners on window are not read; a handler shared by several listeners counts for each.")
    return ExecutionObservation(
        schema_version=SCHEMA_VERSION,
        target_id=page.target.target_id,
        allowed_origins=page.scope,
        observation_ms=observation_ms,
        scripts_ran=len(runs),
        scripts=runs,
        listeners_fired=sum(1 for r in listeners if r.fired),
        page=page_of(len(listeners), offset, limit),
        listeners=listeners[offset : offset + limit],
        limitations=limitations,
    )
