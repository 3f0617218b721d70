"""Bundles through the tools: summary/filters, atomic export, validated import, bundle files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import rfc8785

from rea import bundle
from rea import evidence as ev_mod
from rea.canonical import canonical_digest
from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool

from .support import OTHER_PROVIDER
from .support import SOURCE_FUNCTIONS
from .support import compile_fixture
from .support import functions_of
from .support import procedure_records
from .support import simple_record


def _structured(session: Session, name: str, args: dict[str, Any], ctx: CallContext | None = None) -> Any:
    out = call_tool(session, name, args, ctx)
    assert out.structured is not None
    return out.structured


def _error(session: Session, name: str, args: dict[str, Any], ctx: CallContext | None = None) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, name, args, ctx)
    return info.value


@pytest.fixture
def fixture_bin(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    return compile_fixture(tmp_path / "bin")


@pytest.fixture
def loaded(rea_session: Session, fixture_bin: Path, tmp_path: Path) -> Session:
    other = compile_fixture(tmp_path / "bin", "other", extra="int extra_fn(void) { return 4; }\n")
    for rec in procedure_records(fixture_bin) + procedure_records(other, OTHER_PROVIDER) + [simple_record(1)]:
        rea_session.ledger.record(rec)
    return rea_session


def test_complete_bundle_is_sorted_with_manifest(loaded: Session, fixture_bin: Path) -> None:
    out = _structured(loaded, "get_evidence_bundle", {})
    ids = [r["evidence_id"] for r in out["records"]]
    assert out["bundle_version"] == 2 and ids == sorted(ids) and len(ids) == 11
    assert out["record_count"] == 11 and out["record_ids_digest"] == canonical_digest(ids)
    import hashlib

    assert hashlib.sha256(fixture_bin.read_bytes()).hexdigest() in {a["sha256"] for a in out["artifacts"]}
    assert {p["id"] for p in out["providers"]} == {"fixture-static", "fixture-other"}
    for rec in out["records"]:  # every record is complete and authenticates
        assert ev_mod.from_builtins(rec).evidence_id == rec["evidence_id"]


def test_summary_drops_payloads_and_keeps_procedure_metadata(loaded: Session, fixture_bin: Path) -> None:
    out = _structured(loaded, "get_evidence_bundle", {"detail": "summary"})
    assert out["matched_count"] == 11 and len(out["records"]) == 11
    for rec in out["records"]:
        assert "normalized_result" not in rec and "raw_result" not in rec
    import hashlib

    sha = hashlib.sha256(fixture_bin.read_bytes()).hexdigest()
    funcs = functions_of(fixture_bin)
    procs = {
        r["procedure"]["name"]: r["procedure"]["address"]
        for r in out["records"]
        if r["operation"] == "procedure_info" and r["target_sha256"] == sha
    }
    assert set(procs) == set(SOURCE_FUNCTIONS)
    assert procs == {name: row["address"] for name, row in funcs.items()}


def test_filters_match_exactly_and_combine(loaded: Session, fixture_bin: Path) -> None:
    import hashlib

    sha = hashlib.sha256(fixture_bin.read_bytes()).hexdigest()
    addr = functions_of(fixture_bin)["checksum"]["address"]
    by_addr = _structured(
        loaded,
        "get_evidence_bundle",
        {"detail": "summary", "filters": {"procedure_address": addr, "target_sha256": sha}},
    )
    assert [r["procedure"]["name"] for r in by_addr["records"]] == ["checksum"]
    by_op = _structured(
        loaded, "get_evidence_bundle", {"detail": "summary", "filters": {"operation": "list_procedures"}}
    )
    assert by_op["matched_count"] == 2 and by_op["record_count"] == 11
    digest = by_addr["records"][0]["analysis_profile_digest"]
    by_prof = _structured(
        loaded, "get_evidence_bundle", {"detail": "summary", "filters": {"analysis_profile_digest": digest}}
    )
    assert by_prof["matched_count"] == 5 and all(r["provider"]["id"] == "fixture-static" for r in by_prof["records"])
    one = by_addr["records"][0]["evidence_id"]
    assert (
        _structured(loaded, "get_evidence_bundle", {"detail": "summary", "filters": {"evidence_id": one}})[
            "matched_count"
        ]
        == 1
    )
    none = _structured(
        loaded, "get_evidence_bundle", {"detail": "summary", "filters": {"procedure_address": addr.upper()}}
    )
    assert none["matched_count"] == 0 and none["records"] == []


def test_filters_without_summary_are_invalid(loaded: Session) -> None:
    err = _error(loaded, "get_evidence_bundle", {"filters": {"operation": "x"}})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "filters"
    err = _error(loaded, "get_evidence_bundle", {"detail": "summary", "filters": {"colour": "x"}})
    assert err.code == "invalid_request"


def test_export_is_canonical_and_round_trips(loaded: Session, tmp_path: Path) -> None:
    dest = tmp_path / "out" / "bundle.json"
    dest.parent.mkdir()
    out = _structured(loaded, "export_evidence_bundle", {"path": str(dest)})
    data = dest.read_bytes()
    assert out["bytes"] == len(data) and out["record_count"] == 11
    # The streamed file is the RFC 8785 form of the complete bundle.
    assert data == rfc8785.dumps(json.loads(data))
    assert json.loads(data) == _structured(loaded, "get_evidence_bundle", {})
    assert sorted(os.listdir(dest.parent)) == ["bundle.json"]
    fresh = Session(loaded.registry)
    res = _structured(fresh, "import_evidence_bundle", {"path": str(dest)})
    assert res["added_count"] == 11 and len(fresh.ledger) == 11
    assert _structured(fresh, "get_evidence_bundle", {}) == _structured(loaded, "get_evidence_bundle", {})
    again = _structured(fresh, "import_evidence_bundle", {"path": str(dest)})
    assert again["added_count"] == 0 and again["already_retained_count"] == 11


def test_export_refuses_existing_file_without_overwrite(loaded: Session, tmp_path: Path) -> None:
    dest = tmp_path / "b.json"
    dest.write_bytes(b"old contents")
    err = _error(loaded, "export_evidence_bundle", {"path": str(dest)})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "overwrite"
    assert dest.read_bytes() == b"old contents" and sorted(os.listdir(tmp_path)) == ["b.json", "bin"]
    _structured(loaded, "export_evidence_bundle", {"path": str(dest), "overwrite": True})
    assert json.loads(dest.read_bytes())["record_count"] == 11
    err = _error(loaded, "export_evidence_bundle", {"path": str(tmp_path / "missing" / "b.json")})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "path"


def test_cancelled_export_removes_staging_and_keeps_old_file(loaded: Session, tmp_path: Path) -> None:
    dest = tmp_path / "b.json"
    dest.write_bytes(b"old contents")
    ctx = CallContext(sink=lambda _n, _t, _m: ctx.signal.cancel())
    err = _error(loaded, "export_evidence_bundle", {"path": str(dest), "overwrite": True}, ctx)
    assert err.code == "cancelled"
    assert dest.read_bytes() == b"old contents" and sorted(os.listdir(tmp_path)) == ["b.json", "bin"]
    fresh = tmp_path / "new.json"
    ctx2 = CallContext(sink=lambda _n, _t, _m: ctx2.signal.cancel())
    assert _error(loaded, "export_evidence_bundle", {"path": str(fresh)}, ctx2).code == "cancelled"
    assert not fresh.exists() and sorted(os.listdir(tmp_path)) == ["b.json", "bin"]


def _write(path: Path, doc: Any) -> Path:
    path.write_bytes(json.dumps(doc).encode() if not isinstance(doc, bytes) else doc)
    return path


def test_import_rejects_forged_and_hostile_bundles(
    loaded: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good: dict[str, Any] = json.loads(b"".join(bundle.canonical_chunks(list(loaded.ledger))))
    fresh = Session(loaded.registry)

    def rejected(doc: Any, name: str) -> ReaError:
        err = _error(fresh, "import_evidence_bundle", {"path": str(_write(tmp_path / name, doc))})
        assert len(fresh.ledger) == 0  # nothing added on any failure
        return err

    forged = json.loads(json.dumps(good))
    forged["records"][3]["normalized_result"] = {"edited": True}
    err = rejected(forged, "forged.json")
    assert err.code == "evidence_integrity_mismatch"
    assert err.details["evidence_id"] == good["records"][3]["evidence_id"] and err.details["record_index"] == 3
    extra = json.loads(json.dumps(good))
    extra["records"][0]["colour"] = "red"
    assert rejected(extra, "unknown.json").details["reason"] == "malformed_record"
    noprof = json.loads(json.dumps(good))
    del noprof["records"][1]["analysis_profile"]
    assert rejected(noprof, "noprof.json").code == "evidence_integrity_mismatch"
    manifest = json.loads(json.dumps(good))
    manifest["record_ids_digest"] = "0" * 64
    assert rejected(manifest, "manifest.json").details["reason"] == "manifest_mismatch"
    dropped = json.loads(json.dumps(good))
    dropped["records"].pop()
    assert rejected(dropped, "dropped.json").details["reason"] == "manifest_mismatch"
    assert rejected(b'{"bundle_version": 2, "records": [', "trunc.json").details["reason"] == "malformed_json"
    # A file that is no bundle at all is a wrong argument, said without a decoder's words (issue 26).
    for data in (b"\xff\xfenot json", b'{"a": 1}', b"[1]"):
        err = rejected(data, "other.json")
        assert (err.code, err.details["reason"]) == ("invalid_request", "not_a_bundle")
        assert err.message.endswith(("it is not JSON", "it has no bundle_version and records"))
    deep = b'{"bundle_version": 2, "records": [' + b"[" * 5000 + b"]" * 5000 + b"]}"
    err = rejected(deep, "deep.json")
    assert err.code == "resource_constraint" and err.details["resource"] == "memory"
    nested = json.loads(json.dumps(good))
    rec = simple_record(7, payload=json.loads("[" * 200 + "]" * 200))
    nested["records"] = [ev_mod.to_builtins(rec)]
    for key in ("record_count", "record_ids_digest", "artifacts", "providers"):
        nested.pop(key)
    err = rejected(nested, "nested.json")
    assert err.code == "resource_constraint" and err.details["limit"] == "max_depth"
    big = tmp_path / "big.json"
    _write(big, good)
    monkeypatch.setattr(bundle, "IMPORT_MAX_BYTES", big.stat().st_size - 1)
    err = _error(fresh, "import_evidence_bundle", {"path": str(big)})
    assert err.code == "resource_constraint" and err.details["resource"] == "memory"
    monkeypatch.setattr(bundle, "IMPORT_MAX_BYTES", big.stat().st_size)
    assert _structured(fresh, "import_evidence_bundle", {"path": str(big)})["added_count"] == 11


def test_import_rejects_huge_strings(rea_session: Session, tmp_path: Path) -> None:
    rec = simple_record(3, payload="A" * 4096)
    data = b"".join(bundle.canonical_chunks([rec]))
    with pytest.raises(ReaError) as info:
        bundle.parse(data, max_string=1024)
    assert info.value.code == "resource_constraint" and info.value.details["limit"] == "max_string_bytes"
    assert bundle.parse(data, max_string=4096)[0] == rec
    err = _error(rea_session, "import_evidence_bundle", {"path": str(tmp_path / "absent.json")})
    assert err.code == "target_unavailable" and len(rea_session.ledger) == 0


def test_inspect_evidence_bundle_shares_the_projection(loaded: Session, tmp_path: Path) -> None:
    dest = tmp_path / "b.json"
    _structured(loaded, "export_evidence_bundle", {"path": str(dest)})
    fresh = Session(loaded.registry)
    args = {"path": str(dest), "detail": "summary", "filters": {"operation": "list_procedures"}}
    out = _structured(fresh, "inspect_evidence_bundle", args)
    direct = _structured(loaded, "get_evidence_bundle", {"detail": "summary", "filters": args["filters"]})
    assert out["records"] == direct["records"] and out["matched_count"] == 2
    assert len(fresh.ledger) == 0  # inspecting retains nothing
    from rea_plugins.evidence.tools import inspect_evidence_bundle

    assert inspect_evidence_bundle(json.loads(json.dumps(args)))["records"] == direct["records"]
    whole = inspect_evidence_bundle({"path": str(dest)})
    assert whole["record_count"] == 11 and len(whole["records"]) == 11
    with pytest.raises(ReaError) as info:
        inspect_evidence_bundle({"path": str(dest), "filters": {"operation": "x"}})
    assert info.value.code == "invalid_request"


def test_malformed_and_missing_references(loaded: Session) -> None:
    before = len(loaded.ledger)
    missing = "ev_" + "a" * 64
    err = _error(loaded, "inspect_analysis_view", {"source": {"kind": "retained-evidence", "evidence_id": missing}})
    assert err.details["reason"] == "missing" and err.details["evidence_id"] == missing
    err = _error(loaded, "inspect_analysis_view", {"source": {"kind": "retained-evidence", "evidence_id": "ev_1"}})
    assert err.code == "invalid_request"
    with pytest.raises(ReaError) as info:
        loaded.resolve_evidence({"kind": "retained-evidence", "evidence_id": missing, "x": 1})
    assert info.value.code == "invalid_request"
    rec = ev_mod.to_builtins(next(iter(loaded.ledger)))
    forged = {**rec, "operation": "something_else"}
    err = _error(loaded, "inspect_analysis_view", {"source": {"kind": "inline", "evidence": forged}})
    assert err.code == "evidence_integrity_mismatch" and err.details["reason"] == "id_mismatch"
    assert len(loaded.ledger) == before
    assert msgspec.json.decode(msgspec.json.encode(rec)) == rec


def test_cli_inspect_evidence_bundle_prints_the_summary(loaded: Session, tmp_path: Path) -> None:
    import shutil
    import subprocess

    rea_cli = shutil.which("rea")
    if rea_cli is None:
        pytest.skip("the rea console script is not installed (pip install -e .)")
    dest = tmp_path / "b.json"
    _structured(loaded, "export_evidence_bundle", {"path": str(dest)})
    args = {"path": str(dest), "detail": "summary", "filters": {"operation": "list_procedures"}}
    # The bundle's path is the command's subject (issue 26); the rest are flags.
    command = [rea_cli, "inspect-evidence-bundle", str(dest), "--detail", "summary", "--filters"]
    command += [json.dumps(args["filters"]), "--format", "json"]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (
        out["records"]
        == _structured(loaded, "get_evidence_bundle", {"detail": "summary", "filters": args["filters"]})["records"]
    )
    forged = json.loads(dest.read_bytes())
    forged["records"][0]["operation"] = "edited"
    dest.write_text(json.dumps(forged))
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "evidence_integrity_mismatch"


def test_export_keeps_the_replaced_files_mode(loaded: Session, tmp_path: Path) -> None:
    import stat

    dest = tmp_path / "b.json"
    dest.write_bytes(b"old")
    dest.chmod(0o640)
    _structured(loaded, "export_evidence_bundle", {"path": str(dest), "overwrite": True})
    assert stat.S_IMODE(dest.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.json"
    _structured(loaded, "export_evidence_bundle", {"path": str(fresh)})
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
