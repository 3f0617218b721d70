"""How a result is presented to a client: the complete record, or a compact one (``REA_RESULT_PRESENTATION``).

Presentation never changes what a result is. A compact Evidence record is the same record, with the same
``evidence_id``, whose ``analysis_profile`` (about 1 KB of engine settings, identical in every result of
one binding) is carried by its digest: ``{"digest": ..., "presentation": "digest"}``. The complete profile
is in ``open_binary``'s and ``binary_session``'s binding and in the retained record itself, one
``{"kind": "retained-evidence", "evidence_id": ...}`` away (``get_evidence_bundle``, ``export_evidence_bundle``).
A compact record authenticates only against its retained original: pass the retained reference, not the
compact record, to a tool that takes Evidence.

A server-wide setting rather than a per-call argument: it is a property of the client (what its agent pays
for a token), constant for a connection, and a per-call ``detail`` on every tool would grow every input schema
and have to be repeated by the agent on every call. What one call returns (a page or a whole dossier) is the
tool's own argument (e.g. ``analyze_function``'s ``limit``).
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

from rea.catalog.schemas import evidence_output_schema, with_content_id
from rea.catalog.tool import ResultType
from rea.evidence import Evidence, as_object

COMPLETE: Final = "complete"
COMPACT: Final = "compact"
PROFILE_REFERENCE: Final = "ProfileReference"


def is_evidence(doc: Any) -> bool:
    return isinstance(doc, dict) and "evidence_id" in doc and "normalized_result" in doc and "analysis_profile" in doc


def present(doc: Any, mode: str) -> Any:
    """``doc`` as the ``mode`` presentation shows it (a compact Evidence record carries its profile by digest).

    A record given as ``Evidence`` is presented one level deep: its result is never converted to builtins."""
    if isinstance(doc, Evidence):
        if mode != COMPACT or doc.analysis_profile is None:
            return doc
        record: dict[str, Any] = as_object(doc)
        record["analysis_profile"] = {"digest": doc.analysis_profile.digest, "presentation": "digest"}
        return record
    if mode != COMPACT or not is_evidence(doc):
        return doc
    profile = doc["analysis_profile"]
    if not isinstance(profile, dict) or "digest" not in profile:
        return doc
    return {**doc, "analysis_profile": {"digest": profile["digest"], "presentation": "digest"}}


@functools.cache
def compact_evidence_output_schema(result_type: ResultType | None = None) -> dict[str, Any]:
    """The output schema of Evidence-producing tools under the compact presentation."""
    body = copy.deepcopy({k: v for k, v in evidence_output_schema(result_type).items() if k not in ("$id", "$schema")})
    body["$defs"][PROFILE_REFERENCE] = {
        "type": "object",
        "description": (
            "The analysis profile by its digest (compact presentation): the complete profile is in "
            "the binding (open_binary, binary_session) and in the retained record."
        ),
        "properties": {
            "digest": {"type": "string", "description": "The profile's digest."},
            "presentation": {"const": "digest", "description": "Always digest."},
        },
        "required": ["digest", "presentation"],
        "additionalProperties": False,
    }
    body["properties"]["analysis_profile"] = {
        "anyOf": [{"$ref": "#/$defs/AnalysisProfile"}, {"$ref": f"#/$defs/{PROFILE_REFERENCE}"}, {"type": "null"}]
    }
    body["description"] = (
        "An Evidence record in the compact presentation: complete but for analysis_profile, "
        "carried by its digest; evidence_id is the complete record's. Read normalized_result "
        "for the operation result."
    )
    return with_content_id(body)


def output_schema_for(
    tool_output_schema: dict[str, Any] | None,
    complete: dict[str, Any],
    mode: str,
    result_type: ResultType | None = None,
) -> dict[str, Any]:
    """The advertised output schema of a tool under ``mode`` (only Evidence results change)."""
    if mode == COMPACT and tool_output_schema is None:
        return compact_evidence_output_schema(result_type)
    return complete
