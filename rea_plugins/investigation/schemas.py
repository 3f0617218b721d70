"""Input schemas of the investigation tools (REA's argument names). Descriptions stay terse: hosts send them with
every request; docs/investigations.md says the rest."""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import evidence_input
from rea.plugin import with_evidence_defs


# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
def d(schema: JSONObject, text: str) -> JSONObject:
    """``schema`` with a description (every root property has one)."""
    return {**schema, "description": text}


EV_ID: JSONObject = {"type": "string", "pattern": "^ev_[0-9a-f]{64}$"}
UNKNOWN_ID: JSONObject = {"type": "string", "pattern": "^unk_[0-9a-f]{12}_[0-9a-f]{20}$"}
EV_IDS: JSONObject = {"type": "array", "items": EV_ID, "maxItems": 1000}
TEXT: JSONObject = {"type": "string", "minLength": 1, "maxLength": 4096}
OFFSET: JSONObject = {"type": "integer", "minimum": 0}
LIMIT: JSONObject = {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}
PAGE: JSONObject = {"offset": d(OFFSET, "Page start."), "limit": d(LIMIT, "Page size.")}
SEVERITY: JSONObject = {"type": "string", "enum": ["low", "medium", "high", "critical"]}
STATUS: JSONObject = {"type": "string", "enum": ["open", "investigating", "blocked", "contradicted", "resolved"]}
AUTHORITY: JSONObject = {
    "type": "string",
    "enum": ["shipped-artifact", "controlled-replay", "historical-reference", "external-service", "analyst-inference"],
}
CONFIDENCE: JSONObject = {"type": "string", "enum": ["observed", "derived", "inferred"]}


def obj(properties: JSONObject, required: list[str] | None = None, description: str = "") -> JSONObject:
    out: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list[JSONValue](required)
    if description:
        out["description"] = description
    return out


ENVIRONMENT: JSONObject = {
    "anyOf": [
        obj(
            {
                "platform": {"type": "string"},
                "architecture": {"type": "string"},
                "isolation": {"enum": ["none", "process", "container", "virtual-machine"]},
            }
        ),
        {"type": "null"},
    ],
    "description": "Environment the answering Evidence must come from (null: any).",
}
RELATIONSHIPS: JSONObject = {
    "type": "array",
    "maxItems": 100,
    "items": obj(
        {"kind": {"enum": ["depends_on", "blocks", "duplicates", "related_to"]}, "unknown_id": UNKNOWN_ID},
        ["kind", "unknown_id"],
    ),
}
PROBES: JSONObject = {
    "type": "array",
    "items": TEXT,
    "maxItems": 50,
    "description": "Tools or steps that would answer it.",
}
RESOLUTION: JSONObject = {
    "anyOf": [
        obj(
            {"kind": {"const": "answered"}, "summary": TEXT, "evidence_ids": {**EV_IDS, "minItems": 1}},
            ["kind", "summary", "evidence_ids"],
        ),
        obj({"kind": {"const": "withdrawn"}, "summary": TEXT}, ["kind", "summary"]),
        {"type": "null"},
    ],
    "description": "How it was closed; required with status resolved.",
}
REQUIREMENTS: JSONObject = {
    "severity": d(SEVERITY, "Impact on the investigation."),
    "required_authority": d(AUTHORITY, "Authority the answer must have."),
    "required_confidence": d(CONFIDENCE, "Least confidence the answer may have."),
    "required_environment": ENVIRONMENT,
    "recommended_probes": PROBES,
    "relationships": d(RELATIONSHIPS, "Links to other unknowns of the target."),
    "supporting_evidence_ids": d(EV_IDS, "Retained Evidence for it."),
    "contradicting_evidence_ids": d(EV_IDS, "Retained Evidence against it."),
}

RECORD_UNKNOWN = obj(
    {
        "domain": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Area, e.g. crypto."},
        "question": d(TEXT, "What is not known."),
        **REQUIREMENTS,
    },
    ["domain", "question", "severity", "required_authority", "required_confidence"],
)
UPDATE_UNKNOWN = obj(
    {
        "unknown_id": d(UNKNOWN_ID, "The unknown."),
        "expected_revision": {"type": "integer", "minimum": 1, "description": "The head revision you read."},
        "status": d(STATUS, "New status."),
        "resolution": RESOLUTION,
        **REQUIREMENTS,
    },
    ["unknown_id", "expected_revision", "status"],
)
LIST_UNKNOWNS = obj(
    {
        "status": d(STATUS, "Only this status."),
        "severity": d(SEVERITY, "Only this severity."),
        "domain": {"type": "string", "minLength": 1, "description": "Only this domain."},
        **PAGE,
    }
)
VERIFY_UNKNOWN = obj({"unknown_id": d(UNKNOWN_ID, "A resolved unknown.")}, ["unknown_id"])

