"""The V8 inspector, passively: its targets (``/json/list``) and what one target parses, logs and throws.

A Node process started with ``--inspect=127.0.0.1:PORT`` (an Electron app's main process too) serves its targets at
``/json/list``; a renderer of an Electron app (or any Chromium page) is a ``page`` target of its
``--remote-debugging-port``, reached the same way. rea connects to the target's own socket through the kernel's
DevTools session (``rea.devtools``), enables the Runtime and Debugger domains (the latter replays every script
already parsed) and listens. Passive: no breakpoint is set, nothing is evaluated, and every pause is skipped
(``Debugger.setSkipAllPauses``), so a ``debugger;`` statement does not stop the program while rea watches.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import devtools
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import origin_of
from rea_plugins.runtime.model import ExecutionContext
from rea_plugins.runtime.model import ParsedScript
from rea_plugins.runtime.model import RuntimeConsoleEvent
from rea_plugins.runtime.model import RuntimeException
from rea_plugins.runtime.model import RuntimeExcluded
from rea_plugins.runtime.model import RuntimeKind
from rea_plugins.runtime.model import RuntimeObservation
from rea_plugins.runtime.model import RuntimeTarget
from rea_plugins.runtime.model import RuntimeTargetList
from rea_plugins.runtime.model import RuntimeVersion
from rea_plugins.runtime.model import ScriptCounts
from rea_plugins.runtime.model import ScriptScope

INSPECTOR = devtools.Peer(
    noun="the inspector",
    endpoint_kind="V8 inspector",
    reachable="Start the program with --inspect=127.0.0.1:PORT (node, or an Electron app's main process), or an "
    "Electron app with --remote-debugging-port=PORT for its renderers, and pass http://127.0.0.1:PORT.",
    check="Check that the endpoint is a V8 inspector (node --inspect) or DevTools endpoint.",
    gone="The program or its target went away; check that it is still running and retry.",
    thread="rea-inspector-reader",
)
SCHEMA_VERSION = 1
MAX_TEXT = 240
# The runtime's own scripts: Node's internals and Chromium's extensions and built-in pages.
_INTERNAL_SCHEMES = ("node:", "internal/", "chrome-extension:", "chrome:", "devtools:", "extensions::", "v8/")
# runtime_kind and the target types it names: Node and Electron's main process are "node" targets; renderers and
# their preload scripts live in "page" targets (a webview or iframe is one too).
_KIND_TYPES: dict[str, tuple[str, ...]] = {
    "node": ("node",),
    "electron-main": ("node",),
    "electron-renderer": ("page", "webview", "iframe"),
    "electron-preload": ("page", "webview", "iframe"),
}


def parse_endpoint(value: str) -> str:
    return devtools.loopback_endpoint(value, "inspector_endpoint", "inspector endpoint")


file_roots = devtools.file_roots
file_path = devtools.file_path
_inside = devtools.inside


def allowed_origins(values: list[str] | None) -> list[str]:
    out: set[str] = set()
    problems = []
    for i, value in enumerate(values or []):
        origin = origin_of(value)
        if origin is None or origin != value.rstrip("/"):
            problems.append(issue(f"allowed_origins/{i}", "invalid_value", "expected one exact http(s) origin"))
        else:
            out.add(origin)
    if problems:
        raise invalid_request("allowed_origins must list exact http(s) origins", problems)
    return sorted(out)


def scope_of(url: str, roots: list[str], origins: list[str]) -> tuple[ScriptScope, str | None]:
    """Where a URL lies for the request, and its file when it is an application file."""
    if not url or url.startswith(_INTERNAL_SCHEMES):
        return "runtime-internal", None
    path = file_path(url)
    if path is not None:
        if not roots or _inside(path, roots):
            return "application", path
        return "outside-scope", None
    origin = origin_of(url)
    if origin is not None and (not origins or origin in origins):
        return "application", None
    if origin is None and "://" not in url:
        # A name a script gave itself (evalmachine.<anonymous>, a //# sourceURL without a scheme): the runtime's.
        return "runtime-internal", None
    return "outside-scope", None


def version(endpoint: str, ctx: CallContext | None) -> RuntimeVersion:
    info = devtools.obj(devtools.http_json(INSPECTOR, endpoint, "/json/version", ctx))
    product = info.get("Browser")
    protocol = info.get("Protocol-Version")
    return RuntimeVersion(
        product=product if isinstance(product, str) else "",
        protocol_version=protocol if isinstance(protocol, str) else "",
    )


def target_infos(endpoint: str, ctx: CallContext | None) -> list[JSONObject]:
    """The inspector's /json/list entries: its JSON (JSONObject), not rea's, read key by key with type checks."""
    listed = devtools.http_json(INSPECTOR, endpoint, "/json/list", ctx)
    if not isinstance(listed, list):
        raise devtools.protocol_violation(INSPECTOR, "/json/list is not a list", endpoint=endpoint)
    return [t for t in listed if isinstance(t, dict) and isinstance(t.get("id"), str)]


def _target(info: JSONObject, path: str | None) -> RuntimeTarget:
    def text(key: str) -> str:
        value = info.get(key)
        return value if isinstance(value, str) else ""

    return RuntimeTarget(
        target_id=text("id"), type=text("type"), title=text("title")[:MAX_TEXT], url=text("url"), file_path=path
    )


def _classify(info: JSONObject, roots: list[str], origins: list[str]) -> tuple[str, str | None]:
    """``listed``, ``outside_file_roots``, ``disallowed_origin`` or ``unsupported_url``, and the target's file."""
    url = info.get("url") if isinstance(info.get("url"), str) else ""
    assert isinstance(url, str)
    path = file_path(url)
    if path is not None:
        return ("listed" if not roots or _inside(path, roots) else "outside_file_roots"), path
    origin = origin_of(url)
    if origin is not None:
        return ("listed" if not origins or origin in origins else "disallowed_origin"), None
    return "unsupported_url", None


