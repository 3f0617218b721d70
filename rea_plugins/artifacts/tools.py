"""The artifact tools: inspect_artifact, compare_artifacts and extract_artifact, declared as ToolDefs."""

from __future__ import annotations

import msgspec

from rea.plugin import Evidence
from rea.plugin import IntegrityPolicy
from rea.plugin import JSONObject
from rea.plugin import Limits
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import Unpacker
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import cancelled
from rea.plugin import evidence_input
from rea.plugin import identify
from rea.plugin import read_head
from rea.plugin import select_unpacker
from rea.plugin import with_evidence_defs
from rea_plugins.artifacts import compare as compare_mod
from rea_plugins.artifacts import extract as extract_mod
from rea_plugins.artifacts import kinds
from rea_plugins.artifacts.inventory import Inventory
from rea_plugins.artifacts.inventory import limits_from
from rea_plugins.artifacts.inventory import limits_record
from rea_plugins.artifacts.inventory import open_artifact
from rea_plugins.artifacts.inventory import subject_target
from rea_plugins.artifacts.shapes import ArtifactComparison
from rea_plugins.artifacts.shapes import ArtifactInventory
from rea_plugins.artifacts.shapes import Extraction

VERSION = "0.1.0"
ARTIFACTS = ProviderIdentity(id="artifacts", name="rea artifact tools", version=VERSION)
_D = Limits()

_EV_TEXT = "complete inspect_artifact Evidence, inline or retained."
# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
_POLICY_TEXT = (
    "On a hash mismatch: fail (default) or record-and-continue. fail stops the call with "
    "artifact_integrity_mismatch. record-and-continue: record the contradiction in "
    "integrity_contradictions, quarantine those bytes, continue with verified ones."
)
PATH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "Local path of a directory, ZIP (APK, IPA, JAR, MSIX/AppX) or ASAR artifact.",
    "examples": ["/tmp/app/resources/app.asar", "/tmp/app-release.apk"],
}
POLICY: JSONObject = {
    "type": "string",
    "enum": ["fail", "record-and-continue"],
    "default": "fail",
    "description": _POLICY_TEXT,
    "examples": ["fail", "record-and-continue"],
}
MAX_ENTRIES: JSONObject = {
    "type": "integer",
    "minimum": 1,
    "maximum": 10_000_000,
    "default": _D.max_entries,
    "description": "Most entries to list, nested archives included; more is resource_constraint.",
    "examples": [200000],
}
MAX_DEPTH: JSONObject = {
    "type": "integer",
    "minimum": 0,
    "maximum": 32,
    "default": _D.max_depth,
    "description": "Deepest nesting of archives inside archives to expand (0: none); deeper ones are "
    "listed, not opened (coverage partial).",
    "examples": [4],
}
MAX_TOTAL: JSONObject = {
    "type": "integer",
    "minimum": 1,
    "maximum": 1 << 44,
    "default": _D.max_total_bytes,
    "description": "Most uncompressed bytes to read over all entries; more is resource_constraint.",
    "examples": [4294967296],
}
MAX_RATIO: JSONObject = {
    "type": "number",
    "minimum": 1,
    "maximum": 1_000_000,
    "default": _D.max_compression_ratio,
    "description": "Highest compression ratio a ZIP entry may declare (zip bomb guard); higher is resource_constraint.",
    "examples": [1000],
}
EVIDENCE_INPUT = evidence_input("The " + _EV_TEXT)


def _policy(call: ToolCall) -> IntegrityPolicy:
    return "record-and-continue" if call.args.get("integrity_policy") == "record-and-continue" else "fail"


def _provider(unpacker: Unpacker) -> ProviderIdentity:
    d = unpacker.descriptor
    return ProviderIdentity(id=d.id, name=d.name, version=d.version)


def _inspect(call: ToolCall) -> Evidence:
    limits = limits_from(call.args)
    policy = _policy(call)
    target = identify(arg_str(call.args, "path", ""), call.ctx, allow_directory=True)  # path: required
    try:
        unpacker = select_unpacker(call.session.registry, target)
    except ReaError as exc:
        # No archive: a kind another tool reads (a firmware image, a database, a core dump, ...) is named instead.
        recognized = None if exc.code != "unsupported_target" else _recognized(call, target, policy, limits)
        if recognized is None:
            raise
        return recognized
    reader = unpacker.open(target, limits, call.ctx)
    try:
        inv = Inventory(call.session.registry, limits, policy, call.ctx)
        inv.run(reader)
        fmt = reader.format
        subject = subject_target(target, reader, inv)
    finally:
        reader.close()
    partial = bool(inv.partial_reasons)
    normalized = {
        "format": fmt,
        "entry_count": len(inv.entries),
        "totals": inv.totals(),
        "entries": msgspec.to_builtins(inv.entries),
        "integrity_policy": policy,
        "integrity_contradictions": inv.contradictions,
        "coverage": "partial" if partial else "complete",
        "partial_reasons": sorted(inv.partial_reasons),
        "limits": limits_record(limits),
    }
    views = call.session.registry.target_views(target) if not target.is_directory else []
    if views:
        # What else the archive is (an Android package, ...) and the tools that read it.
        normalized["views"] = [msgspec.to_builtins(v) for v in views]
    limitations = sorted(set(inv.limitations))
    if partial:
        limitations.append("Coverage is partial: see partial_reasons.")
    # The path is display-only (it lives in subject.local_path), so equal artifacts give equal Evidence.
    params = {"integrity_policy": policy, "limits": limits_record(limits)}
    call.ctx.finish(f"inventory: {len(inv.entries)} entries")
    return call.session.evidence(
        "inspect_artifact",
        params,
        OperationResult(normalized=normalized, limitations=limitations),
        bound=False,
        target=subject,
        provider=_provider(unpacker),
        analysis_profile=None,
    )


