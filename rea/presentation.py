"""How a result is presented to a client: a lean record (the default), the complete one, or a compact one
(``REA_RESULT_PRESENTATION``).

Presentation never changes what a result is. Every presentation of an Evidence record carries the complete
record's ``evidence_id``, and the complete record is what the session's ledger retains, one
``{"kind": "retained-evidence", "evidence_id": ...}`` away (``get_evidence_bundle``, ``export_evidence_bundle``,
``inspect_analysis_view``).

``lean`` (the default of ``rea serve``): an agent pays for every byte of every result, and the envelope of a
complete record (about 1.6 KB: the artifact, the provider and about 1 KB of analysis profile) is the same in every
result of one binding. A lean record (``rea.evidence.LeanEvidence``) names that provenance by a short,
content-bound id (``"provenance": "pv_..."``, from the artifact's identity, the provider and the profile's digest)
and says it once per session: ``open_binary``'s result names the id beside the target and provider it stands for,
``binary_session``'s binding and the ``rea://provenance/{provenance_id}`` resource give it whole, and so does every
retained record. Of the rest of the envelope it keeps what says something: the operation, a confidence or authority
other than the default (``observed``, ``shipped-artifact``), limitations, locations, links, an environment, a raw
result. ``parameters`` is left out: it is what the caller passed (normalized), which the caller has, and a page or
a selection states in its result what it covers; the retained record keeps it. A lean record passed to a tool that
takes Evidence is resolved by its ``evidence_id`` in the session's ledger, as a retained reference is (a lean record
is not self-authenticating: ``rea.ledger.Ledger.resolve`` checks it against the retained original).
``open_binary`` answers the binding's profile by its digest; ``binary_session`` shows it whole.

``complete``: the contract's complete record (docs/mcp-contracts: "Tool results"), self-authenticating, for a client
that passes records inline across sessions or keeps them. ``compact``: the complete record with its
``analysis_profile`` carried by its digest (``{"digest": ..., "presentation": "digest"}``).

A server-wide setting rather than a per-call argument: it is a property of the client (what its agent pays
for a token), constant for a connection, and a per-call ``detail`` on every tool would grow every input schema
and have to be repeated by the agent on every call. What one call returns (a page or a whole dossier) is the
tool's own argument (e.g. ``analyze_function``'s ``limit``). The CLI prints complete records unless
``REA_RESULT_PRESENTATION`` is set: each command is a session of its own, so its output is the only place its
provenance is said.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import Literal

import msgspec

from rea.catalog.schemas import evidence_output_schema
from rea.catalog.schemas import subschema
from rea.catalog.schemas import typed_result
from rea.catalog.schemas import with_content_id
from rea.catalog.tool import ResultType
from rea.errors import ReaError
from rea.evidence import PROVENANCE_ID
from rea.evidence import AnalysisProfile
from rea.evidence import Evidence
from rea.evidence import LeanEvidence
from rea.evidence import Provenance
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.evidence import as_object
from rea.evidence import lean
from rea.evidence import provenance
from rea.evidence import provenance_id
from rea.records import JSONObject

if TYPE_CHECKING:
    from rea.session import Binding
    from rea.session import Session

LEAN: Final = "lean"
COMPLETE: Final = "complete"
COMPACT: Final = "compact"
PROFILE_REFERENCE: Final = "ProfileReference"


class ProfileReference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The analysis profile by its digest: the complete profile is in the binding (binary_session) and in the
    retained record."""

    digest: str
    presentation: Literal["digest"] = "digest"


class BindingReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A target's provider binding as ``open_binary`` and ``binary_session`` report it. Under the lean presentation
    ``open_binary`` leaves out the selection sentence (``binary_session`` has it) and gives the profile by digest."""

    provider: ProviderIdentity
    selection_source: str
    selection_reason: str | None = None
    usable_candidates: list[str]
    analysis_profile: AnalysisProfile | ProfileReference
    # The id lean records name this binding's provenance by (rea.evidence.provenance_id).
    provenance: str


def binding_provenance(subject: Subject, binding: Binding) -> str:
    return provenance_id(subject, binding.provider, binding.analysis_profile)


def binding_report(subject: Subject, binding: Binding, mode: str) -> BindingReport:
    """``binding`` (of the target ``subject`` names) as reported under ``mode``; ``complete`` is whole."""
    brief = mode == LEAN
    profile = binding.analysis_profile
    return BindingReport(
        provider=binding.provider,
        selection_source=binding.selection_source,
        selection_reason=None if brief else binding.selection_reason,
        usable_candidates=list(binding.usable_candidates),
        analysis_profile=ProfileReference(digest=profile.digest) if brief else profile,
        provenance=binding_provenance(subject, binding),
    )


PROVENANCE_URI: Final = "rea://provenance/{provenance_id}"


def find_provenance(session: Session, pid: str) -> Provenance | None:
    """The provenance ``pid`` names in ``session``: an open target's binding, else a retained record's."""
    for opened in session.open_targets():
        if opened.target is not None and opened.binding is not None:
            subject = session.subject_for(opened.target)
            if binding_provenance(subject, opened.binding) == pid:
                b = opened.binding
                return Provenance(id=pid, subject=subject, provider=b.provider, analysis_profile=b.analysis_profile)
    for record in session.ledger:
        if provenance_id(record.subject, record.provider, record.analysis_profile) == pid:
            return provenance(record)
    return None


def read_provenance(session: Session, variables: dict[str, str]) -> str:
    """``rea://provenance/{provenance_id}``: the artifact, provider and complete analysis profile an id names."""
    pid = variables["provenance_id"]
    found = find_provenance(session, pid) if PROVENANCE_ID.match(pid) else None
    if found is None:
        raise ReaError(
            "invalid_request",
            f"no provenance {pid!r} in this session",
            remediation="Use a provenance id from a lean record or open_binary of this connection.",
            details={"issues": [{"path": "provenance_id", "reason": "invalid_value", "message": "not retained here"}]},
        )
    return msgspec.json.encode(found).decode()


