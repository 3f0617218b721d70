"""extract_artifact: a fresh directory, nothing outside it, refusals listed, nothing partial on failure."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool


def _extract(session: Session, path: Path, **args: Any) -> dict[str, Any]:
    ev = call_tool(session, "extract_artifact", {"path": str(path), **args}).evidence
    assert ev is not None and ev.operation == "extract_artifact"
    out: dict[str, Any] = ev.normalized_result
    return out


def _error(session: Session, path: Path, **args: Any) -> ReaError:
    with pytest.raises(ReaError) as err:
        call_tool(session, "extract_artifact", {"path": str(path), **args})
    return err.value


def _written(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath) / name
            assert not full.is_symlink()
            out[str(full.relative_to(root))] = full.read_bytes()
    return out


def test_extracts_every_regular_file_of_an_asar(
    rea_session: Session, app_asar: Path, kit: Any, private_tmpdir: Path
) -> None:
    res = _extract(rea_session, app_asar)
    out = Path(res["output_directory"])
    assert out.parent == private_tmpdir and out.name.startswith("rea-extract-")
    assert _written(out) == kit.APP_FILES  # unpacked companion included, link not materialized
    assert [f["path"] for f in res["files"]] == sorted(kit.APP_FILES)
    for f in res["files"]:
        assert f["sha256"] == hashlib.sha256(kit.APP_FILES[f["path"]]).hexdigest()
        assert f["integrity"] == "verified"
    assert res["refused"] == []  # the link was not selected: only regular files are by default
    assert os.stat(out / "main.js").st_mode & stat.S_IXUSR
    assert not os.stat(out / "package.json").st_mode & stat.S_IXUSR


def test_selected_paths_only_and_fresh_directory_each_call(rea_session: Session, app_asar: Path) -> None:
    a = _extract(rea_session, app_asar, paths=["main.js", "renderer/renderer.js"])
    b = _extract(rea_session, app_asar, paths=["main.js"])
    assert a["output_directory"] != b["output_directory"]
    assert set(_written(Path(a["output_directory"]))) == {"main.js", "renderer/renderer.js"}
    assert set(_written(Path(b["output_directory"]))) == {"main.js"}


def test_unknown_selected_path_is_invalid_request(rea_session: Session, app_asar: Path, private_tmpdir: Path) -> None:
    err = _error(rea_session, app_asar, paths=["main.js", "nope.js"])
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "paths/1"
    assert list(private_tmpdir.iterdir()) == []


def test_hostile_zip_names_are_refused_and_nothing_escapes(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("../../escape.txt", b"escape")
        zf.writestr("/abs/evil.txt", b"abs")
        zf.writestr("dir\\..\\win.txt", b"win")
        zf.writestr("dup.txt", b"1")
        with pytest.warns(UserWarning):
            zf.writestr("dup.txt", b"2")
        zf.writestr("Readme.md", b"upper")
        zf.writestr("README.md", b"lower")
        zf.writestr("caf\u00e9.txt", b"nfc")
        zf.writestr("cafe\u0301.txt", b"nfd")
        info = zipfile.ZipInfo("lnk")
        info.create_system = 3
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc")
        zf.writestr("lnk/passwd", b"through the link")
        dev = zipfile.ZipInfo("dev")
        dev.create_system = 3
        dev.external_attr = (stat.S_IFCHR | 0o666) << 16
        zf.writestr(dev, b"")
        zf.writestr("safe/ok.txt", b"ok")
    before = kit.tree_snapshot(tmp_path)
    res = _extract(
        rea_session,
        path,
        paths=[
            "../../escape.txt",
            "/abs/evil.txt",
            "dir\\..\\win.txt",
            "dup.txt",
            "Readme.md",
            "README.md",
            "lnk",
            "lnk/passwd",
            "dev",
            "caf\u00e9.txt",
            "cafe\u0301.txt",
            "safe/ok.txt",
        ],
    )
    out = Path(res["output_directory"])
    assert _written(out) == {"safe/ok.txt": b"ok"}
    reasons = {(r["path"], r["ordinal"]): r["reason"] for r in res["refused"]}
    assert reasons == {
        ("../../escape.txt", 0): "parent_traversal",
        ("/abs/evil.txt", 0): "absolute_path",
        ("dir\\..\\win.txt", 0): "backslash_in_name",
        ("dup.txt", 0): "duplicate_name",
        ("dup.txt", 1): "duplicate_name",
        ("Readme.md", 0): "case_collision",
        ("README.md", 0): "case_collision",
        ("caf\u00e9.txt", 0): "case_collision",
        ("cafe\u0301.txt", 0): "case_collision",
        ("lnk", 0): "symlink",
        ("lnk/passwd", 0): "beneath_symlink",
        ("dev", 0): "device_or_special_file",
    }
    # Nothing appeared anywhere else under the test's directory tree.
    after = kit.tree_snapshot(tmp_path)
    assert {p for p in after - before if not p.startswith(os.path.relpath(out, tmp_path))} == set()


def test_directory_source_refuses_links_and_devices(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root = kit.write_tree(
        tmp_path / "src", {"a.txt": b"a", "sub/b.txt": b"b"}, links={"esc": "../outside", "sub/up": "../a.txt"}
    )
    os.mkfifo(root / "fifo")
    res = _extract(rea_session, root, paths=["a.txt", "sub/b.txt", "esc", "sub/up", "fifo"])
    assert _written(Path(res["output_directory"])) == {"a.txt": b"a", "sub/b.txt": b"b"}
    assert {r["path"]: r["reason"] for r in res["refused"]} == {
        "esc": "symlink",
        "sub/up": "symlink",
        "fifo": "device_or_special_file",
    }


def test_integrity_failure_leaves_nothing(rea_session: Session, app_asar: Path, private_tmpdir: Path, kit: Any) -> None:
    companion = Path(str(app_asar) + ".unpacked") / "native" / "addon.node"
    companion.write_bytes(b"stripped")
    err = _error(rea_session, app_asar)
    assert err.code == "artifact_integrity_mismatch" and err.details["logical_path"] == "native/addon.node"
    assert err.details["unpacked"] is True and "record-and-continue" in err.remediation
    assert list(private_tmpdir.iterdir()) == []  # the files written before the mismatch were removed
    # record-and-continue writes the observed bytes in quarantine, never at their path, and reports the contradiction.
    res = _extract(rea_session, app_asar, integrity_policy="record-and-continue")
    written = _written(Path(res["output_directory"]))
    assert "native/addon.node" not in written and written["rea-quarantine/native/addon.node"] == b"stripped"
    [c] = res["integrity_contradictions"]
    assert c["quarantined_to"] == "rea-quarantine/native/addon.node"
    [row] = [f for f in res["files"] if f["path"] == "native/addon.node"]
    assert row["quarantined_to"] == c["quarantined_to"] and row["integrity"] != "verified"
    assert c["logical_path"] == "native/addon.node" and c["unpacked"] is True
    assert c["observed_sha256"] == hashlib.sha256(b"stripped").hexdigest()
    assert c["declared_sha256"] == hashlib.sha256(kit.APP_FILES["native/addon.node"]).hexdigest()
    assert "likely_cause" in c


def test_missing_companion_fails_unavailable_and_leaves_nothing(
    rea_session: Session, app_asar: Path, private_tmpdir: Path
) -> None:
    shutil.rmtree(str(app_asar) + ".unpacked")
    for policy in ("fail", "record-and-continue"):
        err = _error(rea_session, app_asar, integrity_policy=policy)
        assert err.code == "target_unavailable" and err.category == "unavailable"
        assert err.details["logical_path"] == "native/addon.node"
        assert list(private_tmpdir.iterdir()) == []
    # Other entries can still be selected.
    res = _extract(rea_session, app_asar, paths=["main.js"])
    assert res["file_count"] == 1


def test_size_limit_failure_leaves_nothing(rea_session: Session, app_asar: Path, private_tmpdir: Path) -> None:
    err = _error(rea_session, app_asar, max_total_bytes=1 << 20)
    assert err.code == "resource_constraint" and err.details["resource"] == "total_bytes"
    assert list(private_tmpdir.iterdir()) == []


def test_zip_bomb_is_refused_before_writing(
    rea_session: Session, tmp_path: Path, kit: Any, private_tmpdir: Path
) -> None:
    path = kit.make_zip(tmp_path / "bomb.zip", {"z.bin": bytes(16 << 20), "a.txt": b"a"})
    err = _error(rea_session, path)
    assert err.code == "resource_constraint" and err.details["resource"] == "compression_ratio"
    assert list(private_tmpdir.iterdir()) == []


def test_cli_extract_artifact(app_asar: Path, private_tmpdir: Path) -> None:
    companion = Path(str(app_asar) + ".unpacked") / "native" / "addon.node"
    companion.write_bytes(b"signed later")
    env = {**os.environ, "TMPDIR": str(private_tmpdir)}
    cmd = [
        sys.executable,
        "-c",
        "import sys; from rea.cli.main import main; sys.exit(main())",
        "extract-artifact",
        str(app_asar),
        "--format",
        "json",
        "--paths",
        "main.js",
        "native/addon.node",
    ]
    failed = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode != 0
    assert "artifact_integrity_mismatch" in failed.stdout + failed.stderr
    assert list(private_tmpdir.iterdir()) == []
    ok = subprocess.run(
        [*cmd, "--integrity-policy", "record-and-continue"], capture_output=True, text=True, env=env, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    record = json.loads(ok.stdout)
    res = record["normalized_result"]
    out = Path(res["output_directory"])
    assert out.parent == private_tmpdir
    assert not (out / "native" / "addon.node").exists()
    assert (out / "rea-quarantine" / "native" / "addon.node").read_bytes() == b"signed later"
    assert [c["logical_path"] for c in res["integrity_contradictions"]] == ["native/addon.node"]


class _CancelAfter(CallContext):
    """Cancels the request after a number of cancellation checks, as a client's cancel would mid-work."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.remaining = checks

    def check(self, phase: str = "") -> None:
        self.remaining -= 1
        if self.remaining <= 0:
            self.signal.cancel()
        super().check(phase)


