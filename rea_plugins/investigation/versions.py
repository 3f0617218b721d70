"""Investigations across versions: compare_bundles, find_changed_behavior, correlate_static_and_runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import UnknownsRegistry as Unknowns
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import bundle as bundle_mod
from rea.plugin import canonical_digest
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.investigation import common
from rea_plugins.investigation.model import BundleComparison
from rea_plugins.investigation.model import BundleSide
from rea_plugins.investigation.model import ChangedBehavior
from rea_plugins.investigation.model import ChangedBehaviors
from rea_plugins.investigation.model import Correlation
from rea_plugins.investigation.model import HypothesisJudgement
from rea_plugins.investigation.model import Membership
from rea_plugins.investigation.model import PairedObservation
from rea_plugins.investigation.model import UnknownHistoryDelta


def _pair_key(ev: Evidence) -> tuple[str, str]:
    """What an observation is of, across versions: its operation and procedure name (else address, else the
    digest of its parameters)."""
    proc = bundle_mod.procedure_metadata(ev.normalized_result)
    if proc is not None:
        return ev.operation, str(proc.get("name") or proc["address"])
    return ev.operation, canonical_digest(ev.parameters)[:16]


def _histories(registries: list[Unknowns]) -> dict[str, list[str]]:
    return {uid: [r.digest for r in h] for reg in registries for uid, h in reg.unknowns.items()}


def _unknown_deltas(left: list[Unknowns], right: list[Unknowns]) -> list[UnknownHistoryDelta]:
    lh, rh = _histories(left), _histories(right)
    out = []
    for uid in sorted(set(lh) | set(rh)):
        a, b = lh.get(uid), rh.get(uid)
        relation: Literal["same", "extended", "diverged", "left-only", "right-only"]
        if a is None or b is None:
            relation = "right-only" if a is None else "left-only"
        elif a == b:
            relation = "same"
        elif b[: len(a)] == a:
            relation = "extended"
        else:
            relation = "diverged"
        out.append(
            UnknownHistoryDelta(
                unknown_id=uid,
                left_revision=None if a is None else len(a),
                right_revision=None if b is None else len(b),
                relation=relation,
            )
        )
    return out


def compare_bundles(call: ToolCall) -> Evidence:
    left = bundle_mod.load_bundle(arg_str(call.args, "left_bundle_path", ""), ctx=call.ctx)  # required
    right = bundle_mod.load_bundle(arg_str(call.args, "right_bundle_path", ""), ctx=call.ctx)  # required
    lids = {r.evidence_id: r for r in left.records}
    rids = {r.evidence_id: r for r in right.records}
    observations: list[PairedObservation] = []
    paired_left: set[str] = set()
    paired_right: set[str] = set()
    pairs = arg_objects(call.args, "record_pairs") or []
    for i, pair in enumerate(pairs):
        lev, rev = _named(
            f"record_pairs/{i}",
            pair,
            {"left": lids, "right": rids},
            lambda s: (f"the {s} record is not in the {s} bundle", f"not in the {s} bundle"),
        )
        paired_left.add(lev.evidence_id)
        paired_right.add(rev.evidence_id)
        observations.append(_paired(lev, rev))
    lkeys: dict[tuple[str, str], Evidence] = {}
    for ev in left.records:
        if ev.evidence_id not in paired_left:
            lkeys.setdefault(_pair_key(ev), ev)
    rkeys: dict[tuple[str, str], Evidence] = {}
    for ev in right.records:
        if ev.evidence_id not in paired_right:
            rkeys.setdefault(_pair_key(ev), ev)
    for key in sorted(set(lkeys) | set(rkeys)):
        call.ctx.check("compare_bundles")
        lev2, rev2 = lkeys.get(key), rkeys.get(key)
        if lev2 is not None and rev2 is not None:
            observations.append(_paired(lev2, rev2))
        else:
            only = lev2 or rev2
            assert only is not None
            observations.append(
                PairedObservation(
                    operation=key[0],
                    subject=key[1],
                    status="left-only" if rev2 is None else "right-only",
                    left_evidence_id=None if lev2 is None else lev2.evidence_id,
                    right_evidence_id=None if rev2 is None else rev2.evidence_id,
                )
            )
    observations.sort(key=lambda o: (o.operation, o.subject, o.left_evidence_id or "", o.right_evidence_id or ""))
    lm, rm = bundle_mod.manifest(left.records), bundle_mod.manifest(right.records)
    result = BundleComparison(
        left=BundleSide(record_count=lm.record_count, record_ids_digest=lm.record_ids_digest),
        right=BundleSide(record_count=rm.record_count, record_ids_digest=rm.record_ids_digest),
        membership=Membership(
            shared=len(set(lids) & set(rids)),
            left_only=len(set(lids) - set(rids)),
            right_only=len(set(rids) - set(lids)),
        ),
        observations=common.page(observations, call.args),
        unknowns=_unknown_deltas(left.unknowns, right.unknowns),
    )
    params: JSONObject = {
        "left_record_ids_digest": lm.record_ids_digest,
        "right_record_ids_digest": rm.record_ids_digest,
        "record_pairs": pairs,
        **common.paging(call.args),
    }
    return common.derived(call, "compare_bundles", params, result, sorted(set(lids) | set(rids)))


def _named(
    path: str, item: JSONObject, sides: dict[str, dict[str, Evidence]], missing: Callable[[str], tuple[str, str]]
) -> tuple[Evidence, Evidence]:
    """The two records ``item``'s ``<side>_evidence_id`` name, one per side; the first not among its side's records
    is refused (``missing(side)``: the message and the issue's text)."""
    found: list[Evidence] = []
    for side, records in sides.items():
        ev = records.get(arg_str(item, f"{side}_evidence_id", ""))
        if ev is None:
            message, problem = missing(side)
            raise invalid_request(f"{path}: {message}", [issue(f"{path}/{side}_evidence_id", "invalid_value", problem)])
        found.append(ev)
    return found[0], found[1]


def _paired(left: Evidence, right: Evidence) -> PairedObservation:
    key = _pair_key(left)
    same = canonical_digest(left.normalized_result) == canonical_digest(right.normalized_result)
    return PairedObservation(
        operation=key[0],
        subject=key[1],
        status="same" if same else "changed",
        left_evidence_id=left.evidence_id,
        right_evidence_id=right.evidence_id,
    )


def _require_comparisons(records: list[Evidence], key: str) -> None:
    for i, ev in enumerate(records):
        if not common.is_comparison(ev):
            raise invalid_request(
                f"{key}/{i} is {ev.operation} Evidence, not a comparison",
                [issue(f"{key}/{i}", "invalid_value", "expected Evidence of a compare_* or verify_* tool")],
            )


def find_changed_behavior(call: ToolCall) -> Evidence:
    records = common.resolve_all(call, "comparisons")
    _require_comparisons(records, "comparisons")
    behaviors: list[ChangedBehavior] = []
    unchanged = 0
    for ev in records:
        state = common.judge(ev.normalized_result)
        dims = common.dimensions(ev.normalized_result)
        if state == "complete" and "contradicted" not in dims.values():
            unchanged += 1
            continue
        changed_dims = sorted(d for d, s in dims.items() if s != "complete")
        behaviors.append(
            ChangedBehavior(
                subject=common.subject_label(ev),
                operation=ev.operation,
                change="changed" if state == "contradicted" or "contradicted" in dims.values() else "unknown",
                dimensions=changed_dims,
                evidence_id=ev.evidence_id,
            )
        )
    behaviors.sort(key=lambda b: (b.change, b.subject, b.evidence_id))
    result = ChangedBehaviors(
        comparison_count=len(records), unchanged_count=unchanged, behaviors=common.page(behaviors, call.args)
    )
    params: JSONObject = {"comparisons": sorted(r.evidence_id for r in records), **common.paging(call.args)}
    return common.derived(call, "find_changed_behavior", params, result, records)


def correlate(call: ToolCall) -> Evidence:
    static = {r.evidence_id: r for r in common.resolve_all(call, "static_comparisons")}
    runtime = {r.evidence_id: r for r in common.resolve_all(call, "runtime_comparisons")}
    _require_comparisons(list(static.values()), "static_comparisons")
    _require_comparisons(list(runtime.values()), "runtime_comparisons")
    judged: list[HypothesisJudgement] = []
    mappings = arg_objects(call.args, "mappings") or []
    for i, m in enumerate(mappings):
        sev, rev = _named(
            f"mappings/{i}",
            m,
            {"static": static, "runtime": runtime},
            lambda s: (f"the {s} evidence id is not among {s}_comparisons", f"not in {s}_comparisons"),
        )
        s_state = common.judge(sev.normalized_result)
        dimension = arg_str(m, "dimension")
        if dimension is None:
            r_state = common.judge(rev.normalized_result)
        else:
            r_state = common.dimensions(rev.normalized_result).get(dimension, "unknown")
        judgement: Literal["supported", "contradicted", "unknown"]
        if "unknown" in (s_state, r_state):
            judgement = "unknown"
        else:
            # A hypothesis maps a static change to a runtime change: both changed or both unchanged supports it.
            judgement = "supported" if s_state == r_state else "contradicted"
        judged.append(
            HypothesisJudgement(
                hypothesis_id=arg_str(m, "hypothesis_id", ""),
                static_evidence_id=sev.evidence_id,
                runtime_evidence_id=rev.evidence_id,
                dimension=dimension,
                static_state=s_state,
                runtime_state=r_state,
                judgement=judgement,
            )
        )
    judged.sort(key=lambda h: h.hypothesis_id)
    counts = {j: sum(1 for h in judged if h.judgement == j) for j in ("supported", "contradicted", "unknown")}
    result = Correlation(counts=counts, hypotheses=common.page(judged, call.args))
    params: JSONObject = {
        "static_comparisons": sorted(static),
        "runtime_comparisons": sorted(runtime),
        "mappings": common.sorted_by(mappings, "hypothesis_id"),
        **common.paging(call.args),
    }
    inputs = [static[k] for k in sorted(static)] + [runtime[k] for k in sorted(runtime) if k not in static]
    return common.derived(call, "correlate_static_and_runtime", params, result, inputs)