def _recognized(call: ToolCall, target: Target, policy: IntegrityPolicy, limits: Limits) -> Evidence | None:
    """An answer without entries whose views name the tools that read ``target``; None when no kind is known."""
    found = kinds.views(target, read_head(target), set(call.session.registry.tool_info()))
    seen = {v.kind for v in found}
    found += [v for v in call.session.registry.target_views(target) if v.kind not in seen]
    if not found:
        return None
    reason = f"not an archive: a {found[0].kind}; views name the tools that read it"
    normalized = {
        "format": found[0].kind,
        "entry_count": 0,
        "totals": {"files": 0, "directories": 0, "links": 0, "special": 0, "bytes": 0},
        "entries": [],
        "integrity_policy": policy,
        "integrity_contradictions": [],
        "coverage": "partial",
        "partial_reasons": [reason],
        "limits": limits_record(limits),
        "views": [msgspec.to_builtins(v) for v in found],
    }
    call.ctx.finish(f"inventory: {found[0].kind}")
    return call.session.evidence(
        "inspect_artifact",
        {"integrity_policy": policy, "limits": limits_record(limits)},
        OperationResult(normalized=normalized, limitations=[f"The file is {reason}."]),
        bound=False,
        target=msgspec.structs.replace(target, format=found[0].kind),
        provider=ARTIFACTS,
        analysis_profile=None,
    )


def _compare(call: ToolCall) -> Evidence:
    left = call.session.resolve_evidence(call.args["left"], "left")
    right = call.session.resolve_evidence(call.args["right"], "right")
    result = compare_mod.compare(left, right)
    return call.session.evidence(
        "compare_artifacts",
        {"left": left.evidence_id, "right": right.evidence_id},
        OperationResult(normalized=result, confidence="derived"),
        bound=False,
        provider=ARTIFACTS,
        analysis_profile=None,
        links=[left.evidence_id, right.evidence_id],
    )


def _extract(call: ToolCall) -> Evidence:
    limits = limits_from(call.args)
    policy = _policy(call)
    paths = arg_strs(call.args, "paths")
    path = arg_str(call.args, "path", "")  # required by the schema
    target, unpacker, reader = open_artifact(call.session.registry, path, limits, call.ctx)
    try:
        result = extract_mod.extract(reader, paths, policy, limits, call.ctx)
        output = result.output_directory
        # A cancel arriving after this handler returns still removes what it wrote.
        call.on_abandon(lambda: extract_mod.discard(output, cancelled("recording the extraction")))
        try:
            subject = subject_target(target, reader, None)
            return _extract_evidence(call, target.is_directory, unpacker, subject, policy, limits, paths, result)
        except BaseException as exc:
            # The files are written but the call fails: nothing may be left behind.
            extract_mod.discard(result.output_directory, exc)
            raise
    finally:
        reader.close()


def _extract_evidence(
    call: ToolCall,
    directory_source: bool,
    unpacker: Unpacker,
    subject: Target,
    policy: IntegrityPolicy,
    limits: Limits,
    paths: list[str] | None,
    result: Extraction,
) -> Evidence:
    params = {
        "paths": sorted(set(paths)) if paths is not None else None,
        "integrity_policy": policy,
        "limits": limits_record(limits),
    }
    limitations = []
    if result.refused:
        limitations.append(f"{len(result.refused)} selected entries were refused; see refused.")
    if directory_source:
        limitations.append("The subject digest of a directory source is its listing digest, not its content.")

    def evidence(normalized: Extraction, notes: list[str], links: list[str] | None = None) -> Evidence:
        return call.session.evidence(
            "extract_artifact",
            params,
            OperationResult(normalized=msgspec.to_builtins(normalized), limitations=notes),
            bound=False,
            target=subject,
            provider=_provider(unpacker),
            analysis_profile=None,
            links=links,
        )

    complete = evidence(result, limitations)
    answer = complete
    if extract_mod.oversized(result):
        # Too many rows for one response: the complete record is retained, the answer lists the first rows
        # and names it (inspect_analysis_view pages it, export_evidence_bundle writes it).
        answer = evidence(
            extract_mod.bounded(result, complete.evidence_id),
            [
                *limitations,
                "The listing is bounded: listing.complete_evidence names the complete "
                "record, which inspect_analysis_view pages.",
            ],
            [complete.evidence_id],
        )
        if not call.ctx.signal.commit(lambda: call.session.ledger.record(complete)):
            call.ctx.check("extract_artifact")
    call.ctx.check("extract_artifact")
    call.ctx.finish(f"extract: {result.file_count} files")
    return answer