def cli_presentation(env: Mapping[str, str] | None = None) -> str:
    """The CLI's presentation: ``REA_RESULT_PRESENTATION`` when set, else complete (a command is its own session)."""
    from rea.config import RESULT_PRESENTATION

    env = os.environ if env is None else env
    return str(RESULT_PRESENTATION.read(env)) if RESULT_PRESENTATION.name in env else COMPLETE


def of_session(session: Session) -> str:
    """The presentation a session's results are given in: its connection's (``rea serve``), else the CLI's."""
    settings = session.connection.settings
    return cli_presentation() if settings is None else settings.result_presentation


def is_evidence(doc: Any) -> bool:
    return isinstance(doc, dict) and "evidence_id" in doc and "normalized_result" in doc and "analysis_profile" in doc


def present(doc: Any, mode: str) -> Any:
    """``doc`` as the ``mode`` presentation shows it (lean: ``LeanEvidence``; compact: the profile by digest).

    A record given as ``Evidence`` is presented one level deep: its result is never converted to builtins."""
    if isinstance(doc, Evidence):
        if mode == LEAN:
            return lean(doc)
        if mode != COMPACT or doc.analysis_profile is None:
            return doc
        # One level deep: the result stays the Struct it is (encoded once, on the wire).
        return {**as_object(doc), "analysis_profile": ProfileReference(digest=doc.analysis_profile.digest)}
    if mode == LEAN and is_evidence(doc):
        return _lean_builtins(doc)
    if mode != COMPACT or not is_evidence(doc):
        return doc
    profile = doc["analysis_profile"]
    if not isinstance(profile, dict) or "digest" not in profile:
        return doc
    return {**doc, "analysis_profile": msgspec.to_builtins(ProfileReference(digest=profile["digest"]))}


def _lean_builtins(doc: JSONObject) -> JSONObject:
    """A complete record given as builtins (a record passed back as JSON), lean (its results are not converted
    again)."""
    envelope = {**doc, "normalized_result": None, "raw_result": None}
    out: JSONObject = msgspec.to_builtins(lean(msgspec.convert(envelope, Evidence)))
    out["normalized_result"] = doc["normalized_result"]
    if doc["raw_result"] is not None:
        out["raw_result"] = doc["raw_result"]
    return out


@functools.cache
def compact_evidence_output_schema(result_type: ResultType | None = None) -> JSONObject:
    """The output schema of Evidence-producing tools under the compact presentation."""
    body = copy.deepcopy({k: v for k, v in evidence_output_schema(result_type).items() if k not in ("$id", "$schema")})
    (_,), components = msgspec.json.schema_components([ProfileReference], ref_template="#/$defs/{name}")
    subschema(body["$defs"])[PROFILE_REFERENCE] = components[PROFILE_REFERENCE]
    subschema(body["properties"])["analysis_profile"] = {
        "anyOf": [{"$ref": "#/$defs/AnalysisProfile"}, {"$ref": f"#/$defs/{PROFILE_REFERENCE}"}, {"type": "null"}]
    }
    body["description"] = (
        "An Evidence record in the compact presentation: complete but for analysis_profile, "
        "carried by its digest; evidence_id is the complete record's. Read normalized_result "
        "for the operation result."
    )
    return with_content_id(body)


@functools.cache
def lean_evidence_output_schema(result_type: ResultType | None = None) -> JSONObject:
    """The output schema of Evidence-producing tools under the lean presentation (``LeanEvidence``, its
    normalized_result typed as the tool's result)."""
    (root,), components = msgspec.json.schema_components([LeanEvidence], ref_template="#/$defs/{name}")
    body: JSONObject = copy.deepcopy(components.pop(root["$ref"].rsplit("/", 1)[-1]))
    body["$defs"] = components
    body["description"] = (
        "An Evidence record in the lean presentation: evidence_id is the complete record's (retained in the "
        "session), provenance names the artifact, provider and profile (open_binary, binary_session); absent "
        "envelope fields have their defaults. Read normalized_result for the operation result."
    )
    return with_content_id(typed_result(body, result_type))


def output_schema_for(
    tool_output_schema: JSONObject | None,
    complete: JSONObject,
    mode: str,
    result_type: ResultType | None = None,
) -> JSONObject:
    """The advertised output schema of a tool under ``mode`` (only Evidence results change)."""
    if tool_output_schema is None:
        if mode == COMPACT:
            return compact_evidence_output_schema(result_type)
        if mode == LEAN:
            return lean_evidence_output_schema(result_type)
    return complete
