"""The JavaScript application tool family, declared as ToolDef values (handlers import engines lazily)."""

from __future__ import annotations

from rea.plugin import (
    FORMAT_PROPERTY,
    Evidence,
    JSONObject,
    ToolCall,
    ToolDef,
    ToolEffects,
    evidence_input,
    with_evidence_defs,
)
from rea_plugins.javascript.model import Application
from rea_plugins.javascript.results import (
    ApplicationSummary,
    ExportShapeComparison,
    FeatureTrace,
    LocationMapping,
    SemanticsTrace,
    SourceToBundle,
    VersionComparison,
)

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


def _analyze(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import application

    return application.handle(call)


def _trace_feature(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import trace

    return trace.trace_feature(call)


def _trace_semantics(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import trace

    return trace.trace_semantics(call)


def _map_location(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import locate

    return locate.map_location(call)


def _compare_versions(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import compare

    return compare.compare_versions(call)


def _compare_source(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import compare

    return compare.compare_source_to_bundle(call)


def _compare_exports(call: ToolCall) -> Evidence:
    from rea_plugins.javascript import compare

    return compare.compare_export_shapes(call)


ANALYZE = ToolDef(
    name="analyze_javascript_application",
    task_support="optional",
    result_type=(ApplicationSummary, Application),
    family=FAMILY,
    description=(
        "Statically analyze a JavaScript/Electron application directory or .asar archive without running it: a "
        "summary and a page of its modules, the complete graph retained for the workflows. The graph (detail "
        "'complete' returns it whole) holds modules (source files, bundles, esbuild/webpack bundled modules), "
        "import edges, exports with static shapes, strings (template literals by their static text), functions "
        "named as a reader would, Electron IPC channels, entry points and source maps with decoded mappings "
        "(each generated function's original file, line and name)."
    ),
    input_schema={
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
    handler=_analyze,
    effects=_EVIDENCE_EFFECTS,
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

TRACE_FEATURE = ToolDef(
    name="trace_application_feature",
    result_type=FeatureTrace,
    family=FAMILY,
    description=(
        "Trace a seed (module, string literal or symbol) through application Evidence. It finds the matching "
        "modules and functions and everything connected to them by import and bundle edges, bounded by "
        "max_depth and max_nodes. Runs nothing again."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
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
            "required": ["application", "seed"],
            "additionalProperties": False,
        }
    ),
    handler=_trace_feature,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "application": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
            "seed": {"kind": "string", "value": "search", "match": "substring"},
        },
    ),
)

TRACE_SEMANTICS = ToolDef(
    name="trace_javascript_semantics",
    result_type=SemanticsTrace,
    family=FAMILY,
    description=(
        "Bounded call/return, assignment and closure relations of one function or module from "
        "application Evidence. It shows what it calls (resolved across imports where static), what it "
        "returns, what it assigns and which variables its closures capture. Runs nothing again."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
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
            "required": ["application", "target"],
            "additionalProperties": False,
        }
    ),
    handler=_trace_semantics,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "application": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
            "target": {"kind": "function", "value": "main"},
        },
    ),
)

MAP_LOCATION = ToolDef(
    name="map_javascript_location",
    result_type=LocationMapping,
    family=FAMILY,
    description=(
        "Map a generated file's line and column (a stack frame in a minified bundle) to its original source file, "
        "line, column and name through the file's source map. It gives the original line's text and the function "
        "holding the position; the map is read again from the analyzed directory and checked unchanged."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
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
            "required": ["application", "module", "line", "column"],
            "additionalProperties": False,
        }
    ),
    handler=_map_location,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "application": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
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

COMPARE_VERSIONS = ToolDef(
    name="compare_application_versions",
    task_support="optional",
    result_type=VersionComparison,
    family=FAMILY,
    description=(
        "Compare two versions' application Evidence: counts, then a page of the changed and moved modules with "
        "their import, export, string and function differences, and entry-point changes. Modules match by path, "
        "then by content hash (ambiguous candidates are reported, never guessed); functions match by original "
        "(source-map) name or name, then by structure, so a minifier's renames are reported as renames."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
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
            "required": ["left", "right"],
            "additionalProperties": False,
        }
    ),
    handler=_compare_versions,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "left": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
            "right": {"kind": "retained-evidence", "evidence_id": "ev_" + "1" * 64},
        },
    ),
)

