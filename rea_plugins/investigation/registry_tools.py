"""record_unknown, update_unknown, list_unknowns, verify_unknown_resolution and the unknowns resources."""

from __future__ import annotations

from typing import Literal
from typing import TypeVar

import msgspec

from rea.plugin import SEVERITY_ORDER
from rea.plugin import UNKNOWN_ID
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import Histories
from rea.plugin import JSONObject
from rea.plugin import Resolution
from rea.plugin import Session
from rea.plugin import ToolCall
from rea.plugin import UnknownRevision
from rea.plugin import UnknownStore
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import conflict
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import new_id
from rea.plugin import not_found
from rea.plugin import sealed
from rea_plugins.investigation import common
from rea_plugins.investigation.model import EvidenceCheck
from rea_plugins.investigation.model import UnknownList
from rea_plugins.investigation.model import UnknownResult
from rea_plugins.investigation.model import UnknownVerification

S = TypeVar("S", bound=msgspec.Struct)
CONFIDENCE_RANK = {"observed": 2, "derived": 1, "inferred": 0}


def store(session: Session) -> UnknownStore:
    """The unknowns live beside the session's annotation store."""
    return UnknownStore(session.annotations.root)


def _cited(call: ToolCall, sha256: str, ids: list[str], path: str) -> list[str]:
    """Cited Evidence ids, each retained in this session (authenticated on entry) and of this target."""
    for i, eid in enumerate(ids):
        ev = call.session.resolve_evidence({"kind": "retained-evidence", "evidence_id": eid}, f"{path}/{i}")
        target = common.target_of(ev)
        if target is not None and target != sha256:
            raise invalid_request(
                f"{path}/{i}: {eid} describes another target ({target})",
                [issue(f"{path}/{i}", "invalid_value", "the Evidence describes another target")],
            )
    return sorted(set(ids))


def _revision(
    call: ToolCall, a: Arguments, sha256: str, unknown_id: str, number: int, previous: str | None
) -> UnknownRevision:
    raw_resolution = arg_object(a, "resolution")
    resolution = None if raw_resolution is None else _decoded(raw_resolution, Resolution, "resolution")
    status = arg_str(a, "status", "open")
    if status == "resolved" and resolution is None:
        raise invalid_request(
            "a resolved unknown needs a resolution", [issue("resolution", "missing_argument", "required when resolved")]
        )
    if resolution is not None and status != "resolved":
        raise invalid_request(
            "a resolution is given only with status resolved",
            [issue("status", "invalid_value", "must be resolved when a resolution is given")],
        )
    if resolution is not None and resolution.kind == "answered" and not resolution.evidence_ids:
        raise invalid_request(
            "an answered resolution cites the Evidence that answers it",
            [issue("resolution/evidence_ids", "missing_argument", "at least one evidence id")],
        )
    if resolution is not None:
        resolution = msgspec.structs.replace(
            resolution, evidence_ids=_cited(call, sha256, resolution.evidence_ids, "resolution/evidence_ids")
        )
    relationships = sorted(
        {(arg_str(r, "kind", ""), arg_str(r, "unknown_id", "")) for r in arg_objects(a, "relationships") or []},
    )
    # The revision decoded from the user's fields, so each of its enums (severity, status, authority, confidence,
    # a relationship's kind) is checked once, by the revision's own types.
    fields: Arguments = {
        "unknown_id": unknown_id,
        "revision": number,
        "target_sha256": sha256,
        "domain": a.get("domain"),
        "question": a.get("question"),
        "severity": a.get("severity"),
        "status": status,
        "required_authority": a.get("required_authority"),
        "required_confidence": a.get("required_confidence"),
        "required_environment": arg_object(a, "required_environment"),
        "recommended_probes": arg_strs(a, "recommended_probes") or [],
        "relationships": [{"kind": k, "unknown_id": u} for k, u in relationships],
        "supporting_evidence_ids": _cited(
            call, sha256, arg_strs(a, "supporting_evidence_ids") or [], "supporting_evidence_ids"
        ),
        "contradicting_evidence_ids": _cited(
            call, sha256, arg_strs(a, "contradicting_evidence_ids") or [], "contradicting_evidence_ids"
        ),
        "resolution": None,
        "previous_digest": previous,
        "digest": "",
    }
    revision = _decoded(fields, UnknownRevision, "arguments")
    return sealed(msgspec.structs.replace(revision, resolution=resolution))


