"""The V8 inspector tools as ToolDefs: targets, a passive observation window, and the join with a static graph."""

from __future__ import annotations

import msgspec

from rea.plugin import Arguments
from rea.plugin import Confidence
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import __version__ as rea_version
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_list
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import evidence_input
from rea.plugin import with_evidence_defs
from rea_plugins.runtime import inspector
from rea_plugins.runtime.model import RuntimeKind
from rea_plugins.runtime.model import RuntimeObservation
from rea_plugins.runtime.model import RuntimeObservationSummary
from rea_plugins.runtime.model import RuntimeReconciliation
from rea_plugins.runtime.model import RuntimeTargetList

FAMILY = "runtime"
PROVIDER = ProviderIdentity(id="v8-inspector", name="rea V8 inspector tools", version=rea_version)
ENDPOINT_EXAMPLE = "http://127.0.0.1:9229"
TARGET_EXAMPLE = "TARGET_ID_FROM_LIST_JAVASCRIPT_RUNTIME_TARGETS"
MAX_INT32 = 2_147_483_647
SUMMARY_LIMIT = 10
SUMMARY_EVENTS = 10

# Attaching to a loopback inspector is network access; nothing here evaluates, pauses or drives the program.
_OBSERVE = ToolEffects(records_evidence=True, accesses_network=True)
_LOCAL = ToolEffects(records_evidence=True)

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
_ENDPOINT: JSONObject = {
    "type": "string",
    "pattern": r"^http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}/?$",
    "maxLength": 64,
    "description": "Loopback inspector endpoint: http://127.0.0.1:PORT (node --inspect=127.0.0.1:PORT).",
    "examples": [ENDPOINT_EXAMPLE],
}
_ROOTS: JSONObject = {
    "type": "array",
    "maxItems": 32,
    "items": {"type": "string", "minLength": 1, "maxLength": 4096},
    "description": "Directories whose file:// targets and scripts are in scope (default: every file).",
}
_ORIGINS: JSONObject = {
    "type": "array",
    "maxItems": 32,
    "items": {"type": "string", "pattern": r"^https?://[^/?#@\s*]+$", "maxLength": 2048},
    "description": "Exact http(s) origins whose targets and scripts are in scope (default: every origin).",
}
RUNTIME_KINDS: tuple[RuntimeKind, ...] = ("node", "electron-main", "electron-preload", "electron-renderer")
_KIND: JSONObject = {
    "type": "string",
    "enum": list[JSONValue](RUNTIME_KINDS),
    "description": "What the target runs: node, or an Electron main, preload or renderer.",
}


def _int(default: int, maximum: int, description: str, minimum: int = 0) -> JSONObject:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "default": default, "description": description}


def _obj(properties: JSONObject, required: list[str] | None = None, description: str = "") -> JSONObject:
    out: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if description:
        out["description"] = description
    if required:
        out["required"] = list[JSONValue](required)
    return out


LIST_SCHEMA = _obj(
    {
        "inspector_endpoint": _ENDPOINT,
        "allowed_file_roots": _ROOTS,
        "allowed_origins": _ORIGINS,
        "offset": _int(0, MAX_INT32, "Targets to skip, for paging."),
        "limit": _int(50, 1000, "At most this many targets (sorted by target_id).", minimum=1),
    },
    ["inspector_endpoint"],
)

OBSERVE_SCHEMA = _obj(
    {
        "inspector_endpoint": _ENDPOINT,
        "target_id": {"type": "string", "minLength": 1, "maxLength": 256, "description": "A target_id to observe."},
        "runtime_kind": _KIND,
        "allowed_file_roots": _ROOTS,
        "allowed_origins": _ORIGINS,
        "observation_ms": _int(1000, 60_000, "How long to listen after attaching (ms)."),
        "detail": {
            "type": "string",
            "enum": ["summary", "complete"],
            "default": "summary",
            "description": "summary: counts and a page of scripts (the whole record retained); complete: all.",
        },
        "offset": _int(0, MAX_INT32, "Scripts to skip in the summary, for paging."),
        "limit": _int(SUMMARY_LIMIT, 1000, "Scripts listed in the summary.", minimum=1),
        "limits": _obj(
            {
                "max_scripts": _int(5000, 100_000, "Application scripts recorded (more are counted).", minimum=1),
                "max_source_bytes": _int(64 << 20, 1 << 30, "Script source bytes read to hash them."),
                "max_console_events": _int(200, 100_000, "Console messages kept."),
                "max_exceptions": _int(100, 100_000, "Exceptions kept."),
            },
            description="Bounds of the observation (scripts listed, source bytes hashed, messages kept).",
        ),
    },
    ["inspector_endpoint", "target_id", "runtime_kind"],
)

