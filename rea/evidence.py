"""Evidence: canonical, hash-identified records of what an analysis observed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal

import msgspec

from rea.canonical import CanonicalError
from rea.canonical import canonical_digest
from rea.errors import ReaError
from rea.records import JSONObject
from rea.records import JSONValue
from rea.sizes import remember_size

EVIDENCE_ID = re.compile(r"^ev_[0-9a-f]{64}$")
PREDICATE_TYPE = "rea.analysis"

Confidence = Literal["observed", "derived", "inferred"]
Authority = Literal[
    "shipped-artifact", "controlled-replay", "historical-reference", "external-service", "analyst-inference"
]
NO_SUBJECT = "Artifact identity is unavailable for this observation."


# A call's arguments or a provider's settings as recorded: JSON the caller or the provider chose, not one shape.
Parameters = dict[str, JSONValue]
# Where a result is: the contract leaves a location open (an address, a file and line, a URL), so it is JSON.
Location = dict[str, JSONValue]


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Digest(_Strict, frozen=True):
    sha256: str


class Subject(_Strict, frozen=True):
    """The analysed artifact. ``name`` and ``local_path`` are display-only: not part of identity."""

    name: str
    local_path: str
    digest: Digest
    size: int
    format: str
    architecture: str | None


class ProviderIdentity(_Strict, frozen=True):
    id: str
    name: str
    version: str | None


class AnalysisProfile(_Strict, frozen=True):
    """The provider settings that shaped a result; ``digest`` commits to the rest."""

    schema_version: int
    provider: ProviderIdentity
    provider_profile_schema_version: int
    parameters: Parameters
    digest: str


class Environment(_Strict, frozen=True):
    id: str
    platform: str
    architecture: str
    isolation: Literal["none", "process", "container", "virtual-machine"]


class Evidence(_Strict, frozen=True):
    """One complete Evidence record (6.2 shape). Every field is required when decoding."""

    evidence_id: str
    subject: Subject | None
    provider: ProviderIdentity
    analysis_profile: AnalysisProfile | None
    predicate_type: str
    operation: str
    parameters: Parameters
    raw_result: Any
    normalized_result: Any
    confidence: Confidence
    authority: Authority
    environment: Environment | None
    limitations: list[str]
    locations: list[Location]
    evidence_links: list[str]


class _SubjectIdentity(_Strict, frozen=True):
    digest: Digest
    size: int
    format: str
    architecture: str | None


class _EvidenceIdentity(_Strict, frozen=True):
    """The semantic projection that ``evidence_id`` hashes: display-only fields left out."""

    subject: _SubjectIdentity | None
    provider: ProviderIdentity
    analysis_profile: AnalysisProfile | None
    predicate_type: str
    operation: str
    parameters: Parameters
    raw_result: Any
    normalized_result: Any
    confidence: Confidence
    authority: Authority
    environment: Environment | None
    limitations: list[str]
    locations: list[Location]
    evidence_links: list[str]


PROVENANCE_ID = re.compile(r"^pv_[0-9a-f]{16}$")


class Provenance(_Strict, frozen=True):
    """Where a record comes from: the artifact, the provider and its profile. Every record of one binding shares
    it, so the lean presentation (rea.presentation) names it by ``id`` and says it once per session."""

    id: str
    subject: Subject | None
    provider: ProviderIdentity
    analysis_profile: AnalysisProfile | None


class _ProvenanceIdentity(_Strict, frozen=True):
    subject: _SubjectIdentity | None
    provider: ProviderIdentity
    analysis_profile_digest: str | None


class LeanEvidence(_Strict, frozen=True, kw_only=True, omit_defaults=True):
    """An Evidence record in the lean presentation: the same record (same ``evidence_id``), its provenance by id,
    and only the envelope fields that say something. An absent field has its default: no raw result, confidence
    ``observed``, authority ``shipped-artifact``, no environment, limitations, locations or links. Left out always:
    ``predicate_type`` (always ``rea.analysis``) and ``parameters`` (the arguments the caller passed, normalized;
    a page or a selection says in its result what it covers). The complete record is retained under the id."""

    evidence_id: str
    operation: str
    provenance: str
    confidence: Confidence = "observed"
    authority: Authority = "shipped-artifact"
    limitations: list[str] = []
    locations: list[Location] = []
    evidence_links: list[str] = []
    environment: Environment | None = None
    normalized_result: Any
    raw_result: Any = None


_LEAN_DEFAULTS: dict[str, object] = {
    f.name: f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
    for f in msgspec.structs.fields(LeanEvidence)
}


def _subject_identity(s: Subject | None) -> _SubjectIdentity | None:
    if s is None:
        return None
    return _SubjectIdentity(digest=s.digest, size=s.size, format=s.format, architecture=s.architecture)


def provenance_id(subject: Subject | None, provider: ProviderIdentity, profile: AnalysisProfile | None) -> str:
    """A short id bound to the provenance's content: the artifact's identity (digest, size, format, architecture;
    never its display name or path), the provider and the profile's digest. 64 bits: a name within a session's
    records, not a cryptographic commitment (the evidence_id is that)."""
    identity = _ProvenanceIdentity(
        subject=_subject_identity(subject),
        provider=provider,
        analysis_profile_digest=None if profile is None else profile.digest,
    )
    return "pv_" + canonical_digest(identity)[:16]


def provenance(ev: Evidence) -> Provenance:
    """A record's provenance, with its id."""
    return Provenance(
        id=provenance_id(ev.subject, ev.provider, ev.analysis_profile),
        subject=ev.subject,
        provider=ev.provider,
        analysis_profile=ev.analysis_profile,
    )


