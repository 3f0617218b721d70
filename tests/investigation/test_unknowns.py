"""The residual-unknowns registry: record, update (compare-and-swap), list, verify; the store and bundles."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rea import bundle as bundle_mod
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea.unknowns import UnknownStore
from tests.investigation.conftest import record

QUESTION: dict[str, Any] = {
    "domain": "behaviour",
    "question": "What does the program print when run without arguments?",
    "severity": "high",
    "required_authority": "shipped-artifact",
    "required_confidence": "observed",
    "recommended_probes": ["capture_process_scenario"],
}


def _code(session: Session, name: str, args: dict[str, Any]) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, name, args)
    return info.value


def _overview(session: Session) -> str:
    out = call_tool(session, "binary_overview", {})
    assert out.evidence is not None
    return out.evidence.evidence_id


def test_record_update_list_and_the_revision_chain(session: Session, store_dir: Path) -> None:
    made = result_of(session, "record_unknown", QUESTION)["unknown"]
    assert made["revision"] == 1 and made["status"] == "open" and made["previous_digest"] is None
    uid = made["unknown_id"]
    eid = _overview(session)
    second = result_of(
        session,
        "update_unknown",
        {"unknown_id": uid, "expected_revision": 1, "status": "investigating", "supporting_evidence_ids": [eid]},
    )["unknown"]
    assert second["revision"] == 2 and second["previous_digest"] == made["digest"]
    assert second["question"] == QUESTION["question"] and second["supporting_evidence_ids"] == [eid]
    # Stale: the head moved on.
    err = _code(session, "update_unknown", {"unknown_id": uid, "expected_revision": 1, "status": "blocked"})
    assert err.code == "revision_conflict" and err.retryable and err.details["current_revision"] == 2
    listed = result_of(session, "list_unknowns", {"status": "investigating"})
    assert [h["unknown_id"] for h in listed["heads"]["items"]] == [uid] and listed["heads"]["total"] == 1
    assert result_of(session, "list_unknowns", {"severity": "low"})["heads"]["total"] == 0
    paged = result_of(session, "list_unknowns", {"offset": 1, "limit": 5})
    assert paged["heads"] == {"total": 1, "offset": 1, "limit": 5, "next_offset": None, "items": []}
    # On disk: one canonical document per target, beside the annotations.
    sha = session.require_target().sha256
    assert (store_dir / f"{sha}.unknowns.json").is_file()


def test_bad_input_gets_canonical_errors(session: Session) -> None:
    missing = {k: v for k, v in QUESTION.items() if k != "severity"}
    assert _code(session, "record_unknown", missing).code == "invalid_request"
    assert _code(session, "record_unknown", {**QUESTION, "severity": "dire"}).code == "invalid_request"
    ghost = "ev_" + "9" * 64
    err = _code(session, "record_unknown", {**QUESTION, "supporting_evidence_ids": [ghost]})
    assert err.details["reason"] == "missing"
    other = session.ledger.record(record("peer_observation", {"x": 1}, sha="b" * 64))
    err = _code(session, "record_unknown", {**QUESTION, "supporting_evidence_ids": [other.evidence_id]})
    assert err.code == "invalid_request" and "another target" in err.message
    uid = "unk_" + "0" * 12 + "_" + "1" * 20
    assert _code(session, "update_unknown", {"unknown_id": uid, "expected_revision": 1, "status": "open"}).code == (
        "invalid_request"
    )
    made = result_of(session, "record_unknown", QUESTION)["unknown"]["unknown_id"]
    err = _code(session, "update_unknown", {"unknown_id": made, "expected_revision": 1, "status": "resolved"})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "resolution"
    rel = {"kind": "depends_on", "unknown_id": uid}
    assert _code(session, "record_unknown", {**QUESTION, "relationships": [rel]}).code == "invalid_request"


def test_verify_checks_presence_authority_and_confidence(session: Session) -> None:
    uid = result_of(session, "record_unknown", {**QUESTION, "required_confidence": "observed"})["unknown"]["unknown_id"]
    assert result_of(session, "verify_unknown_resolution", {"unknown_id": uid})["verdict"] == "not-resolved"
    derived = session.ledger.record(
        record("peer_guess", {"answer": 1}, sha=session.require_target().sha256, confidence="inferred")
    )
    resolution = {"kind": "answered", "summary": "a guess", "evidence_ids": [derived.evidence_id]}
    result_of(
        session,
        "update_unknown",
        {"unknown_id": uid, "expected_revision": 1, "status": "resolved", "resolution": resolution},
    )
    out = call_tool(session, "verify_unknown_resolution", {"unknown_id": uid}).evidence
    assert out is not None
    body = out.normalized_result
    assert body["verdict"] == "failed" and not body["checks"][0]["meets_confidence"]
    assert out.evidence_links == [derived.evidence_id]


def test_a_damaged_store_document_is_refused(session: Session, store_dir: Path) -> None:
    uid = result_of(session, "record_unknown", QUESTION)["unknown"]["unknown_id"]
    path = store_dir / f"{session.require_target().sha256}.unknowns.json"
    doc = json.loads(path.read_bytes())
    doc["unknowns"][uid][0]["question"] = "edited"
    path.write_text(json.dumps(doc))
    err = _code(session, "list_unknowns", {})
    assert err.code == "artifact_integrity_mismatch"


def test_unknowns_travel_in_bundles_and_edits_are_refused(session: Session, tmp_path: Path, store_dir: Path) -> None:
    uid = result_of(session, "record_unknown", QUESTION)["unknown"]["unknown_id"]
    _overview(session)
    out = tmp_path / "b.json"
    exported = result_of(session, "export_evidence_bundle", {"path": str(out)})
    assert exported["unknowns_targets"] == [session.require_target().sha256]
    loaded = bundle_mod.load_bundle(str(out))
    assert list(loaded.unknowns[0].unknowns) == [uid]
    # Canonical: the file is exactly its RFC 8785 form.
    from rea.canonical import canonical_json

    assert out.read_bytes() == canonical_json(json.loads(out.read_bytes()))
    # Into another store: merged, then the same history.
    other = UnknownStore(str(tmp_path / "elsewhere"))
    assert other.merge(loaded.unknowns[0])["updated"] == [uid]
    assert other.locate(uid).unknowns[uid] == loaded.unknowns[0].unknowns[uid]
    doc = json.loads(out.read_bytes())
    doc["unknowns"][0]["unknowns"][uid][0]["severity"] = "low"
    out.write_text(json.dumps(doc))
    with pytest.raises(ReaError) as info:
        bundle_mod.load_bundle(str(out))
    assert info.value.code == "evidence_integrity_mismatch"


def test_a_cancelled_update_publishes_nothing(session: Session, store_dir: Path) -> None:
    from rea.context import CallContext

    uid = result_of(session, "record_unknown", QUESTION)["unknown"]["unknown_id"]
    ctx = CallContext()
    ctx.signal.cancel()
    with pytest.raises(ReaError) as info:
        call_tool(session, "update_unknown", {"unknown_id": uid, "expected_revision": 1, "status": "blocked"}, ctx)
    assert info.value.code == "cancelled"
    assert result_of(session, "list_unknowns", {})["heads"]["items"][0]["revision"] == 1
    assert not [p for p in os.listdir(store_dir) if p.endswith(".tmp")]


def test_two_writer_processes_never_lose_an_update(tmp_path: Path) -> None:
    """Two processes each add 25 unknowns to one target at the same time: all 50 are kept."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from rea.unknowns import UnknownStore, UnknownRevision, new_id, sealed\n"
        "store = UnknownStore(sys.argv[1]); sha = 'e' * 64\n"
        "for i in range(25):\n"
        "    uid = new_id(sha)\n"
        "    rev = sealed(UnknownRevision(unknown_id=uid, revision=1, target_sha256=sha, domain='d',\n"
        "        question=f'q{i}', severity='low', status='open', required_authority='shipped-artifact',\n"
        "        required_confidence='observed',\n"
        "        required_environment=None, recommended_probes=[], relationships=[], supporting_evidence_ids=[],\n"
        "        contradicting_evidence_ids=[], resolution=None, previous_digest=None, digest=''))\n"
        "    store.update(sha, lambda h, uid=uid, rev=rev: h.__setitem__(uid, [rev]))\n"
    )
    root = str(tmp_path / "store")
    procs = [subprocess.Popen([sys.executable, "-c", script, root]) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(UnknownStore(root).load("e" * 64).unknowns) == 50


def test_bundle_manifest_and_diverged_histories(session: Session, tmp_path: Path) -> None:
    uid = result_of(session, "record_unknown", QUESTION)["unknown"]["unknown_id"]
    _overview(session)
    out = tmp_path / "b.json"
    result_of(session, "export_evidence_bundle", {"path": str(out)})
    loaded = bundle_mod.load_bundle(str(out))
    # A history that moved on differently in another store is kept there, and reported.
    other = UnknownStore(str(tmp_path / "other"))
    other.merge(loaded.unknowns[0])
    result_of(session, "update_unknown", {"unknown_id": uid, "expected_revision": 1, "status": "blocked"})
    from rea.unknowns import sealed

    head = other.locate(uid).unknowns[uid][0]
    mine = sealed(
        type(head)(
            **{
                **{f: getattr(head, f) for f in head.__struct_fields__},
                "revision": 2,
                "status": "open",
                "previous_digest": head.digest,
                "digest": "",
            }
        )
    )
    other.update(head.target_sha256, lambda h: h[uid].append(mine))
    result_of(session, "export_evidence_bundle", {"path": str(out), "overwrite": True})
    merged = other.merge(bundle_mod.load_bundle(str(out)).unknowns[0])
    assert merged["conflicts"] == [{"unknown_id": uid, "kept_revision": 2, "reason": "diverged"}]
    assert other.locate(uid).unknowns[uid][1].status == "open"
    # The manifest commits to the unknowns it carries.
    doc = json.loads(out.read_bytes())
    doc["unknowns_digest"] = "0" * 64
    out.write_text(json.dumps(doc))
    with pytest.raises(ReaError) as info:
        bundle_mod.load_bundle(str(out))
    assert info.value.code == "evidence_integrity_mismatch" and info.value.details["reason"] == "manifest_mismatch"
    del doc["unknowns"]
    out.write_text(json.dumps(doc))
    with pytest.raises(ReaError):
        bundle_mod.load_bundle(str(out))
