"""The browser tools that read a page's scripts and recorded captures: listeners, module imports, source locations,
script exports and network captures."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea_plugins.cdp import schemas
from rea_plugins.cdp.pagemodel import ListenerInventory
from rea_plugins.cdp.pagemodel import ModuleGraph
from rea_plugins.cdp.pagemodel import NetworkCapture
from rea_plugins.cdp.pagemodel import ScriptExport
from rea_plugins.cdp.pagemodel import SourceTrace
from rea_plugins.cdp.urls import allowed_origins
from rea_plugins.cdp.urls import page_scope
from rea_plugins.cdp.urls import parse_endpoint

if TYPE_CHECKING:
    from rea_plugins.cdp.pagescripts import PageSession

FAMILY = "browser"
_OBSERVE = ToolEffects(records_evidence=True, accesses_network=True)
# Writes the page's scripts into a fresh directory rea makes.
_EXPORT = ToolEffects(records_evidence=True, accesses_network=True, writes_filesystem=True, idempotent=False)
_LOCAL = ToolEffects(records_evidence=True)
# A scenario (a browser's or an Electron app's) runs code rea does not own in a process it starts; its actions may
# persist state in the profile (cookies, storage) and change what the page shows.
MAX_INT32 = 2_147_483_647


def pagetime_types() -> tuple[type[msgspec.Struct], type[msgspec.Struct]]:
    from rea_plugins.cdp.pagetime import ExecutionObservation
    from rea_plugins.cdp.pagetime import SessionTimeline

    return SessionTimeline, ExecutionObservation


def electron_scenario_type() -> type[msgspec.Struct]:
    from rea_plugins.cdp.electron_scenario import ElectronCapture

    return ElectronCapture


def electron_scenario_schema() -> JSONObject:
    from rea_plugins.cdp.electron_scenario import request_schema

    return request_schema()


def bundle_type() -> type[msgspec.Struct]:
    from rea_plugins.cdp.pagebundle import WebBundleAnalysis

    return WebBundleAnalysis


def electron_types() -> tuple[type[msgspec.Struct], type[msgspec.Struct]]:
    from rea_plugins.cdp.electron import ElectronPage
    from rea_plugins.cdp.electron import ElectronTargetList

    return ElectronTargetList, ElectronPage


# Input schemas are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
def _int(default: int, maximum: int, description: str, minimum: int = 0) -> JSONObject:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "default": default, "description": description}


def _page_schema(more: JSONObject, required: tuple[str, ...] = ()) -> JSONObject:
    return {
        "type": "object",
        "properties": {
            "cdp_endpoint": schemas.CDP_ENDPOINT,
            "target_id": schemas.TARGET_ID,
            "allowed_origins": schemas.ALLOWED_ORIGINS,
            **more,
        },
        "required": ["cdp_endpoint", "target_id", *required],
        "additionalProperties": False,
    }


_OFFSET = _int(0, MAX_INT32, "Rows to skip, for paging.")


def _limit(default: int) -> JSONObject:
    return _int(default, 1000, "Rows answered (the rest by next_offset).", minimum=1)


LISTENERS_SCHEMA = _page_schema(
    {
        "selectors": {
            "type": "array",
            "maxItems": 16,
            "items": {"type": "string", "minLength": 1, "maxLength": 512},
            "description": "CSS selectors of the nodes to read (default: the whole document tree).",
        },
        "map_sources": {
            "type": "boolean",
            "default": True,
            "description": "Map each handler through its script's source map to the original source.",
        },
        "offset": _OFFSET,
        "limit": _limit(50),
    }
)
IMPORTS_SCHEMA = _page_schema({"offset": _OFFSET, "limit": _limit(50)})
LOCATION_SCHEMA = _page_schema(
    {
        "script_url": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The script's URL."},
        "script_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Or the script's id."},
        "line": {"type": "integer", "minimum": 1, "maximum": MAX_INT32, "description": "1-based generated line."},
        "column": {"type": "integer", "minimum": 1, "maximum": MAX_INT32, "description": "1-based generated column."},
    },
    ("line", "column"),
)
EXPORT_SCHEMA = _page_schema(
    {
        "max_scripts": _int(500, 10_000, "At most this many scripts written.", minimum=1),
        "max_total_bytes": _int(64 << 20, 1 << 30, "At most this many bytes written.", minimum=1),
        "offset": _OFFSET,
        "limit": _limit(50),
    }
)
_WINDOW = _int(5000, 120_000, "How long to observe after attaching (ms).", minimum=100)
SESSION_SCHEMA = _page_schema(
    {
        "observation_ms": _WINDOW,
        "max_timeline_events": _int(500, 100_000, "At most this many timeline events listed.", minimum=1),
    },
    ("allowed_origins",),
)
EXECUTION_SCHEMA = _page_schema({"observation_ms": _WINDOW, "offset": _OFFSET, "limit": _limit(50)})
_FILE_ROOTS: JSONObject = {
    "type": "array",
    "minItems": 1,
    "maxItems": 32,
    "items": {"type": "string", "minLength": 1, "maxLength": 4096},
    "description": "Directories whose file:// pages and scripts are in scope (the app's resources).",
}
LIST_ELECTRON_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "cdp_endpoint": schemas.CDP_ENDPOINT,
        "allowed_file_roots": _FILE_ROOTS,
        "offset": _OFFSET,
        "limit": _limit(100),
    },
    "required": ["cdp_endpoint", "allowed_file_roots"],
    "additionalProperties": False,
}
INSPECT_ELECTRON_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "cdp_endpoint": schemas.CDP_ENDPOINT,
        "target_id": {**schemas.TARGET_ID, "description": "A page target_id from list_electron_targets."},
        "allowed_file_roots": _FILE_ROOTS,
        "observation_ms": _int(500, 60_000, "How long to listen after attaching (ms)."),
        "max_events": _int(200, 100_000, "At most this many console messages kept.", minimum=1),
        "offset": _OFFSET,
        "limit": _limit(50),
    },
    "required": ["cdp_endpoint", "target_id", "allowed_file_roots"],
    "additionalProperties": False,
}
BUNDLE_SCHEMA = _page_schema(
    {
        "max_total_bytes": _int(64 << 20, 1 << 30, "At most this many script bytes captured.", minimum=1),
        "offset": _OFFSET,
        "limit": _limit(50),
    }
)
CAPTURE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "A HAR file (HAR 1.2 JSON)."},
        "allowed_origins": {**schemas.ALLOWED_ORIGINS, "description": "Exact http(s) origins kept (default: all)."},
        "offset": _OFFSET,
        "limit": _limit(50),
    },
    "required": ["path"],
    "additionalProperties": False,
}


class _Answer(Protocol):
    """A page tool's answer: a record with the limitations its Evidence carries."""

    @property
    def limitations(self) -> list[str]: ...