def list_targets(
    endpoint: str, roots: list[str], origins: list[str], offset: int, limit: int, ctx: CallContext | None
) -> RuntimeTargetList:
    runtime = version(endpoint, ctx)
    kept: list[RuntimeTarget] = []
    excluded = {"outside_file_roots": 0, "disallowed_origin": 0, "unsupported_url": 0}
    for info in target_infos(endpoint, ctx):
        verdict, path = _classify(info, roots, origins)
        if verdict == "listed":
            kept.append(_target(info, path))
        else:
            excluded[verdict] += 1
    kept.sort(key=lambda t: t.target_id)
    limitations = []
    if excluded["unsupported_url"]:
        limitations.append(
            f"{excluded['unsupported_url']} targets are neither file:// nor http(s) (about:, devtools:, a REPL) "
            "and are not listed."
        )
    end = offset + limit
    return RuntimeTargetList(
        schema_version=SCHEMA_VERSION,
        runtime=runtime,
        endpoint=endpoint,
        allowed_file_roots=roots,
        allowed_origins=origins,
        total=len(kept),
        offset=offset,
        limit=limit,
        next_offset=end if end < len(kept) else None,
        targets=kept[offset:end],
        excluded=RuntimeExcluded(**excluded),
        limitations=limitations,
    )


def _unavailable(message: str, reason: str, target_id: str, **details: Any) -> ReaError:
    return ReaError(
        "target_unavailable",
        message,
        remediation="Call list_javascript_runtime_targets and pass a target_id it lists.",
        details={"reason": reason, "target_id": target_id, **details},
    )


@dataclass(frozen=True)
class Limits:
    max_scripts: int = 5000
    max_source_bytes: int = 64 << 20
    max_console_events: int = 200
    max_exceptions: int = 100
    max_contexts: int = 64


@dataclass
class _Seen:
    """Events as the reader thread hands them over (appends only; read after the window closes): the runtime's
    protocol JSON (JSONObject), read key by key with type checks when the observation is built."""

    scripts: list[JSONObject] = field(default_factory=list)
    contexts: list[JSONObject] = field(default_factory=list)
    console: list[JSONObject] = field(default_factory=list)
    exceptions: list[JSONObject] = field(default_factory=list)
    console_total: int = 0
    exceptions_total: int = 0
    paused: int = 0
    destroyed: set[int] = field(default_factory=set)
    # Every execution context went away: the program ended (Node then waits for rea to disconnect).
    ended: bool = False


def _frame(stack: Any) -> tuple[str | None, int | None, int | None]:
    frames = devtools.arr(devtools.obj(stack).get("callFrames"))
    top = devtools.obj(frames[0]) if frames else {}
    url, line, column = top.get("url"), top.get("lineNumber"), top.get("columnNumber")
    return (
        url if isinstance(url, str) and url else None,
        line + 1 if isinstance(line, int) else None,
        column + 1 if isinstance(column, int) else None,
    )


