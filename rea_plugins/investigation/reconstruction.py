"""Reconstruction: the obligation ledger, its coverage, specification checks and call paths."""

from __future__ import annotations

from collections import deque
from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import bundle as bundle_mod
from rea.plugin import canonical_digest
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.investigation import common
from rea_plugins.investigation.model import LEDGER_SCHEMA
from rea_plugins.investigation.model import CallPath
from rea_plugins.investigation.model import CallPaths
from rea_plugins.investigation.model import ClaimResult
from rea_plugins.investigation.model import CoverageCounts
from rea_plugins.investigation.model import CoverageResult
from rea_plugins.investigation.model import Obligation
from rea_plugins.investigation.model import ObligationCoverage
from rea_plugins.investigation.model import ObligationLedger
from rea_plugins.investigation.model import PathStep
from rea_plugins.investigation.model import ReconstructionVerification
from rea_plugins.investigation.model import Review

Kind = Literal["behaviour", "structure"]
BEHAVIOUR_PREFIXES = ("capture_", "observe_", "run_", "trace_")
REVIEW_STATUSES: tuple[Literal["accepted", "waived", "disputed"], ...] = ("accepted", "waived", "disputed")
CLAIM_KINDS: tuple[Literal["behavioural", "structural"], ...] = ("behavioural", "structural")
# A procedure in the call graph: its name, its callees' addresses and the analyze_function record it came from.
Node = tuple[str | None, list[str], str]


def load_bundle(call: ToolCall, key: str) -> bundle_mod.Bundle:
    """The bundle ``call.args[key]`` names ({"path": ...}), authenticated whole (records, annotations, unknowns)."""
    spec = arg_object(call.args, key) or {}
    return bundle_mod.load_bundle(arg_str(spec, "path", ""), ctx=call.ctx)  # required by the schema


def _observation_key(ev: Evidence) -> tuple[Kind, str]:
    """(kind, subject) of the obligation an observation creates; stable across re-analysis of one target."""
    kind: Kind = (
        "behaviour" if ev.operation.startswith(BEHAVIOUR_PREFIXES) or ev.environment is not None else "structure"
    )
    proc = bundle_mod.procedure_metadata(ev.normalized_result)
    what = canonical_digest(ev.parameters)[:16] if proc is None else f"{proc.get('name') or '?'}@{proc['address']}"
    target = common.target_of(ev) or "none"
    return kind, f"{ev.operation} {what} ({target[:12]})"


def _obligation(
    kind: Kind, subject: str, source: Literal["bundle", "manifest"], description: str, ids: list[str]
) -> Obligation:
    """An obligation not yet reviewed; its id is a digest of what it is about, so it is stable across runs."""
    oid = "obl_" + canonical_digest({"kind": kind, "subject": subject})[:24]
    return Obligation(
        obligation_id=oid,
        kind=kind,
        subject=subject,
        source=source,
        description=description,
        evidence_ids=sorted(ids),
        review=None,
    )


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
        ob = _obligation(kind, subject, "bundle", f"show the observed {kind}", ids)
        made[ob.obligation_id] = ob
    manifest = arg_object(call.args, "manifest") or {}
    pairs: tuple[tuple[Kind, str], ...] = (("behaviour", "behaviours"), ("structure", "structures"))
    for kind, key in pairs:
        for item in arg_objects(manifest, key) or []:
            subject = f"manifest {arg_str(item, 'id', '')}"
            description = arg_str(item, "description", "")
            ob = _obligation(kind, subject, "manifest", description, arg_strs(item, "evidence_ids") or [])
            made[ob.obligation_id] = ob
    stale: list[str] = []
    for review in arg_objects(call.args, "reviewed_obligations") or []:
        oid = arg_str(review, "obligation_id", "")
        if oid not in made:
            stale.append(oid)
            continue
        status = arg_choice(review, "status", REVIEW_STATUSES, "accepted")  # required by the schema
        made[oid] = msgspec.structs.replace(made[oid], review=Review(status=status, note=arg_str(review, "note", "")))
    return [made[k] for k in sorted(made)], sorted(set(stale))


