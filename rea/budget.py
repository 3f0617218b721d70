"""The MCP response budget: sizes measured from encoded bytes before a document-sized string is built."""

from __future__ import annotations

import msgspec

from rea import evidence as ev_mod
from rea.config import Settings
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.records import JSONObject
from rea.records import JSONValue
from rea.sizes import measured_sizes

# Keys and punctuation of a CallToolResult around its payloads ({"content":[{"type":"text","text":...}],
# "structuredContent":...,"isError":false}); measured generously so the estimate is never below the frame.
RESULT_OVERHEAD = 128


def escaped_length(encoded: bytes) -> int:
    """Length of ``encoded`` once embedded as a JSON string value (quotes and backslashes escaped)."""
    return len(encoded) + encoded.count(b'"') + encoded.count(b"\\") + 2


def success_size(encoded: bytes) -> int:
    """Bytes of a successful result carrying ``encoded`` as both text and structured content."""
    return RESULT_OVERHEAD + len(encoded) + escaped_length(encoded)


def error_size(encoded: bytes) -> int:
    """Bytes of an error result: the diagnostic travels as text only."""
    return RESULT_OVERHEAD + escaped_length(encoded)


def transport_error(settings: Settings, required: int, evidence_id: str | None) -> ReaError:
    limits: dict[str, JSONValue] = {
        "max_response_bytes": settings.max_response_bytes,
        "envelope_reserve_bytes": settings.max_response_bytes - settings.response_budget,
        "required_bytes": required,
    }
    if evidence_id is not None:
        limits["evidence_reference"] = ev_mod.retained_reference(evidence_id)
    return ReaError(
        "resource_constraint",
        f"the result needs {required} bytes, more than the {settings.response_budget}-byte response budget",
        remediation=(
            "Call inspect_analysis_view with details.reported_limits.evidence_reference for a summary or a "
            "page, or export_evidence_bundle to a file; or raise REA_MCP_MAX_RESPONSE_BYTES to match a "
            "larger client buffer and restart."
        ),
        details={"resource": "transport", "reported_limits": limits},
    )


def encode_result(result: Evidence | JSONObject) -> bytes:
    return msgspec.json.encode(result)


# What the complete record adds beside its identity projection (display name, local path, ids, keys).
_RECORD_SLACK = 8192


def known_oversize(evidence: Evidence, budget: int) -> int | None:
    """The size a result would need, when it is known (without encoding it) to exceed ``budget``."""
    known = measured_sizes(evidence.evidence_id)
    if known is None:
        return None
    length, escapes = known
    if escapes is None:
        return None
    # Text and structured copies of a record whose encoding matches the hashed one but for key order and
    # the small display fields the projection omits (the slack): refusing on it never refuses a fit.
    lower = RESULT_OVERHEAD + 2 * length + escapes + 2
    return lower if lower - _RECORD_SLACK > budget else None