COMPARE_SOURCE = ToolDef(
    name="compare_source_to_bundle",
    result_type=SourceToBundle,
    family=FAMILY,
    description=(
        "Map source files to the bundle modules built from them, through source maps (sources and "
        "sourcesContent), bundled-module paths and content hashes. Give 'source' and 'bundle' "
        "application Evidence, or one 'application' holding both."
    ),
    input_schema=with_evidence_defs(
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
    handler=_compare_source,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "source": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
            "bundle": {"kind": "retained-evidence", "evidence_id": "ev_" + "1" * 64},
        },
    ),
)

COMPARE_EXPORTS = ToolDef(
    name="compare_javascript_export_shapes",
    result_type=ExportShapeComparison,
    family=FAMILY,
    description=(
        "Compare the static shape of one export (function parameters and return shapes, object keys, class "
        "members) in two versions' application Evidence. It gives presence present|absent|unknown-coverage "
        "on each side and the differences."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
                **_PAIR,
                "export": {"type": "string", "minLength": 1, "description": "Export name ('default' for default)."},
                "module": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Module path or node_id; required when several modules export the name.",
                },
            },
            "required": ["left", "right", "export"],
            "additionalProperties": False,
        }
    ),
    handler=_compare_exports,
    effects=_EVIDENCE_EFFECTS,
    examples=(
        {
            "left": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
            "right": {"kind": "retained-evidence", "evidence_id": "ev_" + "1" * 64},
            "export": "search",
            "module": "src/search.js",
        },
    ),
)


def _recover(call: ToolCall) -> Evidence:
    import msgspec

    from rea.plugin import OperationResult, ProviderIdentity
    from rea_plugins.javascript import recover

    result = recover.recover(call)
    # A cancel arriving after this handler returns still removes what the unbundler wrote.
    call.on_abandon(lambda: recover.discard(result.output_directory))
    provider = ProviderIdentity(id="wakaru", name="Wakaru unbundler", version=result.unbundler.version)
    out = OperationResult(normalized=msgspec.to_builtins(result), limitations=result.limitations, confidence="derived")
    params = {"input_sha256": result.input_sha256, "offset": result.offset, "limit": result.limit}
    return call.session.evidence(
        "recover_javascript_sources", params, out, bound=False, provider=provider, analysis_profile=None
    )


def _recovered_type() -> type:
    from rea_plugins.javascript.recovered import RecoveredSources

    return RecoveredSources


RECOVER_SOURCES = ToolDef(
    name="recover_javascript_sources",
    result_type=_recovered_type(),
    family=FAMILY,
    description=(
        "Split a webpack, browserify or esbuild bundle back into its modules with Wakaru, written to a fresh "
        "directory, each hashed and linked to its byte ranges in the bundle. Wakaru runs as an owned, sandboxed "
        "process (no network, time and memory bound); the bundle is never executed."
    ),
    input_schema={
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
    handler=_recover,
    effects=ToolEffects(records_evidence=True, launches_process=True, writes_filesystem=True, idempotent=False),
    examples=({"input_path": "/opt/App/resources/app/dist/main.js"},),
    cli_subject="input_path",
)

TOOLS = (
    RECOVER_SOURCES,
    ANALYZE,
    TRACE_FEATURE,
    TRACE_SEMANTICS,
    MAP_LOCATION,
    COMPARE_VERSIONS,
    COMPARE_SOURCE,
    COMPARE_EXPORTS,
)