def _context(raw: JSONObject, context_id: int) -> ExecutionContext:
    aux = devtools.obj(raw.get("auxData"))
    default, kind = aux.get("isDefault"), aux.get("type")
    return ExecutionContext(
        context_id=context_id,
        name=str(raw.get("name", ""))[:MAX_TEXT],
        origin=str(raw.get("origin", ""))[:MAX_TEXT],
        is_default=default if isinstance(default, bool) else None,
        aux_type=kind if isinstance(kind, str) else None,
    )


def _console_text(args: list[Any]) -> str:
    parts = []
    for arg in args:
        a = devtools.obj(arg)
        value = a.get("value", a.get("description", a.get("type", "")))
        parts.append(value if isinstance(value, str) else str(value))
    return " ".join(parts)[:MAX_TEXT]


def observe(
    endpoint: str,
    target_id: str,
    runtime_kind: RuntimeKind,
    roots: list[str],
    origins: list[str],
    observation_ms: int,
    limits: Limits,
    ctx: CallContext,
) -> RuntimeObservation:
    runtime = version(endpoint, ctx)
    info = next((t for t in target_infos(endpoint, ctx) if t.get("id") == target_id), None)
    if info is None:
        raise _unavailable(f"no inspector target {target_id!r} on this endpoint", "not_found", target_id)
    verdict, path = _classify(info, roots, origins)
    if verdict != "listed":
        raise _unavailable(f"target {target_id} is outside the request's scope ({verdict})", verdict, target_id)
    target = _target(info, path)
    socket = info.get("webSocketDebuggerUrl")
    if not isinstance(socket, str):
        raise _unavailable(
            f"target {target_id} has no inspector socket (another debugger may hold it)", "attached", target_id
        )
    limitations: list[str] = []
    if target.type not in _KIND_TYPES[runtime_kind]:
        limitations.append(f"runtime_kind {runtime_kind} was declared for a {target.type or 'untyped'} target.")
    seen = _Seen()
    conn = devtools.Connection.connect(endpoint, socket, INSPECTOR)

    def on_event(method: str, params: JSONObject, _session: str | None) -> None:
        if method == "Debugger.scriptParsed":
            seen.scripts.append(params)
        elif method == "Runtime.executionContextCreated":
            seen.contexts.append(devtools.obj(params.get("context")))
        elif method == "Runtime.executionContextDestroyed":
            if isinstance(gone := params.get("executionContextId"), int):
                seen.destroyed.add(gone)
            seen.ended = bool(seen.contexts) and all(c.get("id") in seen.destroyed for c in seen.contexts)
        elif method == "Runtime.consoleAPICalled":
            seen.console_total += 1
            if len(seen.console) < limits.max_console_events:
                seen.console.append(params)
        elif method == "Runtime.exceptionThrown":
            seen.exceptions_total += 1
            if len(seen.exceptions) < limits.max_exceptions:
                seen.exceptions.append(devtools.obj(params.get("exceptionDetails")))
        elif method == "Debugger.paused":
            # A debugger statement reached between enabling the Debugger domain and skipping every pause stops the
            # program because rea enabled it: resumed at once, so the observation leaves the program as it ran.
            seen.paused += 1
            conn.send("Debugger.resume")

    conn.subscribe(on_event)
    try:
        conn.call("Runtime.enable", ctx=ctx)
        conn.call("Debugger.enable", ctx=ctx)
        conn.call("Debugger.setSkipAllPauses", {"skip": True}, ctx=ctx)
        _window(conn, observation_ms, seen, ctx)
        scripts, counts, truncated = _scripts(conn, seen.scripts, roots, origins, limits, ctx)
    finally:
        conn.close()
    if seen.ended or (conn.closed is not None and conn.closed.details.get("reason") == "disconnected"):
        limitations.append("The target ended (or closed the inspector) during the observation window.")
    if seen.paused:
        limitations.append(
            f"The program reached {seen.paused} debugger statement(s) before rea skipped every pause; rea resumed it "
            "at once."
        )
    if truncated:
        limitations.append(f"{truncated} application scripts past limits.max_scripts are counted, not listed.")
    unread = len(scripts) - counts.sources_read
    if unread:
        limitations.append(
            f"{unread} application scripts were not hashed (source unreadable or past max_source_bytes)."
        )
    contexts = [_context(c, cid) for c in seen.contexts[: limits.max_contexts] if isinstance(cid := c.get("id"), int)]
    console = []
    for params in seen.console:
        url, line, column = _frame(params.get("stackTrace"))
        level = params.get("type")
        console.append(
            RuntimeConsoleEvent(
                level=level if isinstance(level, str) else "log",
                text=_console_text(devtools.arr(params.get("args"))),
                url=url,
                line=line,
                column=column,
            )
        )
    exceptions = []
    for details in seen.exceptions:
        exc = devtools.obj(details.get("exception"))
        description = exc.get("description")
        at_url = details.get("url")
        at_line, at_column = details.get("lineNumber"), details.get("columnNumber")
        exceptions.append(
            RuntimeException(
                text=str(details.get("text", ""))[:MAX_TEXT],
                description=description[:MAX_TEXT] if isinstance(description, str) else None,
                url=at_url if isinstance(at_url, str) and at_url else None,
                line=at_line + 1 if isinstance(at_line, int) else None,
                column=at_column + 1 if isinstance(at_column, int) else None,
            )
        )
    return RuntimeObservation(
        schema_version=SCHEMA_VERSION,
        runtime=runtime,
        runtime_kind=runtime_kind,
        endpoint=endpoint,
        target=target,
        observation_ms=observation_ms,
        allowed_file_roots=roots,
        allowed_origins=origins,
        counts=counts,
        scripts=scripts,
        scripts_truncated=truncated,
        execution_contexts=contexts,
        console=console,
        console_dropped=seen.console_total - len(console),
        exceptions=exceptions,
        exceptions_dropped=seen.exceptions_total - len(exceptions),
        limitations=limitations,
    )