def _decoded(value: JSONObject, kind: type[S], path: str) -> S:
    """The user's JSON ``value`` as ``kind``; what its types refuse is invalid_request at ``path``."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise invalid_request(f"{path}: {exc}", [issue(path, "invalid_value", str(exc))]) from None


def _check_relationships(histories: Histories, unknown_id: str, rev: UnknownRevision) -> None:
    for i, rel in enumerate(rev.relationships):
        if rel.unknown_id == unknown_id or rel.unknown_id not in histories:
            raise invalid_request(
                f"relationships/{i}: {rel.unknown_id} is not another unknown of this target",
                [issue(f"relationships/{i}/unknown_id", "invalid_value", "no such unknown on this target")],
            )


# A session tool answers a plain JSON object (the kernel's handler contract): its result Struct as builtins.


def record_unknown(call: ToolCall) -> JSONObject:
    sha256 = call.session.require_target().sha256
    unknown_id = new_id(sha256)
    rev = _revision(call, call.args, sha256, unknown_id, 1, None)

    def change(histories: Histories) -> None:
        _check_relationships(histories, unknown_id, rev)
        histories[unknown_id] = [rev]

    reg = store(call.session).update(sha256, change, call.ctx)
    out: JSONObject = msgspec.to_builtins(UnknownResult(unknown=rev, registry_revision=reg.revision))
    return out


def update_unknown(call: ToolCall) -> JSONObject:
    unknown_id = arg_str(call.args, "unknown_id", "")  # required by the schema
    expected = arg_int(call.args, "expected_revision", 0)
    st = store(call.session)
    located = st.locate(unknown_id)
    sha256, seen = located.sha256, located.unknowns[unknown_id][-1]
    if seen.revision != expected:
        raise conflict(unknown_id, expected, seen.revision)
    # What the update leaves out stays as the head has it (domain and question never change).
    args: Arguments = {**msgspec.to_builtins(seen), **call.args, "domain": seen.domain, "question": seen.question}
    args["resolution"] = call.args.get("resolution")
    # Cited Evidence is checked before the lock: the compare-and-swap itself stays short.
    draft = _revision(call, args, sha256, unknown_id, expected + 1, None)
    made: list[UnknownRevision] = []

    def change(histories: Histories) -> None:
        history = histories.get(unknown_id)
        if not history:
            raise not_found(unknown_id)
        head = history[-1]
        if head.revision != expected:
            raise conflict(unknown_id, expected, head.revision)
        _check_relationships(histories, unknown_id, draft)
        rev = sealed(msgspec.structs.replace(draft, revision=head.revision + 1, previous_digest=head.digest))
        history.append(rev)
        made.append(rev)

    reg = st.update(sha256, change, call.ctx)
    out: JSONObject = msgspec.to_builtins(UnknownResult(unknown=made[0], registry_revision=reg.revision))
    return out


def heads(session: Session) -> tuple[list[str], list[UnknownRevision]]:
    """The open target's unknown heads; with no target open, those of every target in the store."""
    st = store(session)
    targets = [session.target.sha256] if session.target is not None else st.targets()
    found = [h for sha in targets for h in st.load(sha).heads()]
    return targets, sorted(found, key=lambda h: (SEVERITY_ORDER.index(h.severity), h.unknown_id))


def list_unknowns(call: ToolCall) -> JSONObject:
    targets, found = heads(call.session)
    a = call.args
    kept = [h for h in found if all(a.get(k) in (None, getattr(h, k)) for k in ("status", "severity", "domain"))]
    out: JSONObject = msgspec.to_builtins(UnknownList(targets=targets, heads=common.page(kept, a)))
    return out


