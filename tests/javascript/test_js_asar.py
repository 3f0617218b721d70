"""analyze_javascript_application on ASAR archives packed by @electron/asar, and their integrity policy."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import appfixtures
import pytest
from jssupport import analyze
from jssupport import graph
from jssupport import inline

from rea.errors import ReaError
from rea.evidence import Evidence
from rea.session import Session
from rea.testing import call_tool

pytest.importorskip("rea_plugins.asar.reader", reason="the asar plugin's reader is not installed")


@pytest.fixture(scope="session")
def packed(app_v1: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The v1 app packed with its source maps unpacked (as packagers do with native add-ons)."""
    out = tmp_path_factory.mktemp("asar") / "app.asar"
    return appfixtures.pack_asar(app_v1, out, unpack="*.map")


def _copy(packed: Path, dest: Path) -> Path:
    shutil.copyfile(packed, dest)
    shutil.copytree(str(packed) + ".unpacked", str(dest) + ".unpacked")
    return dest


def test_asar_gives_the_directory_graph(analysis_session: Session, packed: Path, ev_v1: Evidence) -> None:
    ev = analyze(analysis_session, packed)
    assert ev.subject is not None and ev.subject.format == "asar"
    result = graph(ev)
    assert result["input"]["format"] == "asar"
    assert result["coverage"]["status"] == "complete"
    assert result["integrity_contradictions"] == []
    from_dir = {m["node_id"]: m for m in graph(ev_v1)["modules"]}
    from_asar = {m["node_id"]: m for m in result["modules"]}
    assert set(from_asar) == set(from_dir)
    for node_id, module in from_asar.items():
        assert module["integrity"] == "verified"
        same = {k: v for k, v in module.items() if k != "integrity"}
        assert same == {k: v for k, v in from_dir[node_id].items() if k != "integrity"}
    assert result["entry_points"] == graph(ev_v1)["entry_points"]
    # The external map is an unpacked entry, read from app.asar.unpacked/.
    maps = {m["node_id"]: m for m in result["source_maps"]}
    assert {s["path"] for s in maps["map:dist/main.js.map"]["sources"]} == appfixtures.V1_FACTS["bundled_in_main"]


def _tampered(packed: Path, app: Path, dest: Path) -> tuple[Path, set[str]]:
    """Flip a literal inside the packed bytes; the packed files that hold it are the ones now contradicted."""
    out = _copy(packed, dest)
    data = out.read_bytes()
    assert b"search-v1" in data
    out.write_bytes(data.replace(b"search-v1", b"search-v9"))
    holders = {
        p.relative_to(app).as_posix()
        for p in app.rglob("*")
        if p.is_file() and not p.name.endswith(".map") and b"search-v1" in p.read_bytes()
    }
    return out, holders


def test_integrity_mismatch_fails_closed(rea_session: Session, packed: Path, app_v1: Path, tmp_path: Path) -> None:
    bad, holders = _tampered(packed, app_v1, tmp_path / "app.asar")
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(bad)})
    assert err.value.code == "artifact_integrity_mismatch"
    details = err.value.details
    assert details["logical_path"] in holders
    assert details["declared_sha256"] != details["calculated_sha256"]
    assert "record-and-continue" in err.value.remediation
    assert len(rea_session.ledger) == 0


def test_record_and_continue(analysis_session: Session, packed: Path, app_v1: Path, tmp_path: Path) -> None:
    bad, holders = _tampered(packed, app_v1, tmp_path / "app.asar")
    ev = analyze(analysis_session, bad, integrity_policy="record-and-continue")
    result = graph(ev)
    contradicted = {m["path"] for m in result["modules"] if m["integrity"] == "contradicted"}
    assert contradicted == holders
    assert len(result["integrity_contradictions"]) == len(holders)
    assert result["coverage"]["status"] == "partial"
    assert "integrity_contradictions" in result["coverage"]["reasons"]
    # Verified siblings continue with their facts.
    verified = [m for m in result["modules"] if m["integrity"] == "verified"]
    assert any(m["path"] == "src/preload.js" for m in verified)


