"""Reconstruction: the obligation ledger, its coverage, specification checks and call paths."""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import msgspec

from rea.plugin import Evidence, JSONObject, ToolCall, canonical_digest, invalid_request, issue
from rea.plugin import bundle as bundle_mod
from rea_plugins.investigation import common
from rea_plugins.investigation.model import (
    LEDGER_SCHEMA,
    CallPath,
    CallPaths,
    ClaimResult,
    CoverageCounts,
    CoverageResult,
    Obligation,
    ObligationCoverage,
    ObligationLedger,
    PathStep,
    ReconstructionVerification,
    Review,
)

Kind = Literal["behaviour", "structure"]
BEHAVIOUR_PREFIXES = ("capture_", "observe_", "run_", "trace_")


def load_bundle(call: ToolCall, key: str) -> bundle_mod.Bundle:
    """The bundle ``call.args[key]`` names ({"path": ...}), authenticated whole (records, annotations, unknowns)."""
    spec = call.args[key]
    return bundle_mod.load_bundle(spec["path"], ctx=call.ctx)


def _observation_key(ev: Evidence) -> tuple[Kind, str]:
    """(kind, subject) of the obligation an observation creates; stable across re-analysis of one target."""
    kind: Kind = (
        "behaviour" if ev.operation.startswith(BEHAVIOUR_PREFIXES) or ev.environment is not None else "structure"
    )
    proc = bundle_mod.procedure_metadata(ev.normalized_result)
    what = canonical_digest(ev.parameters)[:16] if proc is None else f"{proc.get('name') or '?'}@{proc['address']}"
    target = common.target_of(ev) or "none"
    return kind, f"{ev.operation} {what} ({target[:12]})"


def obligations(call: ToolCall, loaded: bundle_mod.Bundle) -> tuple[list[Obligation], list[str]]:
    """Every obligation of the bundle and manifest, sorted by id, with the caller's reviews carried over; and
    the reviewed ids that no longer name an obligation."""
    groups: dict[tuple[Kind, str], list[str]] = {}
    for ev in loaded.records:
        if common.is_comparison(ev) or ev.provider.id == common.PROVIDER.id or ev.operation == "error_diagnostic":
            continue
        groups.setdefault(_observation_key(ev), []).append(ev.evidence_id)
    made: dict[str, Obligation] = {}
    for (kind, subject), ids in groups.items():
        oid = "obl_" + canonical_digest({"kind": kind, "subject": subject})[:24]
        made[oid] = Obligation(
            obligation_id=oid,
            kind=kind,
            subject=subject,
            source="bundle",
            description=f"show the observed {kind}",  # type: ignore[arg-type]
            evidence_ids=sorted(ids),
            review=None,
        )
    manifest = call.args.get("manifest") or {}
    pairs: tuple[tuple[Kind, str], ...] = (("behaviour", "behaviours"), ("structure", "structures"))
    for kind, key in pairs:
        for item in manifest.get(key) or []:
            subject = f"manifest {item['id']}"
            oid = "obl_" + canonical_digest({"kind": kind, "subject": subject})[:24]
            made[oid] = Obligation(
                obligation_id=oid,
                kind=kind,
                subject=subject,
                source="manifest",  # type: ignore[arg-type]
                description=item.get("description", ""),
                evidence_ids=sorted(item.get("evidence_ids") or []),
                review=None,
            )
    stale: list[str] = []
    for review in call.args.get("reviewed_obligations") or []:
        oid = review["obligation_id"]
        if oid not in made:
            stale.append(oid)
            continue
        made[oid] = msgspec.structs.replace(
            made[oid], review=Review(status=review["status"], note=review.get("note", ""))
        )
    return [made[k] for k in sorted(made)], sorted(set(stale))


def _ledger_parameters(call: ToolCall, loaded: bundle_mod.Bundle) -> JSONObject:
    # The bundle by content, never by path: the same inputs give the same record on every machine. The manifest and
    # the reviews are the user's JSON, as given.
    return {
        "bundle_record_ids_digest": bundle_mod.manifest(loaded.records).record_ids_digest,
        "manifest": call.args.get("manifest") or {},
        "reviewed_obligations": sorted(call.args.get("reviewed_obligations") or [], key=lambda r: r["obligation_id"]),
    }