def lean(ev: Evidence) -> LeanEvidence:
    """``ev`` in the lean presentation (its result as it is: a Struct result is not converted)."""
    # A field equal to its default is left to the default (omit_defaults compares strings by identity). The
    # values are LeanEvidence's keyword arguments, each its own type: Any is what a ** of mixed types takes.
    optional: dict[str, Any] = {
        name: value
        for name, value in (
            ("confidence", ev.confidence),
            ("authority", ev.authority),
            ("limitations", ev.limitations),
            ("locations", ev.locations),
            ("evidence_links", ev.evidence_links),
            ("environment", ev.environment),
            ("raw_result", ev.raw_result),
        )
        if value != _LEAN_DEFAULTS[name]
    }
    return LeanEvidence(
        evidence_id=ev.evidence_id,
        operation=ev.operation,
        provenance=provenance_id(ev.subject, ev.provider, ev.analysis_profile),
        normalized_result=ev.normalized_result,
        **optional,
    )


def semantic_projection(ev: Evidence) -> _EvidenceIdentity:
    return _EvidenceIdentity(
        subject=_subject_identity(ev.subject),
        provider=ev.provider,
        analysis_profile=ev.analysis_profile,
        predicate_type=ev.predicate_type,
        operation=ev.operation,
        parameters=ev.parameters,
        raw_result=ev.raw_result,
        normalized_result=ev.normalized_result,
        confidence=ev.confidence,
        authority=ev.authority,
        environment=ev.environment,
        limitations=ev.limitations,
        locations=ev.locations,
        evidence_links=ev.evidence_links,
    )


def as_object(value: Any) -> Any:
    """A Struct in a result as the JSON object it encodes to, one level deep (encoded names, its tag, defaults
    left out where it omits them); any other value unchanged. Readers of large Struct results walk them this way
    instead of converting the whole record to builtins."""
    if not isinstance(value, msgspec.Struct):
        return value
    config = value.__struct_config__
    if config.array_like:
        return msgspec.to_builtins(value)
    # Each member as the Struct holds it (a Struct, a list, a scalar): encoded as it is.
    out: dict[str, object] = {}
    if config.tag_field is not None:
        out[config.tag_field] = config.tag
    for field in msgspec.structs.fields(value):
        item = getattr(value, field.name)
        if config.omit_defaults:
            if field.default_factory is not msgspec.NODEFAULT:
                if type(item) is type(default := field.default_factory()) and item == default:
                    continue
            elif field.default is not msgspec.NODEFAULT and type(item) is type(field.default) and item == field.default:
                continue
        out[field.encode_name] = item
    return out


def compute_evidence_id(ev: Evidence) -> str:
    try:
        stats: list[int] = []
        measured: list[int] = []
        evidence_id = "ev_" + canonical_digest(semantic_projection(ev), stats, measured)
        # The hash has just measured the record: keep that, so a result too large for the transport is
        # refused without encoding it again, and the ledger knows what it holds.
        if stats:
            remember_size(evidence_id, *stats)
        elif measured:
            remember_size(evidence_id, measured[0], None)
        return evidence_id
    except CanonicalError as exc:
        raise ReaError(
            "evidence_integrity_mismatch",
            f"Evidence has no canonical JSON form: {exc}",
            details={"reason": "not_canonicalizable"},
        ) from None