def _window(conn: devtools.Connection, observation_ms: int, seen: _Seen, ctx: CallContext) -> None:
    """Listen for ``observation_ms``, reporting progress; a target that goes away ends the window early."""
    deadline = time.monotonic() + observation_ms / 1000
    while conn.closed is None and not seen.ended:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ctx.progress("observing the runtime", done=observation_ms - int(left * 1000), total=observation_ms)
        devtools.wait(ctx, min(left, 0.25), "observing the runtime")


def _scripts(
    conn: devtools.Connection,
    parsed: list[JSONObject],
    roots: list[str],
    origins: list[str],
    limits: Limits,
    ctx: CallContext,
) -> tuple[list[ParsedScript], ScriptCounts, int]:
    """Application scripts (sources read and hashed within the byte bound), the others counted."""
    tally = {"application": 0, "runtime-internal": 0, "outside-scope": 0}
    chosen: list[tuple[JSONObject, str | None]] = []
    for params in parsed:
        if not isinstance(params.get("scriptId"), str):
            continue  # every script kept below has a string scriptId
        url = params.get("url") if isinstance(params.get("url"), str) else ""
        assert isinstance(url, str)
        scope, path = scope_of(url, roots, origins)
        tally[scope] += 1
        if scope == "application":
            chosen.append((params, path))
    chosen.sort(key=lambda item: (str(item[0].get("url")), str(item[0]["scriptId"])))
    listed, truncated = chosen[: limits.max_scripts], max(0, len(chosen) - limits.max_scripts)
    out: list[ParsedScript] = []
    read = read_bytes = 0
    for i, (params, path) in enumerate(listed):
        ctx.progress("reading application scripts", done=i, total=len(listed))
        length = found if isinstance(found := params.get("length"), int) else None
        digest = None
        # UTF-16 length from the protocol bounds the UTF-8 bytes by three times; skip what would pass the bound.
        if length is None or read_bytes + length <= limits.max_source_bytes:
            try:
                source = conn.call("Debugger.getScriptSource", {"scriptId": params["scriptId"]}, ctx=ctx)
            except devtools.CommandFailed:
                source = {}
            except ReaError as err:
                if conn.closed is None or err.code != "provider_unavailable":
                    raise
                source = {}  # the program ended: what was observed stands, unhashed
            text = source.get("scriptSource")
            if isinstance(text, str):
                raw = text.encode("utf-8", "surrogatepass")
                digest = hashlib.sha256(raw).hexdigest()
                read += 1
                read_bytes += len(raw)
        v8_hash, map_url, context = params.get("hash"), params.get("sourceMapURL"), params.get("executionContextId")
        out.append(
            ParsedScript(
                script_id=str(params["scriptId"]),
                url=str(params.get("url")),
                file_path=path,
                execution_context_id=context if isinstance(context, int) else None,
                is_module=params.get("isModule") is True,
                length=length,
                v8_hash=v8_hash if isinstance(v8_hash, str) else "",
                sha256=digest,
                source_map_url=map_url if isinstance(map_url, str) and map_url else None,
            )
        )
    counts = ScriptCounts(
        application=tally["application"],
        runtime_internal=tally["runtime-internal"],
        outside_scope=tally["outside-scope"],
        sources_read=read,
        source_bytes=read_bytes,
    )
    return out, counts, truncated
