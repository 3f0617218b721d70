"""The kernel's annotation store: persistence, validation, concurrent writers, settings and bundles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from rea import bundle
from rea import evidence as ev_mod
from rea.annotations import AnnotationStore
from rea.annotations import Note
from rea.annotations import Notebook
from rea.annotations import check_field
from rea.annotations import make_notebook
from rea.annotations import normalize_address
from rea.config import annotations_dir
from rea.config import load_settings
from rea.doctor import doctor_report
from rea.errors import ReaError
from rea.evidence import Digest
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.registry import load

SHA = "ab" * 32
OTHER = "cd" * 32
ROOT = Path(__file__).resolve().parents[2]


def _set(store: AnnotationStore, sha: str, address: str, **fields: str | None) -> None:
    store.set_fields(sha, {address: dict(fields)})


def test_annotations_persist_per_target_and_reads_create_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = AnnotationStore(str(root))
    assert store.load(SHA).revision is None and not root.exists()
    _set(store, SHA, "0x401136", name="parse_options", comment="reads argv")
    _set(store, SHA, "0x401200", bookmark="")
    again = AnnotationStore(str(root)).load(SHA)
    assert again.note("0x401136") == Note(name="parse_options", comment="reads argv")
    assert again.note("0x401200").bookmark == "" and again.address_of("parse_options") == "0x401136"
    assert AnnotationStore(str(root)).load(OTHER).addresses == {}
    # One canonical document per target, and its lock beside it; nothing else.
    assert sorted(p.name for p in root.iterdir()) == [f"{SHA}.json", f"{SHA}.lock"]
    on_disk = json.loads((root / f"{SHA}.json").read_text())
    assert on_disk["sha256"] == SHA and on_disk["addresses"]["0x401136"]["name"] == "parse_options"


def test_the_revision_follows_the_content(tmp_path: Path) -> None:
    store = AnnotationStore(str(tmp_path))
    _set(store, SHA, "0x10", comment="a")
    first = store.load(SHA).revision
    _set(store, SHA, "0x10", comment="b")
    assert store.load(SHA).revision not in (None, first)
    _set(store, SHA, "0x10", comment="a")
    assert store.load(SHA).revision == first
    _set(store, SHA, "0x10", comment=None)
    assert store.load(SHA).revision is None and store.load(SHA).addresses == {}


def test_bad_values_are_canonical_invalid_requests() -> None:
    for bad, reason in (
        ("1st", "invalid_value"),
        ("has space", "invalid_value"),
        ("a" * 300, "out_of_range"),
        ("x\0y", "invalid_value"),
    ):
        with pytest.raises(ReaError) as info:
            check_field("name", bad, "name")
        assert info.value.code == "invalid_request"
        assert info.value.details["issues"][0] == {**info.value.details["issues"][0], "path": "name", "reason": reason}
    assert check_field("name", "std::vector", "name") == "std::vector"
    assert check_field("name", "", "name") is None and check_field("bookmark", "", "name") == ""
    with pytest.raises(ReaError) as info:
        normalize_address("401136")
    assert info.value.details["issues"][0]["reason"] == "invalid_format"
    assert normalize_address("0x0040113A") == "0x40113a"


def test_a_damaged_document_is_an_integrity_error_not_a_crash(tmp_path: Path) -> None:
    store = AnnotationStore(str(tmp_path))
    (tmp_path / f"{SHA}.json").write_text(
        '{"schema_version": 1, "sha256": "' + SHA + '", "addresses": {"0x10": {"name": "not valid"}}}'
    )
    with pytest.raises(ReaError) as info:
        store.load(SHA)
    assert info.value.code == "artifact_integrity_mismatch" and "Traceback" not in info.value.message


_WRITER = textwrap.dedent("""
    import os, sys, time
    from rea.annotations import AnnotationStore
    root, sha, tag, count, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    store = AnnotationStore(root)
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(count):
        base = 0x1000 if tag == "a" else 0x9000
        store.set_fields(sha, {hex(base + i): {"name": f"{tag}_{i}"}, "0x500": {"comment": f"{tag} {i}"}})
""")


def raced(writer: str, tmp_path: Path, count: int, timeout: float) -> Notebook:
    """Two processes (tags ``a`` and ``b``) run ``writer`` ``count`` times on one store, released together; the
    target's document once both have ended well."""
    root, go = tmp_path / "store", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", writer, str(root), SHA, tag, str(count), str(go)], env=env)
        for tag in ("a", "b")
    ]
    go.touch()
    assert [p.wait(timeout=timeout) for p in procs] == [0, 0]
    return AnnotationStore(str(root)).load(SHA)