def verify_unknown_resolution(call: ToolCall) -> Evidence:
    unknown_id = arg_str(call.args, "unknown_id", "")  # required by the schema
    reg = store(call.session).locate(unknown_id)
    head = reg.unknowns[unknown_id][-1]
    checks: list[EvidenceCheck] = []
    present: list[Evidence] = []
    problems: list[str] = []
    resolution = head.resolution
    if head.status != "resolved" or resolution is None:
        problems.append(f"the head (revision {head.revision}) is {head.status}, not resolved")
    elif resolution.kind == "withdrawn":
        problems.append("the unknown was withdrawn, not answered: there is no Evidence to check")
    for eid in resolution.evidence_ids if resolution is not None else []:
        ev = call.session.ledger.get(eid)
        if ev is None and call.session.ledger.fallback is not None:
            ev = call.session.ledger.fallback(eid)
        if ev is None:
            checks.append(
                EvidenceCheck(
                    evidence_id=eid,
                    present=False,
                    same_target=False,
                    authority=None,
                    confidence=None,
                    meets_authority=False,
                    meets_confidence=False,
                    meets_environment=False,
                )
            )
            problems.append(f"{eid} is not retained in this session (import the bundle that carries it)")
            continue
        present.append(ev)
        target = common.target_of(ev)
        env = head.required_environment
        meets_env = env is None or (
            ev.environment is not None
            and all(
                want is None or getattr(ev.environment, field) == want
                for field, want in (
                    ("platform", env.platform),
                    ("architecture", env.architecture),
                    ("isolation", env.isolation),
                )
            )
        )
        check = EvidenceCheck(
            evidence_id=eid,
            present=True,
            same_target=target in (None, head.target_sha256),
            authority=ev.authority,
            confidence=ev.confidence,
            meets_authority=ev.authority == head.required_authority,
            meets_confidence=CONFIDENCE_RANK[ev.confidence] >= CONFIDENCE_RANK[head.required_confidence],
            meets_environment=meets_env,
        )
        checks.append(check)
        for ok, what in (
            (check.same_target, "describes another target"),
            (check.meets_authority, f"has authority {ev.authority}, not the required {head.required_authority}"),
            (check.meets_confidence, f"has confidence {ev.confidence}, below the required {head.required_confidence}"),
            (check.meets_environment, "was not observed in the required environment"),
        ):
            if not ok:
                problems.append(f"{eid} {what}")
    verdict: Literal["verified", "failed", "not-resolved"]
    if head.status != "resolved" or resolution is None:
        verdict = "not-resolved"
    else:
        verdict = "failed" if problems else "verified"
    result = UnknownVerification(
        unknown_id=unknown_id,
        revision=head.revision,
        status=head.status,
        verdict=verdict,
        checks=checks,
        problems=problems,
    )
    params: JSONObject = {"unknown_id": unknown_id, "revision": head.revision, "revision_digest": head.digest}
    return common.derived(call, "verify_unknown_resolution", params, result, present)


def read_active(session: Session, variables: dict[str, str]) -> str:
    """rea://unknowns/active: every head not resolved (the open target's, or every target's with none open)."""
    targets, found = heads(session)
    active = [h for h in found if h.status != "resolved"]
    return msgspec.json.encode({"targets": targets, "unknowns": active}).decode()


def read_unknown(session: Session, variables: dict[str, str]) -> str:
    """rea://unknown/{unknown_id}: one unknown's whole revision history, oldest first."""
    unknown_id = variables["unknown_id"]
    if not UNKNOWN_ID.match(unknown_id):
        raise not_found(unknown_id, "uri")
    reg = store(session).locate(unknown_id)
    return msgspec.json.encode({"unknown_id": unknown_id, "revisions": reg.unknowns[unknown_id]}).decode()
