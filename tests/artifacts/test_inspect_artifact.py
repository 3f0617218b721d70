"""inspect_artifact on directories and real ASARs: determinism, integrity policies, coverage."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import evidence as ev_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.session import Session
from rea.testing import call_tool


def _inspect(session: Session, path: Path, **args: Any) -> Evidence:
    out = call_tool(session, "inspect_artifact", {"path": str(path), **args}).evidence
    assert out is not None
    return out


def _semantic(ev: Evidence) -> bytes:
    return msgspec.json.encode(ev_mod.semantic_projection(ev))


def test_asar_inventory_reports_every_fact(rea_session: Session, app_asar: Path, kit: Any) -> None:
    ev = _inspect(rea_session, app_asar)
    res = ev.normalized_result
    assert ev.operation == "inspect_artifact" and ev.provider.id == "asar"
    assert ev.subject is not None and ev.subject.format == "asar"
    assert ev.subject.digest.sha256 == hashlib.sha256(app_asar.read_bytes()).hexdigest()
    assert res["format"] == "asar" and res["coverage"] == "complete"
    assert res["integrity_contradictions"] == []
    assert res["limits"] == {
        "max_entries": 200000,
        "max_depth": 4,
        "max_total_bytes": 4 << 30,
        "max_compression_ratio": 1000,
    }
    entries = {e["path"]: e for e in res["entries"]}
    for rel, data in kit.APP_FILES.items():
        e = entries[rel]
        assert e["kind"] == "file" and e["size"] == len(data)
        assert e["sha256"] == hashlib.sha256(data).hexdigest()
        assert e["integrity"] == "verified"
        assert e["declared_integrity"]["hash"] == e["sha256"]
    assert entries["native/addon.node"]["unpacked"] is True
    assert len(entries["assets/big.bin"]["declared_integrity"]["blocks"]) == 2
    assert entries["renderer/main-link.js"]["kind"] == "link"
    assert res["totals"]["files"] == len(kit.APP_FILES)


def test_directory_and_asar_of_one_tree_list_the_same_files(
    rea_session: Session, app_asar: Path, app_dir: Path
) -> None:
    a = {e["path"]: e for e in _inspect(rea_session, app_asar).normalized_result["entries"]}
    d = {e["path"]: e for e in _inspect(rea_session, app_dir).normalized_result["entries"]}
    assert set(a) == set(d)
    for path, e in a.items():
        assert (e["kind"], e["sha256"], e["link"]) == (d[path]["kind"], d[path]["sha256"], d[path]["link"])


def test_equal_directories_give_identical_evidence(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    files = {f"m{i:02d}/f{j}.js": f"export const v = {i * j};\n".encode() for i in range(12) for j in range(3)}
    first = kit.write_tree(tmp_path / "one", dict(sorted(files.items())))
    # Same content created in the reverse order at another place: different directory-entry order on disk.
    second = kit.write_tree(tmp_path / "elsewhere" / "two", dict(sorted(files.items(), reverse=True)))
    a, b = _inspect(rea_session, first), _inspect(rea_session, second)
    assert a.evidence_id == b.evidence_id
    assert _semantic(a) == _semantic(b)
    assert a.subject is not None and a.subject.format == "directory"
    # Content, not only names and sizes, decides identity.
    (second / "m00" / "f0.js").write_bytes(b"export const v = 9;\n")
    assert _inspect(rea_session, second).evidence_id != a.evidence_id


def test_same_asar_bytes_at_two_paths_give_identical_evidence(
    rea_session: Session, app_asar: Path, tmp_path: Path
) -> None:
    other = tmp_path / "copy" / "renamed.asar"
    other.parent.mkdir()
    shutil.copy(app_asar, other)
    shutil.copytree(str(app_asar) + ".unpacked", str(other) + ".unpacked")
    a, b = _inspect(rea_session, app_asar), _inspect(rea_session, other)
    assert a.evidence_id == b.evidence_id and _semantic(a) == _semantic(b)
    assert a.parameters == {"integrity_policy": "fail", "limits": a.normalized_result["limits"]}


def test_mismatch_fails_closed_by_default(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    header, data = kit.build_asar({"a.js": b"good();", "b.js": b"other();"})
    data = b"evil();" + data[7:]
    path = tmp_path / "tampered.asar"
    path.write_bytes(kit.asar_bytes(header, data))
    with pytest.raises(ReaError) as err:
        _inspect(rea_session, path)
    assert err.value.code == "artifact_integrity_mismatch"
    assert err.value.details["declared_sha256"] == hashlib.sha256(b"good();").hexdigest()
    assert err.value.details["calculated_sha256"] == hashlib.sha256(b"evil();").hexdigest()
    assert len(rea_session.ledger) == 0


def test_record_and_continue_quarantines_nested_archives(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    inner_header, inner_data = kit.build_asar({"secret.js": b"s();"})
    inner = kit.asar_bytes(inner_header, inner_data)
    ok_inner = kit.asar_bytes(*kit.build_asar({"fine.js": b"f();"}))
    header, data = kit.build_asar({"nested.asar": inner, "ok.asar": ok_inner, "plain.js": b"p();"})
    # Contradict nested.asar's declared hash without breaking its structure: flip a data byte.
    at = data.index(b"s();")
    data = data[:at] + b"S" + data[at + 1 :]
    path = tmp_path / "outer.asar"
    path.write_bytes(kit.asar_bytes(header, data))
    ev = _inspect(rea_session, path, integrity_policy="record-and-continue")
    res = ev.normalized_result
    entries = {e["path"]: e for e in res["entries"]}
    assert entries["nested.asar"]["integrity"] == "contradicted"
    assert entries["nested.asar"]["nested_archive"] is None
    assert not any(p.startswith("nested.asar!/") for p in entries)
    assert entries["ok.asar"]["nested_archive"]["status"] == "expanded"
    assert entries["ok.asar!/fine.js"]["integrity"] == "verified"
    assert entries["plain.js"]["integrity"] == "verified"
    [c] = res["integrity_contradictions"]
    assert c["logical_path"] == "nested.asar" and c["unpacked"] is False
    assert c["declared_sha256"] == hashlib.sha256(inner).hexdigest()
    assert c["observed_sha256"] == entries["nested.asar"]["sha256"] != c["declared_sha256"]
    assert c["trust"] == "contradicted" and c["provenance"]["declared_by"] == "asar-header"
    assert res["coverage"] == "partial" and ev.parameters["integrity_policy"] == "record-and-continue"


def test_missing_companion_makes_coverage_partial(rea_session: Session, app_asar: Path) -> None:
    shutil.rmtree(str(app_asar) + ".unpacked")
    res = _inspect(rea_session, app_asar).normalized_result
    entry = next(e for e in res["entries"] if e["path"] == "native/addon.node")
    assert entry["integrity"] == "unavailable" and entry["sha256"] is None
    assert res["coverage"] == "partial"
    assert any("native/addon.node" in r for r in res["partial_reasons"])


def test_directory_lists_links_and_special_files_without_following(
    rea_session: Session, tmp_path: Path, kit: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    root = kit.write_tree(tmp_path / "d", {"a.txt": b"a"}, links={"escape": "../outside", "ok": "a.txt"})
    os.mkfifo(root / "pipe")
    res = _inspect(rea_session, root).normalized_result
    entries = {e["path"]: e for e in res["entries"]}
    assert set(entries) == {"a.txt", "escape", "ok", "pipe"}
    assert entries["escape"]["kind"] == "link" and entries["escape"]["problem"] == "link_escape"
    assert entries["ok"]["link"] == "a.txt" and entries["ok"]["problem"] is None
    assert entries["pipe"]["kind"] == "special" and entries["pipe"]["sha256"] is None


def test_inventory_is_cancellable(rea_session: Session, app_asar: Path) -> None:
    ctx = CallContext()
    ctx.signal.cancel()
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "inspect_artifact", {"path": str(app_asar)}, ctx=ctx)
    assert err.value.code == "cancelled"
    assert len(rea_session.ledger) == 0


@pytest.mark.parametrize(
    "args,path",
    [
        ({"integrity_policy": "ignore"}, "integrity_policy"),
        ({"max_depth": -1}, "max_depth"),
        ({"max_entries": 0}, "max_entries"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_arguments_are_invalid_request(
    rea_session: Session, app_dir: Path, args: dict[str, Any], path: str
) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "inspect_artifact", {"path": str(app_dir), **args})
    assert err.value.code == "invalid_request"
    assert err.value.details["issues"][0]["path"] == path


def test_missing_path_is_unavailable(rea_session: Session, tmp_path: Path) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "inspect_artifact", {"path": str(tmp_path / "nope.asar")})
    assert err.value.code == "target_unavailable"


def test_asar_inside_a_directory_reads_its_unpacked_companion(rea_session: Session, app_asar: Path, kit: Any) -> None:
    # An Electron "resources" directory: app.asar next to app.asar.unpacked.
    res = _inspect(rea_session, app_asar.parent).normalized_result
    entries = {e["path"]: e for e in res["entries"]}
    assert entries["app.asar"]["nested_archive"]["status"] == "expanded"
    addon = entries["app.asar!/native/addon.node"]
    assert addon["unpacked"] is True and addon["integrity"] == "verified"
    assert addon["sha256"] == hashlib.sha256(kit.APP_FILES["native/addon.node"]).hexdigest()
    assert entries["app.asar.unpacked/native/addon.node"]["sha256"] == addon["sha256"]
    assert res["coverage"] == "complete"
