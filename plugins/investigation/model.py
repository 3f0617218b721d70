"""Result shapes of the investigation tools (each tool's ``result_type``, or its output schema)."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

import msgspec

from rea.plugin import UnknownRevision

T = TypeVar("T")
SCHEMA_VERSION = 1
LEDGER_SCHEMA = "ReconstructionObligationLedger/v1"

# How one comparison record judges what it compared (see common.judge).
Judgement = Literal["complete", "contradicted", "unknown"]


class _S(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Page(_S, Generic[T], frozen=True):
    total: int
    offset: int
    items: list[T]


# -- unknowns --------------------------------------------------------------------------------------------------


class UnknownResult(_S, frozen=True):
    """record_unknown / update_unknown: the new head and the target registry's revision."""

    unknown: UnknownRevision
    registry_revision: str | None


class UnknownList(_S, frozen=True):
    """list_unknowns: heads matching the filters, sorted by severity then id."""

    targets: list[str]
    heads: Page[UnknownRevision]


class EvidenceCheck(_S, frozen=True):
    evidence_id: str
    present: bool
    same_target: bool
    authority: str | None
    confidence: str | None
    meets_authority: bool
    meets_confidence: bool
    meets_environment: bool


class UnknownVerification(_S, frozen=True):
    unknown_id: str
    revision: int
    status: str
    verdict: Literal["verified", "failed", "not-resolved"]
    checks: list[EvidenceCheck]
    problems: list[str]


# -- reconstruction -----------------------------------------------------------------------------------------


class Review(_S, frozen=True):
    status: Literal["accepted", "waived", "disputed"]
    note: str = ""


class Obligation(_S, frozen=True):
    obligation_id: str
    kind: Literal["behaviour", "structure"]
    subject: str
    source: Literal["bundle", "manifest"]
    description: str
    evidence_ids: list[str]
    review: Review | None


class ObligationLedger(_S, frozen=True):
    schema: str
    bundle_record_ids_digest: str
    ledger_digest: str
    stale_reviews: list[str]
    obligations: Page[Obligation]


class ObligationCoverage(_S, frozen=True):
    obligation_id: str
    state: Literal["complete", "contradicted", "unknown", "uncovered", "waived"]
    comparison_evidence_ids: list[str]


class CoverageCounts(_S, frozen=True):
    complete: int
    contradicted: int
    unknown: int
    uncovered: int
    waived: int


class CoverageResult(_S, frozen=True):
    ledger_digest: str
    coverage_digest: str
    counts: CoverageCounts
    obligations: Page[ObligationCoverage]


class ClaimResult(_S, frozen=True):
    claim_id: str
    kind: Literal["behavioural", "structural"]
    state: Judgement
    comparison_evidence_ids: list[str]


class ReconstructionVerification(_S, frozen=True):
    verdict: Literal["pass", "fail", "unknown"]
    claim_count: int
    counts: dict[str, int]
    claims: Page[ClaimResult]


class PathStep(_S, frozen=True):
    address: str
    name: str | None
    evidence_id: str


class CallPath(_S, frozen=True):
    length: int
    steps: list[PathStep]


class CallPaths(_S, frozen=True):
    start: str
    goal: str
    complete: bool
    unanalysed_callees: list[str]
    paths: Page[CallPath]


# -- across versions ------------------------------------------------------------------------------------------


class BundleSide(_S, frozen=True):
    record_count: int
    record_ids_digest: str


class Membership(_S, frozen=True):
    shared: int
    left_only: int
    right_only: int


class PairedObservation(_S, frozen=True):
    operation: str
    subject: str
    status: Literal["same", "changed", "left-only", "right-only"]
    left_evidence_id: str | None
    right_evidence_id: str | None


class UnknownHistoryDelta(_S, frozen=True):
    unknown_id: str
    left_revision: int | None
    right_revision: int | None
    relation: Literal["same", "extended", "diverged", "left-only", "right-only"]


class BundleComparison(_S, frozen=True):
    left: BundleSide
    right: BundleSide
    membership: Membership
    observations: Page[PairedObservation]
    unknowns: list[UnknownHistoryDelta]


class ChangedBehavior(_S, frozen=True):
    subject: str
    operation: str
    change: Literal["changed", "unknown"]
    dimensions: list[str]
    evidence_id: str


class ChangedBehaviors(_S, frozen=True):
    comparison_count: int
    unchanged_count: int
    behaviors: Page[ChangedBehavior]


class HypothesisJudgement(_S, frozen=True):
    hypothesis_id: str
    static_evidence_id: str
    runtime_evidence_id: str
    dimension: str | None
    static_state: Judgement
    runtime_state: Judgement
    judgement: Literal["supported", "contradicted", "unknown"]


class Correlation(_S, frozen=True):
    counts: dict[str, int]
    hypotheses: Page[HypothesisJudgement]