def test_contradicted_modules_are_never_unchanged(
    rea_session: Session, analysis_session: Session, packed: Path, app_v1: Path, tmp_path: Path
) -> None:
    clean = analyze(analysis_session, packed)
    bad, holders = _tampered(packed, app_v1, tmp_path / "app.asar")
    dirty = analyze(analysis_session, bad, integrity_policy="record-and-continue")
    out = call_tool(
        rea_session, "compare_application_versions", {"left": inline(clean), "right": inline(dirty)}
    ).evidence
    assert out is not None
    status = {m["right"]: m["status"] for m in out.normalized_result["modules"]}
    for path in holders:
        assert status[f"mod:{path}"] == "contradicted"
    # Modules unchanged in place are counted, not listed.
    assert "mod:src/preload.js" not in status and out.normalized_result["summary"]["unchanged"] > 0
    assert out.normalized_result["coverage"]["status"] == "partial"


def test_missing_unpacked_companion(
    rea_session: Session, analysis_session: Session, packed: Path, tmp_path: Path
) -> None:
    copy = _copy(packed, tmp_path / "app.asar")
    (Path(str(copy) + ".unpacked") / "dist" / "main.js.map").unlink()
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(copy)})
    assert err.value.category == "unavailable"
    assert err.value.details.get("logical_path") == "dist/main.js.map"
    ev = analyze(analysis_session, copy, integrity_policy="record-and-continue")
    result = graph(ev)
    assert result["coverage"]["status"] == "partial"
    assert {"path": "dist/main.js.map", "reason": "unpacked companion file is absent"} in result["coverage"]["skipped"]
    main_map = next(m for m in result["source_maps"] if m["node_id"] == "map:dist/main.js.map")
    assert main_map["sources"] == [] and main_map["diagnostics"][0]["kind"] == "unavailable"


def test_malformed_asar(rea_session: Session, tmp_path: Path) -> None:
    bad = tmp_path / "bad.asar"
    bad.write_bytes(b"\x04\x00\x00\x00\xff\xff\x00\x00\xf0\xff\x00\x00\xe0\xff\x00\x00{not json")
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(bad), "format": "asar"})
    assert err.value.code in ("artifact_operation_failed", "truncated")


def test_unpacked_mismatch_names_its_cause(
    rea_session: Session, analysis_session: Session, packed: Path, tmp_path: Path
) -> None:
    copy = _copy(packed, tmp_path / "app.asar")
    companion = Path(str(copy) + ".unpacked") / "dist" / "main.js.map"
    companion.write_bytes(companion.read_bytes() + b"\n")
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(copy)})
    assert err.value.code == "artifact_integrity_mismatch"
    assert err.value.details["unpacked"] is True and err.value.details["logical_path"] == "dist/main.js.map"
    assert "sign or strip" in err.value.remediation and "record-and-continue" in err.value.remediation
    result = graph(analyze(analysis_session, copy, integrity_policy="record-and-continue"))
    assert [c.get("path", c.get("logical_path")) for c in result["integrity_contradictions"]] == ["dist/main.js.map"]
    assert result["coverage"]["status"] == "partial"


def _asar(files: dict[str, bytes]) -> bytes:
    """An ASAR written directly (Chromium pickle framing), for names @electron/asar would never write."""
    header: dict[str, Any] = {"files": {}}
    data = b""
    for name, content in files.items():
        header["files"][name] = {"size": len(content), "offset": str(len(data))}
        data += content
    raw = json.dumps(header).encode()
    padded = raw + b"\0" * (-len(raw) % 4)
    header_pickle = struct.pack("<II", len(padded) + 4, len(raw)) + padded
    return struct.pack("<II", 4, len(header_pickle)) + header_pickle + data


def test_hostile_entry_names_stay_out_of_the_graph(analysis_session: Session, tmp_path: Path) -> None:
    path = tmp_path / "hostile.asar"
    path.write_bytes(
        _asar(
            {
                "index.js": b"require('./x.js');\n",
                "../evil.js": b"export const evil = 1;\n",
                "x.js": b"module.exports = 1;\n",
            }
        )
    )
    result = graph(analyze(analysis_session, path))
    assert [m["path"] for m in result["modules"]] == ["index.js", "x.js"]
    assert result["modules"][0]["imports"][0]["resolved"] == "mod:x.js"
    skipped = result["coverage"]["skipped"]
    assert len(skipped) == 1 and skipped[0]["path"].endswith("evil.js")
    assert skipped[0]["reason"].startswith("unsafe entry name")