RECONCILE_SCHEMA = with_evidence_defs(
    _obj(
        {
            "runtime_observations": {
                "type": "array",
                "minItems": 1,
                "maxItems": 16,
                "items": evidence_input("observe_javascript_runtime Evidence, inline or retained."),
                "description": "observe_javascript_runtime Evidence, inline or retained.",
            },
            "static_layers": {
                "type": "array",
                "minItems": 1,
                "maxItems": 16,
                "items": {
                    "description": "analyze_javascript_application Evidence (inline or retained), or "
                    "{input_path, format} "
                    "to analyze now.",
                    "anyOf": [
                        *(arg_list(evidence_input("analyze_javascript_application Evidence."), "anyOf") or []),
                        _obj(
                            {
                                "input_path": {
                                    "type": "string",
                                    "minLength": 1,
                                    "description": "The application to analyze.",
                                },
                                "format": {
                                    "type": "string",
                                    "description": "As analyze_javascript_application's (auto).",
                                },
                            },
                            ["input_path"],
                            description="An application analyzed now by analyze_javascript_application.",
                        ),
                    ],
                },
                "description": "The static application graphs to join against.",
            },
            "limits": _obj(
                {
                    "offset": _int(0, MAX_INT32, "Rows of each list to skip, for paging."),
                    "limit": _int(20, 1000, "Rows of each list answered.", minimum=1),
                },
                description="Paging of the three lists (one offset and limit for each).",
            ),
        },
        ["runtime_observations", "static_layers"],
    )
)


def _evidence(
    call: ToolCall,
    operation: str,
    params: Arguments,
    result: msgspec.Struct,
    limitations: list[str],
    confidence: Confidence,
    links: list[str] | None = None,
) -> Evidence:
    """The Evidence of a runtime tool's answer (``params`` as recorded, the provider the V8 inspector tools)."""
    out = OperationResult(normalized=msgspec.to_builtins(result), limitations=limitations, confidence=confidence)
    return call.session.evidence(
        operation, params, out, bound=False, provider=PROVIDER, analysis_profile=None, links=links
    )


def _scope(call: ToolCall) -> tuple[str, list[str], list[str]]:
    """The call's inspector endpoint, allowed file roots and allowed origins, checked."""
    a = call.args
    return (
        inspector.parse_endpoint(arg_str(a, "inspector_endpoint", "")),
        inspector.file_roots(arg_strs(a, "allowed_file_roots")),
        inspector.allowed_origins(arg_strs(a, "allowed_origins")),
    )


def _list(call: ToolCall) -> Evidence:
    a = call.args
    endpoint, roots, origins = _scope(call)
    offset, limit = arg_int(a, "offset", 0), arg_int(a, "limit", 50)
    listing = inspector.list_targets(endpoint, roots, origins, offset, limit, call.ctx)
    params: Arguments = {
        "inspector_endpoint": endpoint,
        "allowed_file_roots": list[JSONValue](roots),
        "allowed_origins": list[JSONValue](origins),
        "offset": offset,
        "limit": limit,
    }
    return _evidence(
        call, "list_javascript_runtime_targets", params, listing, listing.limitations, confidence="observed"
    )


def _observe(call: ToolCall) -> Evidence:
    a = call.args
    endpoint, roots, origins = _scope(call)
    given = arg_object(a, "limits") or {}
    limits = inspector.Limits(
        **{k: v for k in inspector.Limits.__dataclass_fields__ if (v := arg_int(given, k)) is not None}
    )
    observation_ms = arg_int(a, "observation_ms", 1000)
    # Both are required by the input schema: the defaults are never read.
    target_id = arg_str(a, "target_id", "")
    runtime_kind = arg_choice(a, "runtime_kind", RUNTIME_KINDS, RUNTIME_KINDS[0])
    obs = inspector.observe(endpoint, target_id, runtime_kind, roots, origins, observation_ms, limits, call.ctx)
    call.ctx.finish(
        f"runtime: {obs.counts.application} application scripts, {len(obs.console)} console messages, "
        f"{len(obs.exceptions)} exceptions"
    )
    params: Arguments = {
        "inspector_endpoint": endpoint,
        "target_id": target_id,
        "runtime_kind": runtime_kind,
        "allowed_file_roots": list[JSONValue](roots),
        "allowed_origins": list[JSONValue](origins),
        "observation_ms": observation_ms,
        "limits": {k: getattr(limits, k) for k in inspector.Limits.__dataclass_fields__},
    }
    ev = _evidence(call, "observe_javascript_runtime", params, obs, obs.limitations, confidence="observed")
    if arg_str(a, "detail", "summary") == "complete":
        return ev
    # The complete observation stays retained (reconcile takes its id, or this summary's); the caller gets the counts
    # and one page of the scripts.
    call.session.ledger.record(ev)
    offset, limit = arg_int(a, "offset", 0), arg_int(a, "limit", SUMMARY_LIMIT)
    summary = _summary(ev.evidence_id, obs, offset, limit)
    return _evidence(
        call,
        "observe_javascript_runtime",
        {**params, "detail": "summary", "offset": offset, "limit": limit},
        summary,
        obs.limitations,
        confidence="observed",
        links=[ev.evidence_id],
    )


