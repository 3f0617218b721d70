"""The investigation tools, declared as ToolDef values (toolset ``investigation``)."""

from __future__ import annotations

import msgspec

from rea.plugin import RETAINED_EXAMPLE
from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea.plugin import struct_output_schema
from rea_plugins.investigation import schemas
from rea_plugins.investigation.model import BundleComparison
from rea_plugins.investigation.model import CallPaths
from rea_plugins.investigation.model import ChangedBehaviors
from rea_plugins.investigation.model import Correlation
from rea_plugins.investigation.model import CoverageResult
from rea_plugins.investigation.model import ObligationLedger
from rea_plugins.investigation.model import ReconstructionVerification
from rea_plugins.investigation.model import UnknownList
from rea_plugins.investigation.model import UnknownResult
from rea_plugins.investigation.model import UnknownVerification

TOOLSET = "investigation"
FAMILY = "investigation"
DERIVED = ToolEffects(records_evidence=True)
READ_ONLY = ToolEffects(records_evidence=False)
# Writes the per-target registry beside the annotation store; a retry records another revision.
WRITES = ToolEffects(records_evidence=False, writes_filesystem=True, idempotent=False)
EV = "ev_" + "0" * 64
EV2 = "ev_" + "1" * 64
UNK = "unk_" + "0" * 12 + "_" + "0" * 20
BUNDLE = {"path": "/tmp/evidence.json"}


def _tool(
    name: str,
    description: str,
    schema: JSONObject,
    handler: tuple[str, str],
    *,
    effects: ToolEffects,
    output_schema: JSONObject | None = None,
    result_type: type[msgspec.Struct] | None = None,
    requires_target: bool = False,
    examples: tuple[JSONObject, ...] = (),
) -> ToolDef:
    """An investigation tool; ``schema`` is its input JSON Schema (JSON Schema's vocabulary, not a record), and
    ``handler`` its (module, function), imported on the first call."""
    module, function = handler
    return ToolDef(
        name=name,
        family=FAMILY,
        toolset=TOOLSET,
        description=description,
        input_schema=schema,
        handler=lazy_handler(f"rea_plugins.investigation.{module}", function),
        effects=effects,
        output_schema=output_schema,
        result_type=result_type,
        requires_target=requires_target,
        examples=examples,
    )


RECORD = _tool(
    "record_unknown",
    "Record an open question about the open target in its residual-unknowns registry.",
    schemas.RECORD_UNKNOWN,
    ("registry_tools", "record_unknown"),
    effects=WRITES,
    output_schema=struct_output_schema(UnknownResult),
    requires_target=True,
    examples=(
        {
            "domain": "crypto",
            "question": "Which cipher does the license check use?",
            "severity": "high",
            "required_authority": "controlled-replay",
            "required_confidence": "observed",
            "recommended_probes": ["capture_process_scenario"],
        },
    ),
)
UPDATE = _tool(
    "update_unknown",
    "Append a revision to an unknown; expected_revision must be its head (else revision_conflict).",
    schemas.UPDATE_UNKNOWN,
    ("registry_tools", "update_unknown"),
    effects=WRITES,
    output_schema=struct_output_schema(UnknownResult),
    examples=(
        {
            "unknown_id": UNK,
            "expected_revision": 1,
            "status": "resolved",
            "resolution": {"kind": "answered", "summary": "AES-128-CBC.", "evidence_ids": [EV]},
        },
    ),
)
LIST = _tool(
    "list_unknowns",
    "Current heads of the residual-unknowns registry, filtered and paged.",
    schemas.LIST_UNKNOWNS,
    ("registry_tools", "list_unknowns"),
    effects=READ_ONLY,
    output_schema=struct_output_schema(UnknownList),
    examples=({}, {"status": "open", "severity": "high", "limit": 20}),
)
VERIFY_UNKNOWN = _tool(
    "verify_unknown_resolution",
    "Re-check a resolved unknown against the Evidence it cites (present, authority, confidence).",
    schemas.VERIFY_UNKNOWN,
    ("registry_tools", "verify_unknown_resolution"),
    effects=DERIVED,
    result_type=UnknownVerification,
    examples=({"unknown_id": UNK},),
)
LEDGER = _tool(
    "build_reconstruction_obligation_ledger",
    "A deterministic page of what a reconstruction must show, from a bundle and a manifest.",
    schemas.LEDGER,
    ("reconstruction", "build_ledger"),
    effects=DERIVED,
    result_type=ObligationLedger,
    examples=({"evidence_bundle": BUNDLE, "page": {"offset": 0, "limit": 50}},),
)
COVERAGE = _tool(
    "evaluate_reconstruction_coverage",
    "Which ledger obligations have complete, contradicted or no comparison Evidence in the bundle.",
    schemas.COVERAGE,
    ("reconstruction", "evaluate_coverage"),
    effects=READ_ONLY,
    output_schema=struct_output_schema(CoverageResult),
    examples=({"evidence_bundle": BUNDLE},),
)
VERIFY_RECONSTRUCTION = _tool(
    "verify_reconstruction",
    "Check behavioural/structural claims against a bundle: pass only with complete comparison Evidence.",
    schemas.VERIFY_RECONSTRUCTION,
    ("reconstruction", "verify_reconstruction"),
    effects=DERIVED,
    result_type=ReconstructionVerification,
    examples=(
        {
            "specification": {
                "evidence_bundle": BUNDLE,
                "claims": [{"claim_id": "exit", "kind": "behavioural", "evidence_ids": [EV]}],
            }
        },
    ),
)
CALL_PATH = _tool(
    "build_call_path",
    "Shortest-first direct-callee paths over analyze_function Evidence.",
    schemas.CALL_PATH,
    ("reconstruction", "build_call_path"),
    effects=DERIVED,
    result_type=CallPaths,
    examples=({"functions": [RETAINED_EXAMPLE], "start": {"name": "main"}, "goal": {"address": "0x401136"}},),
)
COMPARE_BUNDLES = _tool(
    "compare_bundles",
    "Two exported bundles: record membership, paired observations, unknown revision histories.",
    schemas.COMPARE_BUNDLES,
    ("versions", "compare_bundles"),
    effects=DERIVED,
    result_type=BundleComparison,
    examples=({"left_bundle_path": "/tmp/v1.json", "right_bundle_path": "/tmp/v2.json"},),
)
CHANGED = _tool(
    "find_changed_behavior",
    "Changed behaviours across versions, from comparison Evidence, each with the Evidence behind it.",
    schemas.CHANGED,
    ("versions", "find_changed_behavior"),
    effects=DERIVED,
    result_type=ChangedBehaviors,
    examples=({"comparisons": [RETAINED_EXAMPLE]},),
)
CORRELATE = _tool(
    "correlate_static_and_runtime",
    "Judge declared static-to-runtime hypotheses supported, contradicted or unknown.",
    schemas.CORRELATE,
    ("versions", "correlate"),
    effects=DERIVED,
    result_type=Correlation,
    examples=(
        {
            "static_comparisons": [RETAINED_EXAMPLE],
            "runtime_comparisons": [{"kind": "retained-evidence", "evidence_id": EV2}],
            "mappings": [{"hypothesis_id": "h1", "static_evidence_id": EV, "runtime_evidence_id": EV2}],
        },
    ),
)

TOOLS = (
    RECORD,
    UPDATE,
    LIST,
    VERIFY_UNKNOWN,
    LEDGER,
    COVERAGE,
    VERIFY_RECONSTRUCTION,
    CALL_PATH,
    COMPARE_BUNDLES,
    CHANGED,
    CORRELATE,
)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