def test_cancellation_mid_extraction_leaves_nothing(
    rea_session: Session, tmp_path: Path, kit: Any, private_tmpdir: Path
) -> None:
    # 60 files are written by one thread, 300 by several: both stop and leave nothing.
    for count in (60, 300):
        src = kit.write_tree(tmp_path / f"many{count}", {f"d{i % 7}/f{i}.txt": b"x" * i for i in range(count)})
        with pytest.raises(ReaError) as err:
            call_tool(rea_session, "extract_artifact", {"path": str(src)}, ctx=_CancelAfter(count // 2))
        assert err.value.code == "cancelled"
        assert list(private_tmpdir.iterdir()) == []


def test_many_files_written_concurrently_are_complete_and_exact(
    rea_session: Session, tmp_path: Path, kit: Any, private_tmpdir: Path
) -> None:
    files = {f"pkg{i % 13}/lib/m{i}.js": f"module.exports = {i};\n".encode() * (i % 5 + 1) for i in range(400)}
    good = kit.write_asar(tmp_path / "many.asar", files)
    res = _extract(rea_session, good)
    assert _written(Path(res["output_directory"])) == files
    assert [f["path"] for f in res["files"]] == sorted(files)
    assert all(f["integrity"] == "verified" for f in res["files"])
    # One contradicted entry among them: the whole extraction fails and nothing is left.
    header, data = kit.build_asar(files)
    target = "pkg7/lib/m397.js"
    at = int(header["files"]["pkg7"]["files"]["lib"]["files"]["m397.js"]["offset"])
    bad = tmp_path / "bad.asar"
    bad.write_bytes(kit.asar_bytes(header, data[:at] + b"X" + data[at + 1 :]))
    shutil.rmtree(res["output_directory"])
    with pytest.raises(ReaError) as err:
        _extract(rea_session, bad)
    assert err.value.code == "artifact_integrity_mismatch" and err.value.details["logical_path"] == target
    assert list(private_tmpdir.iterdir()) == []


def test_undecodable_and_encrypted_names_are_refused(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    src = kit.write_tree(tmp_path / "names", {"ok.txt": b"ok"})
    fd = os.open(os.fsencode(src) + b"/bad\xff.txt", os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    res = _extract(rea_session, src)
    assert _written(Path(res["output_directory"])) == {"ok.txt": b"ok"}
    assert [(r["path"], r["reason"]) for r in res["refused"]] == [("bad\\xff.txt", "undecodable_name")]
    # An entry flagged as encrypted (general-purpose bit 0) is listed as unreadable and never written.
    path = kit.make_zip(tmp_path / "enc.zip", {"plain.txt": b"p", "secret.txt": b"s"}, compression=zipfile.ZIP_STORED)
    with zipfile.ZipFile(path) as zf:
        local = zf.getinfo("secret.txt").header_offset
    raw = bytearray(path.read_bytes())
    raw[local + 6] |= 1  # local file header flags
    raw[raw.rindex(b"PK\x01\x02") + 8] |= 1  # its central directory record (written last)
    path.write_bytes(bytes(raw))
    inv = call_tool(rea_session, "inspect_artifact", {"path": str(path)}).evidence
    assert inv is not None
    entries = {e["path"]: e for e in inv.normalized_result["entries"]}
    assert entries["secret.txt"]["integrity"] == "unavailable" and entries["secret.txt"]["problem"] == "encrypted"
    assert inv.normalized_result["coverage"] == "partial"
    res = _extract(rea_session, path)
    assert _written(Path(res["output_directory"])) == {"plain.txt": b"p"}
    assert [(r["path"], r["reason"]) for r in res["refused"]] == [("secret.txt", "encrypted")]


def test_hostile_asar_names_are_refused(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    header = {
        "files": {
            "..": {"files": {"evil.txt": {"size": 1, "offset": "0"}}},
            "x": {"files": {"y/../../z.txt": {"size": 1, "offset": "1"}}},
            "ok.txt": {"size": 1, "offset": "2"},
            "link": {"link": "../../etc"},
        }
    }
    path = tmp_path / "hostile.asar"
    path.write_bytes(kit.asar_bytes(header, b"abc"))
    before = kit.tree_snapshot(tmp_path)
    res = _extract(rea_session, path, paths=["../evil.txt", "x/y/../../z.txt", "ok.txt", "link"])
    out = Path(res["output_directory"])
    assert _written(out) == {"ok.txt": b"c"}
    assert {r["path"]: r["reason"] for r in res["refused"]} == {
        "../evil.txt": "parent_traversal",
        "x/y/../../z.txt": "parent_traversal",
        "link": "symlink",
    }
    new = kit.tree_snapshot(tmp_path) - before
    assert all(p.startswith(os.path.relpath(out, tmp_path)) or p == os.path.relpath(out.parent, tmp_path) for p in new)


def test_analyze_routes_an_asar_with_its_integrity_policy(tmp_path: Path, kit: Any) -> None:
    """`rea analyze app.asar --integrity-policy record-and-continue` (both JavaScript CLI routes take it)."""
    header, data = kit.build_asar(
        {"package.json": b'{"name": "demo", "main": "main.js"}', "main.js": b"console.log('rea demo');\n"}
    )
    tampered = bytearray(data)
    tampered[0] ^= 0x20  # main.js (first in the data region) no longer matches its declared hash
    app = tmp_path / "app.asar"
    app.write_bytes(kit.asar_bytes(header, bytes(tampered)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    cmd = [sys.executable, "-m", "rea", "analyze", str(app), "--json"]
    failed = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["error"]["code"] == "artifact_integrity_mismatch"
    ok = subprocess.run(
        [*cmd, "--integrity-policy", "record-and-continue"], capture_output=True, text=True, env=env, timeout=120
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    record = json.loads(ok.stdout)
    assert record["operation"] == "analyze_javascript_application"
    assert [c["logical_path"] for c in record["normalized_result"]["integrity_contradictions"]] == ["main.js"]


def test_a_cancel_after_the_handler_returned_removes_the_extraction(
    tmp_path: Path, kit: Any, private_tmpdir: Path
) -> None:
    """The cancel lands between the handler's return and the ledger: nothing is recorded or left behind."""
    import msgspec

    from rea.catalog.invoke import invoke
    from rea.context import CallContext
    from rea.context import CancelSignal
    from rea.errors import ReaError
    from rea.registry import default_registry
    from rea.session import Session

    src = kit.write_tree(tmp_path / "src", {"a.txt": b"alpha", "b.txt": b"beta"})
    registry = default_registry()
    tool = registry.tools["extract_artifact"]
    signal = CancelSignal()

    def late(call: Any) -> Any:
        out = tool.handler(call)
        signal.cancel()
        return out

    session = Session(registry)
    with pytest.raises(ReaError) as err:
        invoke(session, msgspec.structs.replace(tool, handler=late), {"path": str(src)}, CallContext(signal))
    assert err.value.code == "cancelled" and len(session.ledger) == 0
    assert [p for p in private_tmpdir.iterdir() if p.name.startswith("rea-extract")] == []