def _evidence(
    call: ToolCall, operation: str, params: Arguments, result: msgspec.Struct, limitations: list[str], **more: Any
) -> Evidence:
    from rea_plugins.cdp.tools import evidence

    return evidence(call, operation, params, result, limitations, **more)


def _page_params(call: ToolCall) -> tuple[str, list[str], Arguments]:
    endpoint, origins = page_scope(call.args)
    params = {k: v for k, v in call.args.items() if k not in ("cdp_endpoint", "allowed_origins")}
    return endpoint, origins, {"cdp_endpoint": endpoint, "allowed_origins": list[JSONValue](origins), **params}


def _on_page(call: ToolCall, operation: str, read: Callable[[PageSession, Arguments], _Answer]) -> Evidence:
    """``read`` (given the page and the call's arguments) on a passive session on the call's page, as Evidence."""
    from rea_plugins.cdp.pagescripts import page_session

    endpoint, origins, params = _page_params(call)
    with page_session(endpoint, arg_str(call.args, "target_id", ""), origins, call.ctx) as page:
        result = read(page, call.args)
    assert isinstance(result, msgspec.Struct)
    return _evidence(call, operation, params, result, result.limitations)


def _listeners(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pageread

    return _on_page(
        call,
        "inspect_web_event_listeners",
        lambda page, a: pageread.event_listeners(
            page,
            arg_strs(a, "selectors") or [],
            arg_bool(a, "map_sources", default=True),
            arg_int(a, "offset", 0),
            arg_int(a, "limit", 50),
            call.ctx,
        ),
    )


def _imports(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pageread

    return _on_page(
        call,
        "trace_web_module_imports",
        lambda page, a: pageread.module_graph(page, arg_int(a, "offset", 0), arg_int(a, "limit", 50), call.ctx),
    )


def _location(call: ToolCall) -> Evidence:
    from rea.plugin import invalid_request
    from rea.plugin import issue
    from rea_plugins.cdp import pageread
    from rea_plugins.cdp.pagescripts import page_session

    endpoint, origins, params = _page_params(call)
    a = call.args
    if ("script_url" in a) == ("script_id" in a):
        raise invalid_request(
            "pass exactly one of script_url and script_id",
            [issue("script_url", "invalid_value", "exactly one of script_url and script_id")],
        )
    script_url, script_id = arg_str(a, "script_url"), arg_str(a, "script_id")
    line, column = arg_int(a, "line", 1), arg_int(a, "column", 1)  # both required by the schema
    with page_session(endpoint, arg_str(a, "target_id", ""), origins, call.ctx) as page:
        result = pageread.trace_location(page, script_url, script_id, line, column, call.ctx)
    return _evidence(call, "trace_web_source_location", params, result, [result.reason] if result.reason else [])


def _export(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pageexport
    from rea_plugins.cdp.pagescripts import page_session

    endpoint, origins, params = _page_params(call)
    a = call.args
    with page_session(endpoint, arg_str(a, "target_id", ""), origins, call.ctx) as page:
        result = pageexport.export_scripts(
            page,
            arg_int(a, "max_scripts", 500),
            arg_int(a, "max_total_bytes", 64 << 20),
            arg_int(a, "offset", 0),
            arg_int(a, "limit", 50),
            call.ctx,
        )
    # A cancel arriving after this handler returns still removes what it wrote.
    call.on_abandon(lambda: pageexport.discard(result.output_directory))
    try:
        return _evidence(call, "export_web_scripts", params, result, result.limitations)
    except BaseException:
        pageexport.discard(result.output_directory)
        raise


def _session(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pagetime

    return _on_page(
        call,
        "observe_web_session",
        lambda page, a: pagetime.observe_session(
            page, arg_int(a, "observation_ms", 5000), arg_int(a, "max_timeline_events", 500), call.ctx
        ),
    )


def _execution(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pagetime

    return _on_page(
        call,
        "observe_web_execution",
        lambda page, a: pagetime.observe_execution(
            page, arg_int(a, "observation_ms", 5000), arg_int(a, "offset", 0), arg_int(a, "limit", 50), call.ctx
        ),
    )


def _list_electron(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import electron

    a = call.args
    endpoint, roots = _electron_scope(a)
    offset, limit = arg_int(a, "offset", 0), arg_int(a, "limit", 100)
    result = electron.list_targets(endpoint, roots, offset, limit, call.ctx)
    params: Arguments = {
        "cdp_endpoint": endpoint,
        "allowed_file_roots": list[JSONValue](roots),
        "offset": offset,
        "limit": limit,
    }
    return _evidence(call, "list_electron_targets", params, result, [])


def _electron_scope(a: Arguments) -> tuple[str, list[str]]:
    """The call's CDP endpoint and allowed file roots, checked."""
    from rea.plugin import file_roots

    return parse_endpoint(arg_str(a, "cdp_endpoint", "")), file_roots(arg_strs(a, "allowed_file_roots"))


def _inspect_electron(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import electron
    from rea_plugins.cdp.pagescripts import page_session

    a = call.args
    endpoint, roots = _electron_scope(a)
    params: Arguments = {**a, "cdp_endpoint": endpoint, "allowed_file_roots": list[JSONValue](roots)}
    with page_session(endpoint, arg_str(a, "target_id", ""), [], call.ctx, file_roots=roots) as page:
        result = electron.inspect_page(
            page,
            arg_int(a, "observation_ms", 500),
            arg_int(a, "max_events", 200),
            arg_int(a, "offset", 0),
            arg_int(a, "limit", 50),
            call.ctx,
        )
    return _evidence(call, "inspect_electron_page", params, result, result.limitations)


def _bundle(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import pagebundle
    from rea_plugins.cdp.pagescripts import page_session

    endpoint, origins, params = _page_params(call)
    a = call.args
    with page_session(endpoint, arg_str(a, "target_id", ""), origins, call.ctx) as page:
        result, graph_id = pagebundle.analyze(
            call, page, arg_int(a, "max_total_bytes", 64 << 20), arg_int(a, "offset", 0), arg_int(a, "limit", 50)
        )
    call.on_abandon(lambda: pageexport_discard(result.output_directory))
    return _evidence(
        call, "analyze_web_bundle", params, result, result.limitations, confidence="derived", links=[graph_id]
    )


def pageexport_discard(directory: str) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


def _electron_scenario(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import electron_scenario

    result = electron_scenario.capture(call)
    links = [result.main.evidence_id] if result.main is not None else []
    # The request as given: literal values only, no secrets.
    return _evidence(call, "capture_electron_scenario", dict(call.args), result, result.limitations, links=links)


def _capture(call: ToolCall) -> Evidence:
    from rea_plugins.cdp import har

    a = call.args
    origins = allowed_origins(arg_strs(a, "allowed_origins"))
    offset, limit = arg_int(a, "offset", 0), arg_int(a, "limit", 50)
    result = har.read_capture(arg_str(a, "path", ""), origins, offset, limit, call.ctx)
    params: Arguments = {
        "capture_sha256": result.source.sha256,
        "allowed_origins": list[JSONValue](origins),
        "offset": offset,
        "limit": limit,
    }
    return _evidence(call, "inspect_web_network_capture", params, result, result.limitations)


INSPECT_WEB_EVENT_LISTENERS = ToolDef(
    name="inspect_web_event_listeners",
    result_type=ListenerInventory,
    family=FAMILY,
    description=(
        "List the event listeners of a page's document tree or of the nodes CSS selectors match: type, node, "
        "capture/once/passive and the handler's script position, mapped through its source map. Passive: reads "
        "DOMDebugger.getEventListeners, evaluates nothing."
    ),
    input_schema=LISTENERS_SCHEMA,
    handler=_listeners,
    effects=_OBSERVE,
    examples=(schemas.PAGE_EXAMPLE, {**schemas.PAGE_EXAMPLE, "selectors": ["button", "#search"]}),
)

TRACE_WEB_MODULE_IMPORTS = ToolDef(
    name="trace_web_module_imports",
    result_type=ModuleGraph,
    family=FAMILY,
    description=(
        "Trace a page's ES module graph: each module script it parsed with its static import, re-export and "
        "literal dynamic-import specifiers, paged. Each is resolved against its URL and marked loaded, not loaded, "
        "bare or outside allowed_origins."
    ),
    input_schema=IMPORTS_SCHEMA,
    handler=_imports,
    effects=_OBSERVE,
    examples=(schemas.PAGE_EXAMPLE,),
)

TRACE_WEB_SOURCE_LOCATION = ToolDef(
    name="trace_web_source_location",
    result_type=SourceTrace,
    family=FAMILY,
    description=(
        "Map a generated page location (script_url or script_id, 1-based line and column: a stack frame, a "
        "listener) through the script's source map to the original source, line, column, name and line text."
    ),
    input_schema=LOCATION_SCHEMA,
    handler=_location,
    effects=_OBSERVE,
    examples=(
        {**schemas.PAGE_EXAMPLE, "script_url": schemas.ORIGIN_EXAMPLE + "/bundle.js", "line": 1, "column": 2048},
    ),
)

EXPORT_WEB_SCRIPTS = ToolDef(
    name="export_web_scripts",
    result_type=ScriptExport,
    family=FAMILY,
    description=(
        "Write the scripts a page holds (on allowed_origins, inline ones too) to a fresh directory rea makes, each "
        "with its SHA-256; rea-scripts.json there lists them all, the answer pages them."
    ),
    input_schema=EXPORT_SCHEMA,
    handler=_export,
    effects=_EXPORT,
    examples=(schemas.PAGE_EXAMPLE,),
)

INSPECT_WEB_NETWORK_CAPTURE = ToolDef(
    name="inspect_web_network_capture",
    result_type=NetworkCapture,
    family=FAMILY,
    description=(
        "Read a recorded HAR capture as the request records inspect_web_page gives (method, URL, status, type, "
        "size, initiator), paged. Secret-looking query values and URL credentials are redacted; header values and "
        "bodies are never read."
    ),
    input_schema=CAPTURE_SCHEMA,
    handler=_capture,
    effects=_LOCAL,
    examples=(
        {"path": "/captures/session.har"},
        {"path": "/captures/session.har", "allowed_origins": ["https://app.example.test"]},
    ),
    cli_subject="path",
)

OBSERVE_WEB_SESSION = ToolDef(
    name="observe_web_session",
    result_type=pagetime_types()[0],
    family=FAMILY,
    description=(
        "Observe a page for observation_ms while the user drives it: navigations, loads, requests and responses, "
        "console messages and exceptions, with DOM mutation counts per second. Passive: evaluates, navigates and "
        "clicks nothing."
    ),
    input_schema=SESSION_SCHEMA,
    handler=_session,
    effects=_OBSERVE,
    examples=({**schemas.PAGE_EXAMPLE, "allowed_origins": [schemas.ORIGIN_EXAMPLE], "observation_ms": 10000},),
)

OBSERVE_WEB_EXECUTION = ToolDef(
    name="observe_web_execution",
    result_type=pagetime_types()[1],
    family=FAMILY,
    description=(
        "Observe which scripts ran and which event listeners fired on a page during observation_ms, by V8's "
        "precise coverage call counts joined to each listener's handler. Nothing is evaluated or driven; the page "
        "runs a little slower during the window."
    ),
    input_schema=EXECUTION_SCHEMA,
    handler=_execution,
    effects=_OBSERVE,
    examples=({**schemas.PAGE_EXAMPLE, "observation_ms": 10000},),
)

LIST_ELECTRON_TARGETS = ToolDef(
    name="list_electron_targets",
    result_type=electron_types()[0],
    family=FAMILY,
    description=(
        "List the renderer pages of an Electron app's loopback DevTools endpoint (--remote-debugging-port) whose "
        "file:// URLs lie inside allowed_file_roots; other targets are counted. Its main process is a V8 inspector "
        "target: list_javascript_runtime_targets."
    ),
    input_schema=LIST_ELECTRON_SCHEMA,
    handler=_list_electron,
    effects=_OBSERVE,
    examples=({"cdp_endpoint": schemas.ENDPOINT_EXAMPLE, "allowed_file_roots": ["/opt/App/resources/app"]},),
    cli_subject="cdp_endpoint",
)

INSPECT_ELECTRON_PAGE = ToolDef(
    name="inspect_electron_page",
    result_type=electron_types()[1],
    family=FAMILY,
    description=(
        "Passively inspect one Electron renderer (a file:// page inside allowed_file_roots): scripts with SHA-256 "
        "and source-map URL, execution contexts, console and DOM digest. Isolated worlds (a preload's) are listed; "
        "nothing is evaluated, navigated or clicked."
    ),
    input_schema=INSPECT_ELECTRON_SCHEMA,
    handler=_inspect_electron,
    effects=_OBSERVE,
    examples=({**schemas.PAGE_EXAMPLE, "allowed_file_roots": ["/opt/App/resources/app"]},),
)

ANALYZE_WEB_BUNDLE = ToolDef(
    name="analyze_web_bundle",
    task_support="optional",
    result_type=bundle_type(),
    family=FAMILY,
    description=(
        "Capture a page's scripts and the source maps they name into a fresh directory and analyze them as a "
        "JavaScript application graph (retained). It answers the chunks with their bundled modules and original "
        "sources, and endpoint candidates (URLs and API paths in string literals); passive toward the page."
    ),
    input_schema=BUNDLE_SCHEMA,
    handler=_bundle,
    effects=_EXPORT,
    examples=(schemas.PAGE_EXAMPLE,),
)

CAPTURE_ELECTRON_SCENARIO = ToolDef(
    name="capture_electron_scenario",
    task_support="optional",
    result_type=electron_scenario_type(),
    family=FAMILY,
    description=(
        "Launch an Electron app as an owned, sandboxed process (loopback DevTools and --inspect), run the declared "
        "actions on its first renderer, and capture the renderer and the main process. Runs the app's code: "
        "destructive."
    ),
    input_schema=electron_scenario_schema(),
    handler=_electron_scenario,
    effects=schemas.SCENARIO_EFFECTS,
    examples=(
        {
            "schema_version": 1,
            "executable_path": "/opt/App/app",
            "application_root": "/opt/App/resources/app",
            "application_path": "/opt/App/resources/app",
            "actions": [
                {
                    "step_id": "search",
                    "action": "fill",
                    "locator": {"kind": "css", "selector": "#q"},
                    "value": {"source": "literal", "value": "invoices"},
                }
            ],
        },
    ),
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [
        CAPTURE_ELECTRON_SCENARIO,
        ANALYZE_WEB_BUNDLE,
        LIST_ELECTRON_TARGETS,
        INSPECT_ELECTRON_PAGE,
        OBSERVE_WEB_SESSION,
        OBSERVE_WEB_EXECUTION,
        INSPECT_WEB_EVENT_LISTENERS,
        TRACE_WEB_MODULE_IMPORTS,
        TRACE_WEB_SOURCE_LOCATION,
        EXPORT_WEB_SCRIPTS,
        INSPECT_WEB_NETWORK_CAPTURE,
    ]