def _ledger_parameters(call: ToolCall, loaded: bundle_mod.Bundle) -> JSONObject:
    # The bundle by content, never by path: the same inputs give the same record on every machine. The manifest and
    # the reviews are the user's JSON, as given.
    reviews = arg_objects(call.args, "reviewed_obligations") or []
    return {
        "bundle_record_ids_digest": bundle_mod.manifest(loaded.records).record_ids_digest,
        "manifest": arg_object(call.args, "manifest") or {},
        "reviewed_obligations": common.sorted_by(reviews, "obligation_id"),
    }


def build_ledger(call: ToolCall) -> Evidence:
    loaded = load_bundle(call, "evidence_bundle")
    items, stale = obligations(call, loaded)
    pg = arg_object(call.args, "page") or {}
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


def _state(comparisons: list[Evidence]) -> Literal["complete", "contradicted", "unknown", "uncovered"]:
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
        state: Literal["complete", "contradicted", "unknown", "uncovered", "waived"] = _state(list(comps.values()))
        if ob.review is not None and ob.review.status == "waived" and state != "contradicted":
            state = "waived"
        covered.append(
            ObligationCoverage(obligation_id=ob.obligation_id, state=state, comparison_evidence_ids=sorted(comps))
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
        obligations=common.page(covered, arg_object(call.args, "page") or {}),
    )
    out: JSONObject = msgspec.to_builtins(result)
    return out


def verify_reconstruction(call: ToolCall) -> Evidence:
    spec = arg_object(call.args, "specification") or {}
    claims = arg_objects(spec, "claims") or []
    loaded = bundle_mod.load_bundle(arg_str(arg_object(spec, "evidence_bundle") or {}, "path", ""), ctx=call.ctx)
    by_id = {r.evidence_id: r for r in loaded.records}
    by_link = _comparisons_by_link(loaded)
    results: list[ClaimResult] = []
    used: dict[str, Evidence] = {}
    for i, claim in enumerate(claims):
        claim_id = arg_str(claim, "claim_id", "")
        comps: dict[str, Evidence] = {}
        for eid in arg_strs(claim, "evidence_ids") or []:
            ev = by_id.get(eid)
            if ev is None:
                raise invalid_request(
                    f"claim {claim_id} cites {eid}, which the bundle does not carry",
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
                claim_id=claim_id,
                kind=arg_choice(claim, "kind", CLAIM_KINDS, "behavioural"),  # required by the schema
                state="unknown" if state == "uncovered" else state,
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
        claims=common.page(results, call.args),
    )
    params: JSONObject = {
        "bundle_record_ids_digest": bundle_mod.manifest(loaded.records).record_ids_digest,
        "claims": common.sorted_by(claims, "claim_id"),
    }
    return common.derived(call, "verify_reconstruction", params, result, [used[k] for k in sorted(used)])


def _endpoint(value: JSONObject, by_address: dict[str, Node], path: str) -> str:
    given, wanted = arg_str(value, "address"), arg_str(value, "name")
    if given is not None:
        address = f"0x{int(given, 16):x}"
        if address in by_address:
            return address
    elif wanted is not None:
        for address, (name, _, _) in by_address.items():
            if name == wanted:
                return address
    raise invalid_request(
        f"{path} names no procedure of the supplied analyze_function Evidence",
        [issue(path, "invalid_value", "not among the supplied functions")],
    )


def build_call_path(call: ToolCall) -> Evidence:
    records = common.resolve_all(call, "functions")
    common.one_target(records, "functions")
    nodes: dict[str, Node] = {}
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
                f"0x{int(address, 16):x}"
                for c in body.get("callees") or []
                if isinstance(c, dict) and isinstance(address := c.get("address"), str) and address
            }
        )
        name = proc.get("name")
        nodes[f"0x{int(proc['address'], 16):x}"] = (name if isinstance(name, str) else None, callees, ev.evidence_id)
    start = _endpoint(arg_object(call.args, "start") or {}, nodes, "start")
    goal = _endpoint(arg_object(call.args, "goal") or {}, nodes, "goal")
    max_depth = arg_int(call.args, "max_depth", 8)
    max_paths = arg_int(call.args, "max_paths", 16)
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
    params: JSONObject = {
        "functions": sorted(r.evidence_id for r in records),
        "start": call.args.get("start"),
        "goal": call.args.get("goal"),
        "max_depth": max_depth,
        "max_paths": max_paths,
    }
    limits = (
        []
        if result.complete
        else ["The search stopped at max_paths or max_depth, or reached callees with no analyze_function Evidence."]
    )
    return common.derived(call, "build_call_path", params, result, records, limits)