BUNDLE = obj({"path": {"type": "string", "minLength": 1}}, ["path"], "An exported Evidence bundle file.")
DECLARED: JSONObject = {
    "type": "array",
    "maxItems": 10_000,
    "items": obj(
        {"id": {"type": "string", "minLength": 1, "maxLength": 256}, "description": TEXT, "evidence_ids": EV_IDS},
        ["id"],
    ),
}
MANIFEST = obj({"behaviours": DECLARED, "structures": DECLARED}, description="Declared behaviours and structures.")
REVIEW_TEXT = "Reviews of earlier obligations, carried over by id."
REVIEWED: JSONObject = {
    "type": "array",
    "maxItems": 10_000,
    "items": obj(
        {
            "obligation_id": {"type": "string", "pattern": "^obl_[0-9a-f]{24}$"},
            "status": {"enum": ["accepted", "waived", "disputed"]},
            "note": {"type": "string", "maxLength": 4096},
        },
        ["obligation_id", "status"],
    ),
}
LEDGER_INPUTS: JSONObject = {
    "evidence_bundle": BUNDLE,
    "manifest": MANIFEST,
    "reviewed_obligations": d(REVIEWED, REVIEW_TEXT),
    "page": obj(PAGE, description="{offset, limit} of the obligations."),
}
LEDGER = obj(LEDGER_INPUTS, ["evidence_bundle"])
COVERAGE = obj(LEDGER_INPUTS, ["evidence_bundle"])

CLAIM = obj(
    {
        "claim_id": {"type": "string", "minLength": 1, "maxLength": 256},
        "kind": {"enum": ["behavioural", "structural"]},
        "statement": TEXT,
        "evidence_ids": {**EV_IDS, "minItems": 1},
    },
    ["claim_id", "kind", "evidence_ids"],
)
VERIFY_RECONSTRUCTION = obj(
    {
        "specification": obj(
            {"evidence_bundle": BUNDLE, "claims": {"type": "array", "items": CLAIM, "minItems": 1, "maxItems": 10_000}},
            ["evidence_bundle", "claims"],
            "The bundle and the claims to check.",
        ),
        **PAGE,
    },
    ["specification"],
)


def evidence_list(what: str) -> JSONObject:
    item = evidence_input(what)
    return {"type": "array", "minItems": 1, "maxItems": 10_000, "items": {"anyOf": item["anyOf"]}, "description": what}


ENDPOINT: JSONObject = {
    "oneOf": [
        obj({"address": {"type": "string", "pattern": "^0x[0-9a-fA-F]{1,16}$"}}, ["address"]),
        obj({"name": {"type": "string", "minLength": 1}}, ["name"]),
    ]
}
CALL_PATH = with_evidence_defs(
    obj(
        {
            "functions": evidence_list("analyze_function Evidence."),
            "start": d(ENDPOINT, "{address} or {name}."),
            "goal": d(ENDPOINT, "{address} or {name}."),
            "max_depth": {"type": "integer", "minimum": 1, "maximum": 64, "default": 8, "description": "Most calls."},
            "max_paths": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 16,
                "description": "Most paths.",
            },
            **PAGE,
        },
        ["functions", "start", "goal"],
    )
)

COMPARE_BUNDLES = obj(
    {
        "left_bundle_path": {"type": "string", "minLength": 1, "description": "Older bundle."},
        "right_bundle_path": {"type": "string", "minLength": 1, "description": "Newer bundle."},
        "record_pairs": {
            "description": "Explicit pairs, beside those matched by operation and subject.",
            "type": "array",
            "maxItems": 10_000,
            "items": obj(
                {"left_evidence_id": EV_ID, "right_evidence_id": EV_ID}, ["left_evidence_id", "right_evidence_id"]
            ),
        },
        **PAGE,
    },
    ["left_bundle_path", "right_bundle_path"],
)
CHANGED = with_evidence_defs(obj({"comparisons": evidence_list("Comparison Evidence."), **PAGE}, ["comparisons"]))
CORRELATE = with_evidence_defs(
    obj(
        {
            "static_comparisons": evidence_list("Static comparison Evidence."),
            "runtime_comparisons": evidence_list("Runtime comparison Evidence."),
            "mappings": {
                "description": "Hypotheses: a static and a runtime comparison (a runtime dimension).",
                "type": "array",
                "minItems": 1,
                "maxItems": 10_000,
                "items": obj(
                    {
                        "hypothesis_id": {"type": "string", "minLength": 1, "maxLength": 256},
                        "static_evidence_id": EV_ID,
                        "runtime_evidence_id": EV_ID,
                        "dimension": {"type": "string", "minLength": 1},
                    },
                    ["hypothesis_id", "static_evidence_id", "runtime_evidence_id"],
                ),
            },
            **PAGE,
        },
        ["static_comparisons", "runtime_comparisons", "mappings"],
    )
)
