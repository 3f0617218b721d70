"""ZIP-family inventory: package markers, nesting, CRC integrity and the zip-bomb bounds."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of


def _inspect(session: Session, path: Path, **args: Any) -> dict[str, Any]:
    out: dict[str, Any] = result_of(session, "inspect_artifact", {"path": str(path), **args})
    return out


def _error(session: Session, path: Path, **args: Any) -> ReaError:
    with pytest.raises(ReaError) as err:
        call_tool(session, "inspect_artifact", {"path": str(path), **args})
    return err.value


@pytest.mark.parametrize(
    "members,expected",
    [
        ({"AndroidManifest.xml": b"<manifest/>", "classes.dex": b"dex\n035\0", "res/a.xml": b"<a/>"}, "apk"),
        ({"Payload/Demo.app/Info.plist": b"<plist/>", "Payload/Demo.app/Demo": b"\xcf\xfa\xed\xfe"}, "ipa"),
        ({"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\n", "a/B.class": b"\xca\xfe\xba\xbe\0\0\0\x34"}, "jar"),
        ({"AppxManifest.xml": b"<Package/>", "[Content_Types].xml": b"<Types/>", "AppxBlockMap.xml": b"<B/>"}, "msix"),
        ({"readme.txt": b"plain"}, "zip"),
    ],
)
def test_package_formats_by_markers(
    rea_session: Session, tmp_path: Path, kit: Any, members: dict[str, bytes], expected: str
) -> None:
    # The file name says nothing: formats come from member markers only.
    path = kit.make_zip(tmp_path / "package.bin", members)
    out = call_tool(rea_session, "inspect_artifact", {"path": str(path)}).evidence
    assert out is not None
    assert out.normalized_result["format"] == expected
    assert out.subject is not None and out.subject.format == expected
    assert out.provider.id == "zip"
    files = {e["path"]: e for e in out.normalized_result["entries"] if e["kind"] == "file"}
    assert set(files) == set(members)
    for name, data in members.items():
        assert files[name]["sha256"] == hashlib.sha256(data).hexdigest()
        assert files[name]["size"] == len(data)
        assert files[name]["integrity"] == "verified"


def test_nested_archives_expand_within_depth(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    jar = io.BytesIO()
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\n")
        zf.writestr("x/Y.class", b"\xca\xfe\xba\xbe")
    header, data = kit.build_asar({"inner.js": b"module.exports = 1;\n"})
    path = kit.make_zip(
        tmp_path / "outer.zip",
        {"lib/dep.jar": jar.getvalue(), "res/app.asar": kit.asar_bytes(header, data), "top.txt": b"top"},
    )
    out = _inspect(rea_session, path)
    entries = {e["path"]: e for e in out["entries"]}
    assert entries["lib/dep.jar"]["nested_archive"] == {"format": "jar", "status": "expanded", "entry_count": 2}
    assert entries["lib/dep.jar!/x/Y.class"]["depth"] == 1
    assert entries["res/app.asar"]["nested_archive"]["format"] == "asar"
    inner = entries["res/app.asar!/inner.js"]
    assert inner["sha256"] == hashlib.sha256(b"module.exports = 1;\n").hexdigest()
    assert inner["integrity"] == "verified"
    assert [e["path"] for e in out["entries"]] == sorted(e["path"] for e in out["entries"])
    # max_depth 0: the outer archive is inspected without descending, and the result says what was not opened.
    flat = _inspect(rea_session, path, max_depth=0)
    assert [e["path"] for e in flat["entries"]] == ["lib/dep.jar", "res/app.asar", "top.txt"]
    assert flat["entries"][0]["nested_archive"] == {"format": "zip", "status": "not-expanded"}  # sniffed, unopened
    assert flat["entries"][0]["sha256"] == entries["lib/dep.jar"]["sha256"]
    assert flat["coverage"] == "partial" and len(flat["partial_reasons"]) == 2


def test_deep_nesting_is_bounded(rea_session: Session, tmp_path: Path) -> None:
    data = b"core"
    for i in range(8):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"level{i}.zip" if i else "core.txt", data)
        data = buf.getvalue()
    path = tmp_path / "matryoshka.zip"
    path.write_bytes(data)
    bounded = _inspect(rea_session, path, max_depth=3)
    assert len(bounded["entries"]) == 4 and bounded["entries"][-1]["nested_archive"]["status"] == "not-expanded"
    assert bounded["coverage"] == "partial" and "max_depth 3" in bounded["partial_reasons"][0]
    assert len(_inspect(rea_session, path, max_depth=8)["entries"]) == 8


def test_zip_bomb_ratio_is_refused(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = kit.make_zip(tmp_path / "bomb.zip", {"zeros.bin": bytes(20 << 20)})
    err = _error(rea_session, path)
    assert err.code == "resource_constraint" and err.category == "resource_constraint"
    assert err.details["resource"] == "compression_ratio" and err.details["limit"] == 1000.0
    assert err.details["logical_path"] == "zeros.bin"
    # Raising the bound lets the trusted input through; the total-bytes bound still applies.
    assert _inspect(rea_session, path, max_compression_ratio=100000)["totals"]["bytes"] == 20 << 20
    err = _error(rea_session, path, max_compression_ratio=100000, max_total_bytes=1 << 20)
    assert err.details == {"resource": "total_bytes", "limit": 1 << 20, "observed": 20 << 20}


def test_nested_bomb_counts_against_total(rea_session: Session, tmp_path: Path) -> None:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(4):
            zf.writestr(f"z{i}", bytes(1 << 20))
    outer = tmp_path / "outer.zip"
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("inner.zip", inner.getvalue())
    err = _error(rea_session, outer, max_total_bytes=2 << 20, max_compression_ratio=10000)
    assert err.code == "resource_constraint" and err.details["resource"] == "total_bytes"


def test_too_many_entries(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = kit.make_zip(tmp_path / "many.zip", {f"f{i}": b"" for i in range(30)})
    err = _error(rea_session, path, max_entries=10)
    assert err.code == "resource_constraint" and err.details["resource"] == "entries"
    assert err.details["limit"] == 10


def test_crc_mismatch_fails_closed_or_is_recorded(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = kit.make_zip(tmp_path / "crc.zip", {"a.txt": b"A" * 64, "b.txt": b"B" * 64}, compression=zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    at = raw.index(b"A" * 64)
    raw[at] = ord("X")
    path.write_bytes(bytes(raw))
    err = _error(rea_session, path)
    assert err.code == "artifact_integrity_mismatch" and err.details["logical_path"] == "a.txt"
    assert err.details["calculated_sha256"] == hashlib.sha256(b"X" + b"A" * 63).hexdigest()
    out = _inspect(rea_session, path, integrity_policy="record-and-continue")
    assert out["coverage"] == "partial"
    [c] = out["integrity_contradictions"]
    assert c["logical_path"] == "a.txt" and c["algorithm"] == "crc32"
    assert c["observed_sha256"] == hashlib.sha256(b"X" + b"A" * 63).hexdigest()
    entries = {e["path"]: e for e in out["entries"]}
    assert entries["a.txt"]["integrity"] == "contradicted"
    assert entries["b.txt"]["integrity"] == "verified"


def test_unsafe_names_are_listed_with_their_problem(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = tmp_path / "names.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("../escape.txt", b"1")
        zf.writestr("/abs.txt", b"2")
        zf.writestr("dup.txt", b"first")
        with pytest.warns(UserWarning):
            zf.writestr("dup.txt", b"second")
        info = zipfile.ZipInfo("link")
        info.create_system = 3
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    out = _inspect(rea_session, path)
    problems = {(e["path"], e["ordinal"]): e["problem"] for e in out["entries"]}
    assert problems[("../escape.txt", 0)] == "parent_traversal"
    assert problems[("/abs.txt", 0)] == "absolute_path"
    assert problems[("dup.txt", 0)] == problems[("dup.txt", 1)] == "duplicate_name"
    assert problems[("link", 0)] == "link_escape"
    link = next(e for e in out["entries"] if e["path"] == "link")
    assert link["kind"] == "link" and link["link"] == "/etc/passwd" and link["sha256"] is None


@pytest.mark.parametrize("payload", [b"PK\x03\x04" + b"\0" * 60, b"PK\x05\x06garbage"])
def test_malformed_zip_is_typed(rea_session: Session, tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "broken.zip"
    path.write_bytes(payload)
    err = _error(rea_session, path)
    assert err.code == "artifact_operation_failed" and err.details["reason"] == "malformed_zip"


def test_truncated_zip_is_typed(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = kit.make_zip(tmp_path / "cut.zip", {"a.bin": bytes(range(256)) * 64})
    path.write_bytes(path.read_bytes()[:-30])
    err = _error(rea_session, path)
    assert err.code == "artifact_operation_failed"


def test_unrecognized_file_is_unsupported(rea_session: Session, tmp_path: Path) -> None:
    path = tmp_path / "plain.txt"
    path.write_bytes(b"just text")
    err = _error(rea_session, path)
    assert err.code == "unsupported_target" and "asar" in err.details["supported_formats"]