def build_ledger(call: ToolCall) -> Evidence:
    loaded = load_bundle(call, "evidence_bundle")
    items, stale = obligations(call, loaded)
    pg = call.args.get("page") or {}
    result = ObligationLedger(
        schema=LEDGER_SCHEMA,
        bundle_record_ids_digest=bundle_mod.manifest(loaded.records).record_ids_digest,
        ledger_digest=canonical_digest(msgspec.to_builtins(items)),
        stale_reviews=stale,
        obligations=common.page(items, pg),
    )
    params = {**_ledger_parameters(call, loaded), "page": pg}
    return common.derived(call, "build_reconstruction_obligation_ledger", params, result, loaded.records)


def _comparisons_by_link(loaded: bundle_mod.Bundle) -> dict[str, list[Evidence]]:
    out: dict[str, list[Evidence]] = {}
    for ev in loaded.records:
        if common.is_comparison(ev):
            for link in ev.evidence_links:
                out.setdefault(link, []).append(ev)
    return out


def _state(comparisons: list[Evidence]) -> str:
    found = {common.judge(c.normalized_result) for c in comparisons}
    if not comparisons:
        return "uncovered"
    if "contradicted" in found:
        return "contradicted"
    return "complete" if "complete" in found else "unknown"


def evaluate_coverage(call: ToolCall) -> JSONObject:
    """The coverage as a session tool answers it: the result Struct as builtins (the kernel's handler contract)."""
    loaded = load_bundle(call, "evidence_bundle")
    items, _ = obligations(call, loaded)
    by_link = _comparisons_by_link(loaded)
    covered: list[ObligationCoverage] = []
    for ob in items:
        comps = {c.evidence_id: c for eid in ob.evidence_ids for c in by_link.get(eid, [])}
        state = _state(list(comps.values()))
        if ob.review is not None and ob.review.status == "waived" and state != "contradicted":
            state = "waived"
        covered.append(
            ObligationCoverage(obligation_id=ob.obligation_id, state=state, comparison_evidence_ids=sorted(comps))  # type: ignore[arg-type]
        )
    counts = {
        s: sum(1 for c in covered if c.state == s)
        for s in ("complete", "contradicted", "unknown", "uncovered", "waived")
    }
    call.ctx.check("evaluate_reconstruction_coverage")
    result = CoverageResult(
        ledger_digest=canonical_digest(msgspec.to_builtins(items)),
        coverage_digest=canonical_digest(msgspec.to_builtins(covered)),
        counts=CoverageCounts(**counts),
        obligations=common.page(covered, call.args.get("page") or {}),
    )
    out: JSONObject = msgspec.to_builtins(result)
    return out


def verify_reconstruction(call: ToolCall) -> Evidence:
    spec = call.args["specification"]
    loaded = bundle_mod.load_bundle(spec["evidence_bundle"]["path"], ctx=call.ctx)
    by_id = {r.evidence_id: r for r in loaded.records}
    by_link = _comparisons_by_link(loaded)
    results: list[ClaimResult] = []
    used: dict[str, Evidence] = {}
    for i, claim in enumerate(spec["claims"]):
        comps: dict[str, Evidence] = {}
        for eid in claim["evidence_ids"]:
            ev = by_id.get(eid)
            if ev is None:
                raise invalid_request(
                    f"claim {claim['claim_id']} cites {eid}, which the bundle does not carry",
                    [issue(f"specification/claims/{i}/evidence_ids", "invalid_value", "not in the bundle")],
                )
            if common.is_comparison(ev):
                comps[eid] = ev
            for c in by_link.get(eid, []):
                comps[c.evidence_id] = c
        state = _state(list(comps.values()))
        used.update(comps)
        results.append(
            ClaimResult(
                claim_id=claim["claim_id"],
                kind=claim["kind"],
                state="unknown" if state == "uncovered" else state,  # type: ignore[arg-type]
                comparison_evidence_ids=sorted(comps),
            )
        )
    results.sort(key=lambda r: r.claim_id)
    counts = {s: sum(1 for r in results if r.state == s) for s in ("complete", "contradicted", "unknown")}
    verdict: Literal["pass", "fail", "unknown"] = (
        "fail" if counts["contradicted"] else ("pass" if counts["complete"] == len(results) else "unknown")
    )
    result = ReconstructionVerification(
        verdict=verdict,
        claim_count=len(results),
        counts=counts,
        claims=common.page(results, call.args),  # type: ignore[arg-type]
    )
    params = {
        "bundle_record_ids_digest": bundle_mod.manifest(loaded.records).record_ids_digest,
        "claims": sorted(spec["claims"], key=lambda c: c["claim_id"]),
    }
    return common.derived(call, "verify_reconstruction", params, result, [used[k] for k in sorted(used)])