INSPECT_ARTIFACT = ToolDef(
    name="inspect_artifact",
    result_type=ArtifactInventory,
    family="artifacts",
    title="Inspect Artifact",
    description=(
        "Deterministic, bounded inventory of a directory, ZIP (APK, IPA, JAR, MSIX/AppX by their markers) or "
        "Electron ASAR. It lists every entry's logical path, kind, size and SHA-256; for ASAR the header's declared "
        "integrity and unpacked state, verified against the bytes. Nested archives are expanded (paths "
        "'outer!/inner') up to max_depth. Integrity fails closed unless integrity_policy is "
        "record-and-continue. Equal artifacts give identical Evidence wherever they are stored. A file that is no "
        "archive but a kind another tool reads (firmware image, SQLite database, EVM bytecode, core dump, Go "
        "binary, WebAssembly module) gets no entries and views naming those tools."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH,
            "integrity_policy": POLICY,
            "max_entries": MAX_ENTRIES,
            "max_depth": MAX_DEPTH,
            "max_total_bytes": MAX_TOTAL,
            "max_compression_ratio": MAX_RATIO,
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=_inspect,
    effects=ToolEffects(records_evidence=True),
    examples=(
        {"path": "/tmp/app/resources/app.asar"},
        {"path": "/tmp/app-release.apk", "integrity_policy": "record-and-continue", "max_depth": 2},
    ),
    cli_subject="path",
)

COMPARE_ARTIFACTS = ToolDef(
    name="compare_artifacts",
    result_type=ArtifactComparison,
    family="artifacts",
    title="Compare Artifacts",
    description=(
        "Compare two inspect_artifact Evidence records (each inline or a retained reference) by logical "
        "path: added, removed, changed and unchanged entries. Entries with an integrity contradiction on "
        "either side are listed as contradicted, never unchanged."
    ),
    input_schema=with_evidence_defs(
        {
            "type": "object",
            "properties": {
                "left": {**EVIDENCE_INPUT, "description": "The earlier artifact's " + _EV_TEXT},
                "right": {**EVIDENCE_INPUT, "description": "The later artifact's " + _EV_TEXT},
            },
            "required": ["left", "right"],
            "additionalProperties": False,
        }
    ),
    handler=_compare,
    effects=ToolEffects(records_evidence=True),
    examples=(
        {
            "left": {"kind": "retained-evidence", "evidence_id": "ev_" + "1" * 64},
            "right": {"kind": "retained-evidence", "evidence_id": "ev_" + "2" * 64},
        },
    ),
)

EXTRACT_ARTIFACT = ToolDef(
    name="extract_artifact",
    result_type=Extraction,
    family="artifacts",
    title="Extract Artifact",
    description=(
        "Materialize selected regular files of a directory, ZIP-family or ASAR artifact into a fresh "
        "directory. rea creates it (reported as output_directory) and lists each written file's SHA-256. Never "
        "writes outside it: traversal, absolute, duplicate and case-colliding names, symlinks and device "
        "files are refused and listed under refused. An unpacked ASAR entry whose .asar.unpacked companion "
        "is missing fails as target_unavailable; on any failure nothing is left behind. A listing of more than "
        "1,000 rows (or 1 MiB) per section is bounded to its first rows; listing.complete_evidence then names "
        "the complete record, retained in the session, which inspect_analysis_view pages."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH,
            "paths": {
                "type": "array",
                "minItems": 1,
                "maxItems": 100_000,
                "items": {"type": "string", "minLength": 1},
                "description": "Logical paths to extract (as inspect_artifact lists them); omitted: "
                "every regular file.",
                "examples": [["main.js", "package.json"]],
            },
            "integrity_policy": {
                **POLICY,
                "description": _POLICY_TEXT
                + " Under record-and-continue a contradicted file is written under rea-quarantine/, not at its path.",
            },
            "max_entries": MAX_ENTRIES,
            "max_total_bytes": MAX_TOTAL,
            "max_compression_ratio": MAX_RATIO,
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=_extract,
    effects=ToolEffects(records_evidence=True, writes_filesystem=True, idempotent=False),
    examples=(
        {"path": "/tmp/app/resources/app.asar", "paths": ["main.js"]},
        {"path": "/tmp/app/resources/app.asar", "integrity_policy": "record-and-continue"},
    ),
    cli_subject="path",
)

TOOLS = (INSPECT_ARTIFACT, COMPARE_ARTIFACTS, EXTRACT_ARTIFACT)
__all__ = ["TOOLS", "tools"]


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