def _summary(complete_id: str, obs: RuntimeObservation, offset: int, limit: int) -> RuntimeObservationSummary:
    end = offset + limit
    return RuntimeObservationSummary(
        complete_evidence_id=complete_id,
        runtime=obs.runtime,
        runtime_kind=obs.runtime_kind,
        target=obs.target,
        observation_ms=obs.observation_ms,
        counts=obs.counts,
        offset=offset,
        limit=limit,
        total=len(obs.scripts),
        next_offset=end if end < len(obs.scripts) else None,
        scripts=obs.scripts[offset:end],
        execution_contexts=len(obs.execution_contexts),
        console=obs.console[:SUMMARY_EVENTS],
        console_total=len(obs.console) + obs.console_dropped,
        exceptions=obs.exceptions[:SUMMARY_EVENTS],
        exceptions_total=len(obs.exceptions) + obs.exceptions_dropped,
        limitations=obs.limitations,
    )


def _reconcile(call: ToolCall) -> Evidence:
    from rea_plugins.runtime.reconcile import reconcile

    result, links = reconcile(call)
    params: Arguments = {
        "runtime_observations": list[JSONValue](result.runtime_evidence_ids),
        "static_layers": list[JSONValue](result.static_evidence_ids),
        "limits": {"offset": result.page.offset, "limit": result.page.limit},
    }
    return _evidence(call, "reconcile_javascript_runtime", params, result, result.limitations, "derived", links)


LIST_JAVASCRIPT_RUNTIME_TARGETS = ToolDef(
    name="list_javascript_runtime_targets",
    result_type=RuntimeTargetList,
    family=FAMILY,
    description=(
        "List the debuggable targets of a loopback V8 inspector (node --inspect's /json/list, or an Electron app's "
        "DevTools port): target_id, type, title and URL. Targets outside allowed_file_roots and allowed_origins are "
        "counted; use a target_id with observe_javascript_runtime."
    ),
    input_schema=LIST_SCHEMA,
    handler=_list,
    effects=_OBSERVE,
    examples=(
        {"inspector_endpoint": ENDPOINT_EXAMPLE},
        {"inspector_endpoint": ENDPOINT_EXAMPLE, "allowed_file_roots": ["/opt/app"]},
    ),
    cli_subject="inspector_endpoint",
)

OBSERVE_JAVASCRIPT_RUNTIME = ToolDef(
    name="observe_javascript_runtime",
    result_type=(RuntimeObservationSummary, RuntimeObservation),
    family=FAMILY,
    description=(
        "Passively observe one V8 inspector target for observation_ms: the scripts it parsed (URL, V8 hash, SHA-256 "
        "of the source, source-map URL), execution contexts, console messages and exceptions. It sets no "
        "breakpoint, evaluates nothing and skips every pause."
    ),
    input_schema=OBSERVE_SCHEMA,
    handler=_observe,
    effects=_OBSERVE,
    examples=(
        {"inspector_endpoint": ENDPOINT_EXAMPLE, "target_id": TARGET_EXAMPLE, "runtime_kind": "node"},
        {
            "inspector_endpoint": ENDPOINT_EXAMPLE,
            "target_id": TARGET_EXAMPLE,
            "runtime_kind": "electron-main",
            "allowed_file_roots": ["/opt/app/resources"],
            "observation_ms": 3000,
        },
    ),
)

RECONCILE_JAVASCRIPT_RUNTIME = ToolDef(
    name="reconcile_javascript_runtime",
    result_type=RuntimeReconciliation,
    family=FAMILY,
    description=(
        "Join the scripts a runtime loaded (observe_javascript_runtime) to a static application graph by content "
        "hash and source map. It answers loaded-and-known, loaded-but-unknown and known-but-never-loaded, paged; a "
        "static layer is analyze_javascript_application Evidence or {input_path} to analyze now."
    ),
    input_schema=RECONCILE_SCHEMA,
    handler=_reconcile,
    effects=_LOCAL,
    examples=(
        {
            "runtime_observations": [{"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64}],
            "static_layers": [{"input_path": "/opt/app"}],
        },
    ),
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [LIST_JAVASCRIPT_RUNTIME_TARGETS, OBSERVE_JAVASCRIPT_RUNTIME, RECONCILE_JAVASCRIPT_RUNTIME]
