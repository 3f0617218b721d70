"""The JavaScript application tool family, declared as ToolDef values (handlers import engines lazily)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rea.plugin import FORMAT_PROPERTY
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import evidence_input
from rea.plugin import lazy_handler
from rea.plugin import with_evidence_defs
from rea_plugins.javascript.model import Application
from rea_plugins.javascript.results import ApplicationSummary
from rea_plugins.javascript.results import ExportShapeComparison
from rea_plugins.javascript.results import FeatureTrace
from rea_plugins.javascript.results import LocationMapping
from rea_plugins.javascript.results import SemanticsTrace
from rea_plugins.javascript.results import SourceToBundle
from rea_plugins.javascript.results import VersionComparison

FAMILY = "application"

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
APPLICATION_INPUT: JSONObject = evidence_input("analyze_javascript_application Evidence, inline or retained.")
LIMIT_PROPS: JSONObject = {
    "max_nodes": {
        "type": "integer",
        "minimum": 1,
        "maximum": 10000,
        "default": 200,
        "description": "At most this many nodes (modules and functions) in the result.",
    },
    "max_depth": {
        "type": "integer",
        "minimum": 0,
        "maximum": 64,
        "default": 4,
        "description": "Follow edges at most this many hops from the seed.",
    },
}
_EVIDENCE_EFFECTS = ToolEffects(records_evidence=True)


def _tool(
    handler: Callable[[ToolCall], Evidence | JSONObject],
    name: str,
    result_type: type | tuple[type, ...],
    description: str,
    input_schema: JSONObject,
    *,
    # Arguments as a call sends them: JSON the input schema shapes.
    examples: tuple[JSONObject, ...],
    effects: ToolEffects = _EVIDENCE_EFFECTS,
    cli_subject: str = "",
    task_support: Literal["forbidden", "optional", "required"] = "forbidden",
) -> ToolDef:
    """One tool of the application family."""
    return ToolDef(
        name=name,
        task_support=task_support,
        result_type=result_type,
        family=FAMILY,
        description=description,
        input_schema=input_schema,
        handler=handler,
        effects=effects,
        examples=examples,
        cli_subject=cli_subject,
    )


def _over_evidence(properties: JSONObject, *required: str) -> JSONObject:
    """The input schema of a workflow over application Evidence: these properties, no others, with the Evidence defs."""
    return with_evidence_defs(
        {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}
    )


def _retained(digit: str) -> JSONObject:
    """An example retained-Evidence reference (a made-up id of one repeated digit)."""
    return {"kind": "retained-evidence", "evidence_id": "ev_" + digit * 64}


ANALYZE = _tool(
    lazy_handler("rea_plugins.javascript.application", "handle"),
    "analyze_javascript_application",
    (ApplicationSummary, Application),
    "Statically analyze a JavaScript/Electron application directory or .asar archive without running it: a "
    "summary and a page of its modules, the complete graph retained for the workflows. The graph (detail "
    "'complete' returns it whole) holds modules (source files, bundles, esbuild/webpack bundled modules), "
    "import edges, exports with static shapes, strings (template literals by their static text), functions "
    "named as a reader would, Electron IPC channels, entry points and source maps with decoded mappings "
    "(each generated function's original file, line and name).",
    {
        "type": "object",
        "properties": {
            "input_path": {
                "type": "string",
                "minLength": 1,
                "description": "Application directory or .asar file.",
                "examples": ["/opt/App/resources/app.asar"],
            },
            "format": {
                "type": "string",
                "enum": ["auto", "asar", "directory"],
                "default": "auto",
                "description": "Input kind; auto detects directories and ASAR headers.",
            },
            "detail": {
                "type": "string",
                "enum": ["summary", "complete"],
                "default": "summary",
                "description": "summary (counts and a page of modules; the graph retained) or the complete graph.",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "First module of the summary's page.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 20,
                "description": "At most this many modules in the summary's page.",
            },
            "integrity_policy": {
                "type": "string",
                "enum": ["fail", "record-and-continue"],
                "default": "fail",
                "description": (
                    "fail stops at the first ASAR integrity mismatch; "
                    "record-and-continue records it and marks coverage partial."
                ),
            },
            "limits": {
                "type": "object",
                "description": "Bounds on the work; exceeding one skips files and marks coverage partial.",
                "properties": {
                    "max_files": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1_000_000,
                        "description": "Most script, map, HTML and package.json files read.",
                    },
                    "max_bytes_per_file": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1 << 30,
                        "description": "Larger files are skipped.",
                    },
                    "max_total_bytes": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1 << 34,
                        "description": "Most bytes read in total.",
                    },
                    "max_modules": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10_000_000,
                        "description": "Most modules (files plus bundled modules) in the graph.",
                    },
                },
                "additionalProperties": False,
                "examples": [{"max_files": 5000, "max_bytes_per_file": 8388608}],
            },
        },
        "required": ["input_path"],
        "additionalProperties": False,
    },
    task_support="optional",
    examples=(
        {"input_path": "/opt/App/resources/app.asar"},
        {"input_path": "./my-app", "offset": 50, "integrity_policy": "record-and-continue"},
        {"input_path": "./my-app", "detail": "complete"},
    ),
    cli_subject="input_path",
)

SEED_SCHEMA: JSONObject = {
    "type": "object",
    "description": "Start: a module (path or node_id), string literal or symbol (function/export).",
    "properties": {
        "kind": {"type": "string", "enum": ["module", "string", "symbol"], "description": "What value names."},
        "value": {"type": "string", "minLength": 1, "description": "Text to match."},
        "match": {
            "type": "string",
            "enum": ["exact", "substring"],
            "default": "exact",
            "description": "How value matches.",
        },
    },
    "required": ["kind", "value"],
    "additionalProperties": False,
    "examples": [{"kind": "module", "value": "src/main.js", "match": "exact"}],
}

TRACE_FEATURE = _tool(
    lazy_handler("rea_plugins.javascript.trace", "trace_feature"),
    "trace_application_feature",
    FeatureTrace,
    "Trace a seed (module, string literal or symbol) through application Evidence. It finds the matching "
    "modules and functions and everything connected to them by import and bundle edges, bounded by "
    "max_depth and max_nodes. Runs nothing again.",
    _over_evidence(
        {
            "application": APPLICATION_INPUT,
            "seed": SEED_SCHEMA,
            **LIMIT_PROPS,
            "direction": {
                "type": "string",
                "enum": ["both", "imports", "importers"],
                "default": "both",
                "description": "Follow edges to imported modules, to importers, or both.",
            },
            "format": FORMAT_PROPERTY,
        },
        "application",
        "seed",
    ),
    examples=(
        {
            "application": _retained("0"),
            "seed": {"kind": "string", "value": "search", "match": "substring"},
        },
    ),
)

TRACE_SEMANTICS = _tool(
    lazy_handler("rea_plugins.javascript.trace", "trace_semantics"),
    "trace_javascript_semantics",
    SemanticsTrace,
    "Bounded call/return, assignment and closure relations of one function or module from "
    "application Evidence. It shows what it calls (resolved across imports where static), what it "
    "returns, what it assigns and which variables its closures capture. Runs nothing again.",
    _over_evidence(
        {
            "application": APPLICATION_INPUT,
            "target": {
                "type": "object",
                "description": "A function (name or fn: node_id) or a module (path or mod: node_id).",
                "properties": {
                    "kind": {"type": "string", "enum": ["function", "module"], "description": "What value names."},
                    "value": {"type": "string", "minLength": 1, "description": "Name, path or node_id."},
                    "module": {"type": "string", "description": "Restrict a function name to this module path."},
                },
                "required": ["kind", "value"],
                "additionalProperties": False,
                "examples": [{"kind": "function", "value": "main", "module": "src/main.js"}],
            },
            **LIMIT_PROPS,
        },
        "application",
        "target",
    ),
    examples=(
        {
            "application": _retained("0"),
            "target": {"kind": "function", "value": "main"},
        },
    ),
)

MAP_LOCATION = _tool(
    lazy_handler("rea_plugins.javascript.locate", "map_location"),
    "map_javascript_location",
    LocationMapping,
    "Map a generated file's line and column (a stack frame in a minified bundle) to its original source file, "
    "line, column and name through the file's source map. It gives the original line's text and the function "
    "holding the position; the map is read again from the analyzed directory and checked unchanged.",
    _over_evidence(
        {
            "application": APPLICATION_INPUT,
            "module": {
                "type": "string",
                "minLength": 1,
                "description": "The generated file: its module path or node_id.",
                "examples": ["dist/app.js"],
            },
            "line": {"type": "integer", "minimum": 1, "description": "1-based line in the generated file."},
            "column": {"type": "integer", "minimum": 1, "description": "1-based column in the generated file."},
        },
        "application",
        "module",
        "line",
        "column",
    ),
    examples=(
        {
            "application": _retained("0"),
            "module": "dist/app.js",
            "line": 1,
            "column": 4567,
        },
    ),
)

_PAIR: JSONObject = {
    "left": {**APPLICATION_INPUT, "description": "The older version's application Evidence (inline or retained)."},
    "right": {**APPLICATION_INPUT, "description": "The newer version's application Evidence (inline or retained)."},
}

COMPARE_VERSIONS = _tool(
    lazy_handler("rea_plugins.javascript.compare", "compare_versions"),
    "compare_application_versions",
    VersionComparison,
    "Compare two versions' application Evidence: counts, then a page of the changed and moved modules with "
    "their import, export, string and function differences, and entry-point changes. Modules match by path, "
    "then by content hash (ambiguous candidates are reported, never guessed); functions match by original "
    "(source-map) name or name, then by structure, so a minifier's renames are reported as renames.",
    _over_evidence(
        {
            **_PAIR,
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "First listed module of the page.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 50,
                "description": "At most this many changed or moved modules, each with its differences.",
            },
            "include_unchanged": {
                "type": "boolean",
                "default": False,
                "description": "List the modules unchanged in place too (they are always counted).",
            },
            "format": FORMAT_PROPERTY,
        },
        "left",
        "right",
    ),
    task_support="optional",
    examples=(
        {
            "left": _retained("0"),
            "right": _retained("1"),
        },
    ),
)

COMPARE_SOURCE = _tool(
    lazy_handler("rea_plugins.javascript.compare", "compare_source_to_bundle"),
    "compare_source_to_bundle",
    SourceToBundle,
    "Map source files to the bundle modules built from them, through source maps (sources and "
    "sourcesContent), bundled-module paths and content hashes. Give 'source' and 'bundle' "
    "application Evidence, or one 'application' holding both.",
    with_evidence_defs(
        {
            "type": "object",
            "properties": {
                "application": {**APPLICATION_INPUT, "description": "One application holding sources and bundles."},
                "source": {**APPLICATION_INPUT, "description": "Application Evidence of the source tree."},
                "bundle": {**APPLICATION_INPUT, "description": "Application Evidence of the shipped bundles."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "First source of the page."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 1000,
                    "default": 50,
                    "description": "At most this many sources in the page.",
                },
            },
            "oneOf": [
                {
                    "title": "one application holding sources and bundles",
                    "required": ["application"],
                    "not": {"anyOf": [{"required": ["source"]}, {"required": ["bundle"]}]},
                },
                {
                    "title": "a source tree and its shipped bundles",
                    "required": ["source", "bundle"],
                    "not": {"required": ["application"]},
                },
            ],
            "additionalProperties": False,
        }
    ),
    examples=(
        {
            "source": _retained("0"),
            "bundle": _retained("1"),
        },
    ),
)

COMPARE_EXPORTS = _tool(
    lazy_handler("rea_plugins.javascript.compare", "compare_export_shapes"),
    "compare_javascript_export_shapes",
    ExportShapeComparison,
    "Compare the static shape of one export (function parameters and return shapes, object keys, class "
    "members) in two versions' application Evidence. It gives presence present|absent|unknown-coverage "
    "on each side and the differences.",
    _over_evidence(
        {
            **_PAIR,
            "export": {"type": "string", "minLength": 1, "description": "Export name ('default' for default)."},
            "module": {
                "type": "string",
                "minLength": 1,
                "description": "Module path or node_id; required when several modules export the name.",
            },
        },
        "left",
        "right",
        "export",
    ),
    examples=(
        {
            "left": _retained("0"),
            "right": _retained("1"),
            "export": "search",
            "module": "src/search.js",
        },
    ),
)


def _recover(call: ToolCall) -> Evidence:
    import msgspec

    from rea.plugin import OperationResult
    from rea.plugin import ProviderIdentity
    from rea_plugins.javascript import recover

    result = recover.recover(call)
    # A cancel arriving after this handler returns still removes what the unbundler wrote.
    call.on_abandon(lambda: recover.discard(result.output_directory))
    provider = ProviderIdentity(id="wakaru", name="Wakaru unbundler", version=result.unbundler.version)
    out = OperationResult(normalized=msgspec.to_builtins(result), limitations=result.limitations, confidence="derived")
    params: JSONObject = {"input_sha256": result.input_sha256, "offset": result.offset, "limit": result.limit}
    return call.session.evidence(
        "recover_javascript_sources", params, out, bound=False, provider=provider, analysis_profile=None
    )


def _recovered_type() -> type:
    from rea_plugins.javascript.recovered import RecoveredSources

    return RecoveredSources


RECOVER_SOURCES = _tool(
    _recover,
    "recover_javascript_sources",
    _recovered_type(),
    "Split a webpack, browserify or esbuild bundle back into its modules with Wakaru, written to a fresh "
    "directory, each hashed and linked to its byte ranges in the bundle. Wakaru runs as an owned, sandboxed "
    "process (no network, time and memory bound); the bundle is never executed.",
    {
        "type": "object",
        "properties": {
            "input_path": {"type": "string", "minLength": 1, "description": "The bundle file."},
            "limits": {
                "type": "object",
                "properties": {
                    "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 3_600_000, "default": 120_000}
                },
                "additionalProperties": False,
                "description": "How long the unbundler may run.",
            },
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Modules to skip, for paging."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 50,
                "description": "Modules listed (all are written).",
            },
        },
        "required": ["input_path"],
        "additionalProperties": False,
    },
    effects=ToolEffects(records_evidence=True, launches_process=True, writes_filesystem=True, idempotent=False),
    examples=({"input_path": "/opt/App/resources/app/dist/main.js"},),
    cli_subject="input_path",
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [
        RECOVER_SOURCES,
        ANALYZE,
        TRACE_FEATURE,
        TRACE_SEMANTICS,
        MAP_LOCATION,
        COMPARE_VERSIONS,
        COMPARE_SOURCE,
        COMPARE_EXPORTS,
    ]
