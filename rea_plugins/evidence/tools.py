"""Evidence tools: the session bundle, export, import, bundle files and analysis views (their definitions; the
plugin that registers them is ``rea_plugins.evidence``)."""

from __future__ import annotations

import msgspec

from rea.plugin import EVIDENCE_RECORD
from rea.plugin import LEAN_EVIDENCE_RECORD
from rea.plugin import AnalysisView
from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import Notebook
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import UnknownsRegistry
from rea.plugin import UnknownStore
from rea.plugin import arg_bool
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import bundle
from rea.plugin import views
from rea.plugin import with_evidence_defs

EV_ID_PATTERN = "^ev_[0-9a-f]{64}$"

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
FILTERS_SCHEMA: JSONObject = {
    "type": "object",
    "description": "Exact-match filters on summary records (all must match). Requires detail: summary.",
    "properties": {
        "evidence_id": {
            "type": "string",
            "pattern": EV_ID_PATTERN,
            "description": "One record's evidence_id.",
        },
        "operation": {
            "type": "string",
            "minLength": 1,
            "description": "The producing operation or tool name.",
            "examples": ["analyze_function"],
        },
        "target_sha256": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$",
            "description": "SHA-256 of the analysed artifact.",
        },
        "analysis_profile_digest": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$",
            "description": "The analysis_profile.digest the record was produced under.",
        },
        "procedure_address": {
            "type": "string",
            "minLength": 1,
            "description": "Address of the native procedure a record describes, e.g. 0x401136.",
            "examples": ["0x401136"],
        },
    },
    "additionalProperties": False,
}

DETAIL_SCHEMA: JSONObject = {
    "type": "string",
    "enum": ["complete", "summary"],
    "description": "complete (default): the whole bundle; summary: records without payloads, filterable.",
}

_SUMMARY_EXAMPLE: JSONObject = {"detail": "summary", "filters": {"operation": "analyze_function"}}


def _bundle_path(description: str) -> JSONObject:
    return {"type": "string", "minLength": 1, "description": description, "examples": ["/tmp/evidence.json"]}


class BundleImport(Record):
    """What import_evidence_bundle retained and merged."""

    # The annotation and unknowns stores' merge reports (the kernel's records, as its JSON).
    annotations: list[JSONObject]
    unknowns: list[JSONObject]
    path: str
    record_count: int
    added_count: int
    already_retained_count: int
    record_ids_digest: str
    evidence_ids: list[str]
    retained_evidence_count: int


def _notebooks(call: ToolCall, records: list[Evidence]) -> list[Notebook]:
    """The annotations of every artifact the records describe (they travel with the records)."""
    targets = sorted({r.subject.digest.sha256 for r in records if r.subject is not None})
    return [call.session.annotations.load(sha) for sha in targets]


def _unknowns(call: ToolCall, records: list[Evidence]) -> list[UnknownsRegistry]:
    """The residual unknowns of every artifact the records describe (they travel with the records too)."""
    store = UnknownStore(call.session.annotations.root)
    return [store.load(sha) for sha in sorted({r.subject.digest.sha256 for r in records if r.subject is not None})]


# The bundle tools answer the kernel's bundle documents (rea.plugin's bundle: its JSON, the export format), not a
# shape of this plugin's.
def _get_evidence_bundle(call: ToolCall) -> JSONObject:
    detail, filters = bundle.check_detail(call.args)
    records = list(call.session.ledger)
    return bundle.project(records, detail, filters, _notebooks(call, records), _unknowns(call, records))


def _export_evidence_bundle(call: ToolCall) -> JSONObject:
    records = list(call.session.ledger)
    return bundle.export(
        records,
        arg_str(call.args, "path", ""),  # required by the schema
        overwrite=arg_bool(call.args, "overwrite"),
        ctx=call.ctx,
        notebooks=_notebooks(call, records),
        unknowns=_unknowns(call, records),
    )


