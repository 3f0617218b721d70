"""Result shapes of the investigation tools (each tool's ``result_type``, or its output schema)."""

from __future__ import annotations

from typing import Literal

from rea.plugin import PageOf
from rea.plugin import Record
from rea.plugin import UnknownRevision

SCHEMA_VERSION = 1
LEDGER_SCHEMA = "ReconstructionObligationLedger/v1"

# How one comparison record judges what it compared (see common.judge).
Judgement = Literal["complete", "contradicted", "unknown"]


# -- unknowns --------------------------------------------------------------------------------------------------


class UnknownResult(Record):
    """record_unknown / update_unknown: the new head and the target registry's revision."""

    unknown: UnknownRevision
    registry_revision: str | None


class UnknownList(Record):
    """list_unknowns: heads matching the filters, sorted by severity then id."""

    targets: list[str]
    heads: PageOf[UnknownRevision]


class EvidenceCheck(Record):
    evidence_id: str
    present: bool
    same_target: bool
    authority: str | None
    confidence: str | None
    meets_authority: bool
    meets_confidence: bool
    meets_environment: bool


class UnknownVerification(Record):
    unknown_id: str
    revision: int
    status: str
    verdict: Literal["verified", "failed", "not-resolved"]
    checks: list[EvidenceCheck]
    problems: list[str]


# -- reconstruction -----------------------------------------------------------------------------------------


class Review(Record, omit_defaults=False):
    # An empty note is part of the answer (it always was): the one shape here that keeps its defaults.
    status: Literal["accepted", "waived", "disputed"]
    note: str = ""


class Obligation(Record):
    obligation_id: str
    kind: Literal["behaviour", "structure"]
    subject: str
    source: Literal["bundle", "manifest"]
    description: str
    evidence_ids: list[str]
    review: Review | None


class ObligationLedger(Record):
    schema: str
    bundle_record_ids_digest: str
    ledger_digest: str
    stale_reviews: list[str]
    obligations: PageOf[Obligation]


class ObligationCoverage(Record):
    obligation_id: str
    state: Literal["complete", "contradicted", "unknown", "uncovered", "waived"]
    comparison_evidence_ids: list[str]


class CoverageCounts(Record):
    complete: int
    contradicted: int
    unknown: int
    uncovered: int
    waived: int


class CoverageResult(Record):
    ledger_digest: str
    coverage_digest: str
    counts: CoverageCounts
    obligations: PageOf[ObligationCoverage]


class ClaimResult(Record):
    claim_id: str
    kind: Literal["behavioural", "structural"]
    state: Judgement
    comparison_evidence_ids: list[str]


class ReconstructionVerification(Record):
    verdict: Literal["pass", "fail", "unknown"]
    claim_count: int
    counts: dict[str, int]
    claims: PageOf[ClaimResult]


class PathStep(Record):
    address: str
    name: str | None
    evidence_id: str


class CallPath(Record):
    length: int
    steps: list[PathStep]


class CallPaths(Record):
    start: str
    goal: str
    complete: bool
    unanalysed_callees: list[str]
    paths: PageOf[CallPath]


# -- across versions ------------------------------------------------------------------------------------------


class BundleSide(Record):
    record_count: int
    record_ids_digest: str


class Membership(Record):
    shared: int
    left_only: int
    right_only: int


class PairedObservation(Record):
    operation: str
    subject: str
    status: Literal["same", "changed", "left-only", "right-only"]
    left_evidence_id: str | None
    right_evidence_id: str | None


class UnknownHistoryDelta(Record):
    unknown_id: str
    left_revision: int | None
    right_revision: int | None
    relation: Literal["same", "extended", "diverged", "left-only", "right-only"]


class BundleComparison(Record):
    left: BundleSide
    right: BundleSide
    membership: Membership
    observations: PageOf[PairedObservation]
    unknowns: list[UnknownHistoryDelta]


class ChangedBehavior(Record):
    subject: str
    operation: str
    change: Literal["changed", "unknown"]
    dimensions: list[str]
    evidence_id: str


class ChangedBehaviors(Record):
    comparison_count: int
    unchanged_count: int
    behaviors: PageOf[ChangedBehavior]


class HypothesisJudgement(Record):
    hypothesis_id: str
    static_evidence_id: str
    runtime_evidence_id: str
    dimension: str | None
    static_state: Judgement
    runtime_state: Judgement
    judgement: Literal["supported", "contradicted", "unknown"]


class Correlation(Record):
    counts: dict[str, int]
    hypotheses: PageOf[HypothesisJudgement]
