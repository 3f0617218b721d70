"""Reconstruction ledgers, coverage, specification checks, call paths and cross-version findings, over
synthetic Evidence (no engine): deterministic, paged, every derived record linked to its inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rea import bundle as bundle_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.investigation.conftest import function
from tests.investigation.conftest import record

MAIN = function("0x1000", "main", ["0x1100", "0x1200"])
PARSE = function("0x1100", "parse", ["0x1300"])
CHECK = function("0x1200", "check", ["0x1300", "0x9999"])
LEAF = function("0x1300", "leaf", [])
RUN = record("capture_process_scenario", {"exit": 0}, parameters={"arguments": ["--help"]})
SAME = record("compare_functions", {"status": "unchanged"}, links=[MAIN.evidence_id])
DIFF = record(
    "compare_process_captures",
    {"verdict": "different", "dimensions": {"exit": {"verdict": "same"}, "output": {"verdict": "different"}}},
    links=[RUN.evidence_id],
)
UNSURE = record("compare_functions", {"status": "unknown"}, links=[PARSE.evidence_id])


def export(path: Path, records: list[Evidence]) -> str:
    bundle_mod.export(records, str(path), overwrite=True, ctx=CallContext())
    return str(path)


@pytest.fixture
def bare(rea_registry: Registry, store_dir: Path) -> Session:
    s = Session(rea_registry)
    for r in (MAIN, PARSE, CHECK, LEAF, RUN, SAME, DIFF, UNSURE):
        s.ledger.record(r)
    return s


@pytest.fixture
def reconstruction(tmp_path: Path) -> str:
    return export(tmp_path / "r.json", [MAIN, PARSE, CHECK, LEAF, RUN, SAME, DIFF, UNSURE])


def test_the_ledger_is_deterministic_paged_and_carries_reviews(bare: Session, reconstruction: str) -> None:
    args: dict[str, Any] = {"evidence_bundle": {"path": reconstruction}, "manifest": {"behaviours": [{"id": "saves"}]}}
    whole = result_of(bare, "build_reconstruction_obligation_ledger", args)
    obligations = whole["obligations"]["items"]
    assert whole["obligations"]["total"] == 6 and len(obligations) == 6  # 4 functions, 1 capture, 1 declared
    assert [o["obligation_id"] for o in obligations] == sorted(o["obligation_id"] for o in obligations)
    assert {o["kind"] for o in obligations} == {"behaviour", "structure"}
    waived = next(o for o in obligations if o["subject"].startswith("analyze_function leaf"))
    reviewed = {
        **args,
        "reviewed_obligations": [
            {"obligation_id": waived["obligation_id"], "status": "waived", "note": "library code"},
            {"obligation_id": "obl_" + "0" * 24, "status": "accepted"},
        ],
        "page": {"offset": 1, "limit": 2},
    }
    paged = call_tool(bare, "build_reconstruction_obligation_ledger", reviewed).evidence
    assert paged is not None
    body = paged.normalized_result
    assert body["obligations"]["offset"] == 1 and len(body["obligations"]["items"]) == 2
    assert body["stale_reviews"] == ["obl_" + "0" * 24]
    assert body["ledger_digest"] != whole["ledger_digest"]  # the review is part of the ledger
    assert set(paged.evidence_links) == {r.evidence_id for r in bundle_mod.load(reconstruction)}
    again = call_tool(bare, "build_reconstruction_obligation_ledger", reviewed).evidence
    assert again is not None and again.evidence_id == paged.evidence_id
    coverage = result_of(bare, "evaluate_reconstruction_coverage", reviewed | {"page": {"limit": 100}})
    states = {c["obligation_id"]: c["state"] for c in coverage["obligations"]["items"]}
    by_subject = {o["subject"].split(" ")[1]: o["obligation_id"] for o in obligations if o["source"] == "bundle"}
    assert states[by_subject["main@0x1000"]] == "complete"
    assert states[by_subject["parse@0x1100"]] == "unknown"
    assert states[by_subject["check@0x1200"]] == "uncovered"
    assert states[waived["obligation_id"]] == "waived"
    run = next(o["obligation_id"] for o in obligations if o["subject"].startswith("capture_process_scenario"))
    assert states[run] == "contradicted"
    assert coverage["counts"] == {"complete": 1, "contradicted": 1, "unknown": 1, "uncovered": 2, "waived": 1}


def test_ledger_and_coverage_bytes_are_identical_across_processes(reconstruction: str, tmp_path: Path) -> None:
    """Same inputs, another process (and a copy of the bundle elsewhere): the same bytes."""
    copy = tmp_path / "elsewhere" / "copy.json"
    copy.parent.mkdir()
    copy.write_bytes(Path(reconstruction).read_bytes())
    script = (
        "import json,sys\n"
        "from rea.registry import load\nfrom rea.session import Session\nfrom rea.testing import call_tool\n"
        "from rea.canonical import canonical_json\n"
        "s=Session(load())\nargs={'evidence_bundle':{'path':sys.argv[1]}}\n"
        "led=call_tool(s,'build_reconstruction_obligation_ledger',args).evidence\n"
        "cov=call_tool(s,'evaluate_reconstruction_coverage',args).structured\n"
        "sys.stdout.write(json.dumps([led.evidence_id, canonical_json(led.normalized_result).decode(), "
        "canonical_json(cov).decode()]))\n"
    )
    outs = [
        subprocess.run([sys.executable, "-c", script, p], capture_output=True, text=True, check=True).stdout
        for p in (reconstruction, str(copy))
    ]
    assert outs[0] == outs[1]


def test_verify_reconstruction_passes_only_with_complete_comparisons(bare: Session, reconstruction: str) -> None:
    spec = {
        "evidence_bundle": {"path": reconstruction},
        "claims": [{"claim_id": "main", "kind": "structural", "evidence_ids": [MAIN.evidence_id]}],
    }
    passed = call_tool(bare, "verify_reconstruction", {"specification": spec}).evidence
    assert passed is not None and passed.normalized_result["verdict"] == "pass"
    assert passed.evidence_links == [SAME.evidence_id]
    spec["claims"].append({"claim_id": "run", "kind": "behavioural", "evidence_ids": [RUN.evidence_id]})
    assert result_of(bare, "verify_reconstruction", {"specification": spec})["verdict"] == "fail"
    spec["claims"] = [{"claim_id": "check", "kind": "structural", "evidence_ids": [CHECK.evidence_id]}]
    assert result_of(bare, "verify_reconstruction", {"specification": spec})["verdict"] == "unknown"
    spec["claims"] = [{"claim_id": "x", "kind": "structural", "evidence_ids": ["ev_" + "7" * 64]}]
    with pytest.raises(ReaError) as info:
        call_tool(bare, "verify_reconstruction", {"specification": spec})
    assert info.value.code == "invalid_request"


def _ref(ev: Evidence) -> dict[str, str]:
    return {"kind": "retained-evidence", "evidence_id": ev.evidence_id}


def test_call_paths_are_shortest_first(bare: Session) -> None:
    args = {
        "functions": [_ref(f) for f in (MAIN, PARSE, CHECK, LEAF)],
        "start": {"name": "main"},
        "goal": {"address": "0x1300"},
    }
    out = call_tool(bare, "build_call_path", args).evidence
    assert out is not None
    body = out.normalized_result
    assert [[s["name"] for s in p["steps"]] for p in body["paths"]["items"]] == [
        ["main", "parse", "leaf"],
        ["main", "check", "leaf"],
    ]
    assert body["unanalysed_callees"] == ["0x9999"] and body["complete"] is False
    assert out.subject is not None and len(out.evidence_links) == 4
    other = function("0x1000", "main", [], sha="c" * 64)
    bare.ledger.record(other)
    with pytest.raises(ReaError) as info:
        call_tool(bare, "build_call_path", {**args, "functions": [*args["functions"], _ref(other)]})
    assert info.value.code == "invalid_request" and "targets" in info.value.message
    with pytest.raises(ReaError):
        call_tool(bare, "build_call_path", {**args, "functions": [_ref(RUN)]})
    # Tampered inline Evidence is refused by its id.
    edited = json.loads(json.dumps(bundle_mod.ev_mod.to_builtins(MAIN)))
    edited["normalized_result"]["callees"] = []
    with pytest.raises(ReaError) as info:
        call_tool(bare, "build_call_path", {**args, "functions": [edited]})
    assert info.value.code == "evidence_integrity_mismatch"


def test_compare_bundles_pairs_observations_and_unknown_histories(bare: Session, tmp_path: Path) -> None:
    new_main = function("0x2000", "main", ["0x2100"], sha="b" * 64)
    left = export(tmp_path / "v1.json", [MAIN, PARSE, RUN])
    right = export(tmp_path / "v2.json", [new_main, PARSE, RUN])
    out = call_tool(bare, "compare_bundles", {"left_bundle_path": left, "right_bundle_path": right}).evidence
    assert out is not None
    body = out.normalized_result
    assert body["membership"] == {"shared": 2, "left_only": 1, "right_only": 0 + 1}
    statuses = {(o["operation"], o["subject"]): o["status"] for o in body["observations"]["items"]}
    assert statuses[("analyze_function", "main")] == "changed"
    assert statuses[("analyze_function", "parse")] == "same"
    assert body["unknowns"] == []
    assert len(out.evidence_links) == 4


def test_changed_behaviour_and_correlation(bare: Session) -> None:
    out = result_of(bare, "find_changed_behavior", {"comparisons": [_ref(SAME), _ref(DIFF), _ref(UNSURE)]})
    assert out["comparison_count"] == 3 and out["unchanged_count"] == 1
    changes = {b["evidence_id"]: b for b in out["behaviors"]["items"]}
    assert changes[DIFF.evidence_id]["change"] == "changed" and changes[DIFF.evidence_id]["dimensions"] == ["output"]
    assert changes[UNSURE.evidence_id]["change"] == "unknown"
    with pytest.raises(ReaError):
        call_tool(bare, "find_changed_behavior", {"comparisons": [_ref(MAIN)]})
    mappings = [
        {
            "hypothesis_id": "a",
            "static_evidence_id": SAME.evidence_id,
            "runtime_evidence_id": DIFF.evidence_id,
            "dimension": "exit",
        },
        {
            "hypothesis_id": "b",
            "static_evidence_id": SAME.evidence_id,
            "runtime_evidence_id": DIFF.evidence_id,
            "dimension": "output",
        },
        {"hypothesis_id": "c", "static_evidence_id": UNSURE.evidence_id, "runtime_evidence_id": DIFF.evidence_id},
    ]
    args = {"static_comparisons": [_ref(SAME), _ref(UNSURE)], "runtime_comparisons": [_ref(DIFF)], "mappings": mappings}
    judged = result_of(bare, "correlate_static_and_runtime", args)
    assert [h["judgement"] for h in judged["hypotheses"]["items"]] == ["supported", "contradicted", "unknown"]
    assert judged["counts"] == {"supported": 1, "contradicted": 1, "unknown": 1}
    bad = {**args, "mappings": [{**mappings[0], "runtime_evidence_id": SAME.evidence_id}]}
    with pytest.raises(ReaError) as info:
        call_tool(bare, "correlate_static_and_runtime", bad)
    assert info.value.code == "invalid_request"


def test_cancellation_records_nothing(bare: Session, reconstruction: str) -> None:
    ctx = CallContext()
    ctx.signal.cancel()
    before = len(bare.ledger)
    with pytest.raises(ReaError) as info:
        call_tool(bare, "build_reconstruction_obligation_ledger", {"evidence_bundle": {"path": reconstruction}}, ctx)
    assert info.value.code == "cancelled" and len(bare.ledger) == before