def _import_evidence_bundle(call: ToolCall) -> JSONObject:
    path = arg_str(call.args, "path", "")  # required by the schema
    loaded = bundle.load_bundle(path, ctx=call.ctx)
    records = loaded.records
    call.ctx.check("import_evidence_bundle")
    # Annotations merge into the store first: a failed write leaves the ledger untouched.
    merged = [call.session.annotations.merge(nb, call.ctx) for nb in loaded.annotations]
    store = UnknownStore(call.session.annotations.root)
    unknowns = [store.merge(reg, call.ctx) for reg in loaded.unknowns]
    ledger = call.session.ledger
    new = sum(1 for r in records if ledger.get(r.evidence_id) is None)
    ledger.record_all(records)
    m = bundle.manifest(records)
    out: JSONObject = msgspec.to_builtins(
        BundleImport(
            annotations=merged,
            unknowns=unknowns,
            path=path,
            record_count=m.record_count,
            added_count=new,
            already_retained_count=m.record_count - new,
            record_ids_digest=m.record_ids_digest,
            evidence_ids=[r.evidence_id for r in records],
            retained_evidence_count=len(ledger),
        )
    )
    return out


def inspect_evidence_bundle(args: Arguments, ctx: CallContext | None = None) -> JSONObject:
    """Validate a bundle file and return it whole or as its summary projection; touches no ledger."""
    detail, filters = bundle.check_detail(args)
    path = arg_str(args, "path", "")  # required by the schema
    loaded = bundle.load_bundle(path, ctx=ctx)
    out = bundle.project(loaded.records, detail, filters, loaded.annotations, loaded.unknowns)
    out["path"] = path
    return out


def _inspect_evidence_bundle(call: ToolCall) -> JSONObject:
    return inspect_evidence_bundle(call.args, call.ctx)


def _inspect_analysis_view(call: ToolCall) -> Evidence:
    source = arg_object(call.args, "source") or {}  # required by the schema
    if source.get("kind") == "inline":
        # A complete record authenticates itself; a lean one is resolved in the ledger by its id.
        parent = call.session.resolve_evidence(source["evidence"], "source/evidence")
    else:
        parent = call.session.resolve_evidence(source, "source")
    call.ctx.check("inspect_analysis_view")
    return views.build_view(parent, arg_object(call.args, "view"))


GET_EVIDENCE_BUNDLE = ToolDef(
    name="get_evidence_bundle",
    family="evidence",
    description=(
        "Return this connection's retained Evidence as a bundle (bundle_version 2, records sorted by "
        "evidence_id). detail: summary lists records without payloads (ids, artifact/provider identity, "
        "analysis-profile digest, native procedure metadata) and accepts exact filters. Starts no "
        "provider; export_evidence_bundle writes large bundles to a file instead."
    ),
    input_schema={
        "type": "object",
        "properties": {"detail": DETAIL_SCHEMA, "filters": FILTERS_SCHEMA},
        "additionalProperties": False,
        "examples": [{}, _SUMMARY_EXAMPLE],
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False),
    examples=({}, {"detail": "summary"}, _SUMMARY_EXAMPLE),
    handler=_get_evidence_bundle,
)

EXPORT_EVIDENCE_BUNDLE = ToolDef(
    name="export_evidence_bundle",
    family="evidence",
    description=(
        "Write the retained Evidence, with the annotations of the targets it describes, to a bundle file. "
        "It streams canonical JSON (RFC 8785) to a staging file beside path and "
        "publishes it atomically: the destination is never partial. An existing file is replaced only "
        "with overwrite: true. Cancelling removes the staging file."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _bundle_path("Destination file; its directory must exist."),
            "overwrite": {
                "type": "boolean",
                "default": False,
                "description": "Replace an existing destination file (default false).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
        "examples": [{"path": "/tmp/evidence.json"}, {"path": "/tmp/evidence.json", "overwrite": True}],
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False, writes_filesystem=True, may_discard_data=True),
    examples=({"path": "/tmp/evidence.json", "overwrite": True},),
    cli_subject="path",
    handler=_export_evidence_bundle,
)

IMPORT_EVIDENCE_BUNDLE = ToolDef(
    name="import_evidence_bundle",
    family="evidence",
    description=(
        "Read an exported bundle under the import memory budget, authenticate every record id, the "
        "annotations and the "
        "manifest, then retain all records at once; on any failure nothing is added. Its annotations "
        "merge into the annotation store: a field already set differently is kept and reported."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _bundle_path("Bundle file to import."),
        },
        "required": ["path"],
        "additionalProperties": False,
        "examples": [{"path": "/tmp/evidence.json"}],
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False, mutates_session=True, writes_filesystem=True),
    examples=({"path": "/tmp/evidence.json"},),
    cli_subject="path",
    handler=_import_evidence_bundle,
)