def make_profile(
    provider: ProviderIdentity, parameters: Mapping[str, JSONValue], schema_version: int = 1
) -> AnalysisProfile:
    """Build an AnalysisProfile whose digest commits to provider, version and parameters."""
    body = {
        "schema_version": 1,
        "provider": provider,
        "provider_profile_schema_version": schema_version,
        "parameters": parameters,
    }
    return AnalysisProfile(
        schema_version=1,
        provider=provider,
        provider_profile_schema_version=schema_version,
        parameters=dict(parameters),
        digest=canonical_digest(body),
    )


def build(
    *,
    operation: str,
    provider: ProviderIdentity,
    subject: Subject | None,
    analysis_profile: AnalysisProfile | None,
    parameters: Mapping[str, JSONValue],
    normalized_result: Any,
    raw_result: Any = None,
    confidence: Confidence = "observed",
    authority: Authority = "shipped-artifact",
    environment: Environment | None = None,
    limitations: list[str] | None = None,
    locations: Sequence[Mapping[str, JSONValue]] | None = None,
    evidence_links: list[str] | None = None,
) -> Evidence:
    """Assemble a record and stamp its ``evidence_id``."""
    lims = list(limitations or [])
    if subject is None and NO_SUBJECT not in lims:
        lims.append(NO_SUBJECT)
    draft = Evidence(
        evidence_id="",
        subject=subject,
        provider=provider,
        analysis_profile=analysis_profile,
        predicate_type=PREDICATE_TYPE,
        operation=operation,
        parameters=dict(parameters),
        raw_result=raw_result,
        normalized_result=normalized_result,
        confidence=confidence,
        authority=authority,
        environment=environment,
        limitations=lims,
        locations=[dict(x) for x in locations or ()],
        evidence_links=sorted(set(evidence_links or [])),
    )
    return msgspec.structs.replace(draft, evidence_id=compute_evidence_id(draft))


def _integrity(message: str, **details: Any) -> ReaError:
    return ReaError(
        "evidence_integrity_mismatch",
        message,
        remediation="Regenerate the Evidence with its producer; edited records are never accepted.",
        details=details,
    )


def validate(ev: Evidence) -> Evidence:
    """Check a decoded record: id format, profile commitment and id-to-content binding."""
    if not EVIDENCE_ID.match(ev.evidence_id):
        raise _integrity(
            "evidence_id must be ev_ followed by 64 lowercase hex digits",
            evidence_id=ev.evidence_id,
            reason="malformed_id",
        )
    prof = ev.analysis_profile
    if prof is not None:
        if prof.provider != ev.provider:
            raise _integrity(
                "analysis_profile.provider differs from the record's provider",
                evidence_id=ev.evidence_id,
                reason="profile_provider_mismatch",
            )
        expected = make_profile(prof.provider, prof.parameters, prof.provider_profile_schema_version).digest
        if prof.schema_version != 1 or expected != prof.digest:
            raise _integrity(
                "analysis_profile.digest does not match its content",
                evidence_id=ev.evidence_id,
                reason="profile_digest_mismatch",
            )
    actual = compute_evidence_id(ev)
    if actual != ev.evidence_id:
        raise _integrity(
            "Evidence semantic identifier does not match its record",
            evidence_id=ev.evidence_id,
            computed_evidence_id=actual,
            reason="id_mismatch",
        )
    return ev


def from_builtins(obj: Any) -> Evidence:
    """Decode and authenticate an inline record (a dict from JSON arguments)."""
    try:
        ev = msgspec.convert(obj, Evidence)
    except msgspec.ValidationError as exc:
        raise _integrity(f"not a valid Evidence record: {exc}", reason="malformed_record") from None
    return validate(ev)


def decode(data: bytes) -> Evidence:
    """Decode and authenticate one JSON-encoded record."""
    try:
        ev = msgspec.json.decode(data, type=Evidence)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise _integrity(f"not a valid Evidence record: {exc}", reason="malformed_record") from None
    return validate(ev)


_JSON = msgspec.json.Encoder()


def encode(ev: Evidence) -> bytes:
    """Compact JSON of the complete record (not canonical; identity uses the projection)."""
    return _JSON.encode(ev)


def to_builtins(ev: Evidence) -> JSONObject:
    out: JSONObject = msgspec.to_builtins(ev)
    return out


def retained_reference(evidence_id: str) -> dict[str, str]:
    return {"kind": "retained-evidence", "evidence_id": evidence_id}