def _endpoint(value: dict[str, Any], by_address: dict[str, Any], path: str) -> str:
    if "address" in value:
        address = f"0x{int(value['address'], 16):x}"
        if address in by_address:
            return address
    elif "name" in value:
        for address, (name, _, _) in by_address.items():
            if name == value["name"]:
                return address
    raise invalid_request(
        f"{path} names no procedure of the supplied analyze_function Evidence",
        [issue(path, "invalid_value", "not among the supplied functions")],
    )


def build_call_path(call: ToolCall) -> Evidence:
    records = common.resolve_all(call, "functions")
    common.one_target(records, "functions")
    nodes: dict[str, tuple[str | None, list[str], str]] = {}
    for i, ev in enumerate(records):
        body = ev.normalized_result if isinstance(ev.normalized_result, dict) else {}
        proc = body.get("procedure")
        if ev.operation != "analyze_function" or not isinstance(proc, dict) or not isinstance(proc.get("address"), str):
            raise invalid_request(
                f"functions/{i} is {ev.operation} Evidence, not a complete analyze_function record",
                [issue(f"functions/{i}", "invalid_value", "expected analyze_function Evidence")],
            )
        callees = sorted(
            {
                f"0x{int(c['address'], 16):x}"
                for c in body.get("callees") or []
                if isinstance(c, dict) and c.get("address")
            }
        )
        nodes[f"0x{int(proc['address'], 16):x}"] = (proc.get("name"), callees, ev.evidence_id)
    start = _endpoint(call.args["start"], nodes, "start")
    goal = _endpoint(call.args["goal"], nodes, "goal")
    max_depth = int(call.args.get("max_depth", 8))
    max_paths = int(call.args.get("max_paths", 16))
    found: list[list[str]] = []
    queue: deque[list[str]] = deque([[start]])
    unanalysed: set[str] = set()
    while queue and len(found) < max_paths:
        call.ctx.check("build_call_path")
        path = queue.popleft()
        here = path[-1]
        if here == goal:
            found.append(path)
            continue
        if len(path) > max_depth:
            continue
        for callee in nodes[here][1]:
            if callee not in nodes:
                unanalysed.add(callee)
            elif callee not in path:
                queue.append([*path, callee])
    paths = [
        CallPath(length=len(p) - 1, steps=[PathStep(address=a, name=nodes[a][0], evidence_id=nodes[a][2]) for a in p])
        for p in found
    ]
    result = CallPaths(
        start=start,
        goal=goal,
        complete=not queue and not unanalysed,
        unanalysed_callees=sorted(unanalysed),
        paths=common.page(paths, call.args),
    )
    params = {
        "functions": sorted(r.evidence_id for r in records),
        "start": call.args["start"],
        "goal": call.args["goal"],
        "max_depth": max_depth,
        "max_paths": max_paths,
    }
    limits = (
        []
        if result.complete
        else ["The search stopped at max_paths or max_depth, or reached callees with no analyze_function Evidence."]
    )
    return common.derived(call, "build_call_path", params, result, records, limits)