INSPECT_EVIDENCE_BUNDLE = ToolDef(
    name="inspect_evidence_bundle",
    family="evidence",
    description=(
        "Validate a local bundle file under the memory budget and return it. Whole, or with detail: "
        "summary, the same summary projection as get_evidence_bundle (exact filters allowed). "
        "Retains nothing."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _bundle_path("Bundle file to read."),
            "detail": DETAIL_SCHEMA,
            "filters": FILTERS_SCHEMA,
        },
        "required": ["path"],
        "additionalProperties": False,
        "examples": [{"path": "/tmp/evidence.json", **_SUMMARY_EXAMPLE}],
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False),
    examples=({"path": "/tmp/evidence.json", **_SUMMARY_EXAMPLE},),
    cli_subject="path",
    handler=_inspect_evidence_bundle,
)

_SOURCE_SCHEMA: JSONObject = {
    "description": "The record to view: Evidence, retained or inline (authenticated by its id).",
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "retained-evidence"},
                "evidence_id": {
                    "type": "string",
                    "pattern": EV_ID_PATTERN,
                    "description": "A retained record's id.",
                },
            },
            "required": ["kind", "evidence_id"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "kind": {"const": "inline"},
                "evidence": {
                    "anyOf": [{"$ref": f"#/$defs/{EVIDENCE_RECORD}"}, {"$ref": f"#/$defs/{LEAN_EVIDENCE_RECORD}"}]
                },
            },
            "required": ["kind", "evidence"],
            "additionalProperties": False,
        },
    ],
}

_VIEW_SCHEMA: JSONObject = {
    "type": "object",
    "description": (
        "summary (default); item (section + exactly one of key, node_id, index); page (section, "
        "offset, limit); native/facet (facet such as pseudocode, assembly, mitigations, linkage, with "
        "offset/limit). Text pages count UTF-16 code units and never split a surrogate pair."
    ),
    "properties": {
        "kind": {"enum": ["summary", "item", "page", "native", "facet"], "description": "The view kind."},
        "section": {
            "type": "string",
            "minLength": 1,
            "description": "A list-valued member of normalized_result; nested members joined with '/'.",
            "examples": ["modules"],
        },
        "key": {"type": "string", "description": "Select the row whose name/path/address/id equals this."},
        "node_id": {"type": "string", "description": "Select the row with this node_id (exact)."},
        "index": {"type": "integer", "minimum": 0, "description": "Select the row at this position."},
        "facet": {
            "type": "string",
            "minLength": 1,
            "description": "Native facet: pseudocode, assembly, basic_blocks, callers, callees, ...",
            "examples": ["pseudocode"],
        },
        "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "First row or code unit."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": views.PAGE_MAX_LIMIT,
            "default": views.PAGE_DEFAULT_LIMIT,
            "description": "Rows or code units per page (max 256).",
        },
    },
    "required": ["kind"],
    "additionalProperties": False,
    "allOf": [
        {"if": {"properties": {"kind": {"const": "item"}}}, "then": {"required": ["section"]}},
        {"if": {"properties": {"kind": {"const": "page"}}}, "then": {"required": ["section"]}},
        {"if": {"properties": {"kind": {"enum": ["native", "facet"]}}}, "then": {"required": ["facet"]}},
    ],
}

_VIEW_EXAMPLE: JSONObject = {
    "source": {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64},
    "view": {"kind": "native", "facet": "pseudocode", "offset": 0, "limit": 64},
}

INSPECT_ANALYSIS_VIEW = ToolDef(
    name="inspect_analysis_view",
    result_type=AnalysisView,
    family="evidence",
    description=(
        "View completed Evidence (retained or inline) without running its producer again. A summary, one "
        "section item/module, a stable page, or a native facet page. The result links its "
        "parent and carries a digest of the selected facts."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {"source": _SOURCE_SCHEMA, "view": _VIEW_SCHEMA},
            "required": ["source"],
            "additionalProperties": False,
            "examples": [_VIEW_EXAMPLE],
        }
    ),
    examples=(_VIEW_EXAMPLE,),
    handler=_inspect_analysis_view,
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [
        GET_EVIDENCE_BUNDLE,
        EXPORT_EVIDENCE_BUNDLE,
        IMPORT_EVIDENCE_BUNDLE,
        INSPECT_EVIDENCE_BUNDLE,
        INSPECT_ANALYSIS_VIEW,
    ]