def test_two_processes_writing_one_target_at_once_lose_nothing(tmp_path: Path) -> None:
    count = 60
    nb = raced(_WRITER, tmp_path, count, timeout=120)
    names = nb.names()
    assert len(names) == 2 * count
    assert {names[hex(0x1000 + i)] for i in range(count)} == {f"a_{i}" for i in range(count)}
    assert {names[hex(0x9000 + i)] for i in range(count)} == {f"b_{i}" for i in range(count)}
    # The shared address holds one writer's last comment, never a torn or mixed value.
    assert nb.note("0x500").comment in (f"a {count - 1}", f"b {count - 1}")
    assert not [p for p in (tmp_path / "store").iterdir() if p.suffix == ".tmp"]


def test_the_location_setting(tmp_path: Path) -> None:
    assert annotations_dir({"HOME": "/home/u"}) == "/home/u/.local/share/rea/annotations"
    assert annotations_dir({"HOME": "/home/u", "XDG_DATA_HOME": "/data"}) == "/data/rea/annotations"
    assert annotations_dir({"HOME": "/home/u", "XDG_DATA_HOME": "relative"}) == "/home/u/.local/share/rea/annotations"
    assert annotations_dir({"REA_ANNOTATIONS_DIR": str(tmp_path) + "/x/"}) == str(tmp_path / "x")
    assert load_settings({"REA_ANNOTATIONS_DIR": str(tmp_path)}).annotations_dir == str(tmp_path)
    with pytest.raises(ReaError) as info:
        load_settings({"REA_ANNOTATIONS_DIR": "relative/dir"})
    assert info.value.code == "configuration_invalid"
    assert info.value.details["settings"][0]["setting"] == "REA_ANNOTATIONS_DIR"
    report = doctor_report(
        load(), home=str(tmp_path), project_dir=str(tmp_path), environ={"REA_ANNOTATIONS_DIR": str(tmp_path / "notes")}
    )
    assert report["host"]["annotations_dir"] == str(tmp_path / "notes")
    check = next(c for c in report["checks"] if c["id"] == "annotations-dir")
    assert check["status"] == "pass" and not (tmp_path / "notes").exists()


def _record(sha: str) -> ev_mod.Evidence:
    provider = ProviderIdentity(id="native", name="Native", version="1")
    subject = Subject(name="t", local_path="/t", digest=Digest(sha256=sha), size=1, format="elf", architecture="x86_64")
    return ev_mod.build(
        operation="procedure_info",
        provider=provider,
        subject=subject,
        analysis_profile=None,
        parameters={},
        normalized_result={"address": "0x10", "name": "f"},
    )


def test_bundles_carry_annotations_authenticated(tmp_path: Path) -> None:
    records = [_record(SHA)]
    plain = b"".join(bundle.canonical_chunks(records))
    assert b'"annotations"' not in plain  # a bundle without annotations keeps its earlier form
    assert bundle.parse_bundle(plain).annotations == []
    notes = make_notebook(SHA, {"0x10": Note(name="parse", comment="c")})
    stray = make_notebook(OTHER, {"0x20": Note(name="elsewhere")})
    data = b"".join(bundle.canonical_chunks(records, notebooks=[notes, stray]))
    loaded = bundle.parse_bundle(data)
    assert [nb.sha256 for nb in loaded.annotations] == [SHA]  # only targets the records describe travel
    assert loaded.annotations[0] == notes and loaded.records == records
    doc = json.loads(data)
    doc["annotations"][0]["addresses"]["0x10"]["name"] = "edited"
    with pytest.raises(ReaError) as info:
        bundle.parse_bundle(msgspec.json.encode(doc))
    assert info.value.code == "evidence_integrity_mismatch"
    assert info.value.details["reason"] == "annotation_revision_mismatch"
    doc = json.loads(data)
    doc["annotations"][0]["sha256"] = OTHER
    with pytest.raises(ReaError) as info:
        bundle.parse_bundle(msgspec.json.encode(doc))
    assert info.value.code == "evidence_integrity_mismatch"


def test_merging_keeps_what_the_store_holds(tmp_path: Path) -> None:
    store = AnnotationStore(str(tmp_path))
    _set(store, SHA, "0x10", name="mine", comment="kept")
    _set(store, SHA, "0x30", name="taken")
    incoming = make_notebook(
        SHA,
        {
            "0x10": Note(name="theirs", comment="kept", inline_comment="new"),
            "0x20": Note(name="fresh"),
            "0x40": Note(name="taken"),
        },
    )
    report = store.merge(incoming)
    nb = store.load(SHA)
    assert nb.note("0x10") == Note(name="mine", comment="kept", inline_comment="new")
    assert nb.note("0x20").name == "fresh" and nb.note("0x40").name is None
    assert report["added_fields"] == 2 and report["conflict_count"] == 2
    assert {c["address"] for c in report["conflicts"]} == {"0x10", "0x40"}
