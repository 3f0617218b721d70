"""The ASAR reader API on archives packed by @electron/asar: listing, reads, integrity, companions."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea_plugins.asar.reader import AsarArchive


def test_entries_match_the_packed_tree(app_asar: Path, app_dir: Path, kit: Any) -> None:
    with AsarArchive.open(str(app_asar)) as arc:
        entries = {e.path: e for e in arc.entries()}
        paths = [e.path for e in arc.entries()]
    assert paths == sorted(paths)
    files = {rel for rel in kit.APP_FILES}
    assert {p for p, e in entries.items() if e.kind == "file"} == files
    assert {p for p, e in entries.items() if e.kind == "directory"} == {"assets", "native", "renderer"}
    link = entries["renderer/main-link.js"]
    # @electron/asar stores links relative to the archive root.
    assert link.kind == "link" and link.link == "main.js" and link.problem is None
    for rel, data in kit.APP_FILES.items():
        assert entries[rel].size == len(data)
    assert entries["native/addon.node"].unpacked is True and entries["native/addon.node"].offset is None
    assert entries["main.js"].unpacked is False and entries["main.js"].executable is True
    assert entries["package.json"].executable is False


def test_declared_integrity_and_blocks(app_asar: Path, kit: Any) -> None:
    big = kit.APP_FILES["assets/big.bin"]
    with AsarArchive.open(str(app_asar)) as arc:
        entry = {e.path: e for e in arc.entries()}["assets/big.bin"]
    assert entry.integrity is not None
    assert entry.integrity.algorithm == "SHA256"
    assert entry.integrity.hash == hashlib.sha256(big).hexdigest()
    assert entry.integrity.block_size == kit.BLOCK
    assert entry.integrity.blocks == [
        hashlib.sha256(big[: kit.BLOCK]).hexdigest(),
        hashlib.sha256(big[kit.BLOCK :]).hexdigest(),
    ]


def test_block_conventions_at_exact_multiples(app_asar: Path, tmp_path: Path, kit: Any) -> None:
    exact = kit.APP_FILES["assets/exact.bin"]
    with AsarArchive.open(str(app_asar)) as arc:
        entry = {e.path: e for e in arc.entries()}["assets/exact.bin"]
        # @electron/asar closes with an empty trailing block.
        assert entry.integrity is not None
        assert entry.integrity.blocks == [hashlib.sha256(exact).hexdigest(), hashlib.sha256(b"").hexdigest()]
        assert arc.read("assets/exact.bin").verified is True
    # A writer that stops at ceil(size / blockSize) blocks verifies too.
    path = kit.write_asar(tmp_path / "ceil.asar", {"exact.bin": exact})
    with AsarArchive.open(str(path)) as arc:
        declared = arc.entries()[0].integrity
        assert declared is not None and len(declared.blocks) == 1
        assert arc.read("exact.bin").verified is True


def test_reads_are_verified_bytes(app_asar: Path, kit: Any) -> None:
    with AsarArchive.open(str(app_asar)) as arc:
        for rel, data in kit.APP_FILES.items():
            got = arc.read(rel)
            assert got.data == data, rel
            assert got.verified is True and got.contradiction is None


def test_packed_mismatch_fails_closed_with_hashes(app_asar: Path, kit: Any) -> None:
    with AsarArchive.open(str(app_asar)) as arc:
        entry = {e.path: e for e in arc.entries()}["main.js"]
        start = 8 + arc.header_size + (entry.offset or 0)
    kit.flip_byte(app_asar, start)
    observed = hashlib.sha256(bytes([kit.APP_FILES["main.js"][0] ^ 0xFF]) + kit.APP_FILES["main.js"][1:])
    with AsarArchive.open(str(app_asar)) as arc:
        with pytest.raises(ReaError) as err:
            arc.read("main.js")
        assert err.value.code == "artifact_integrity_mismatch"
        assert err.value.category == "integrity_mismatch"
        assert err.value.details["logical_path"] == "main.js"
        assert err.value.details["declared_sha256"] == hashlib.sha256(kit.APP_FILES["main.js"]).hexdigest()
        assert err.value.details["calculated_sha256"] == observed.hexdigest()
        assert err.value.details["unpacked"] is False
        kept = arc.read("main.js", policy="record-and-continue")
        assert kept.verified is False
        assert kept.data[1:] == kit.APP_FILES["main.js"][1:]
        c = kept.contradiction
        assert c is not None and c["observed_sha256"] == observed.hexdigest()
        assert c["trust"] == "contradicted" and c["unpacked"] is False and c["provenance"]["declared_by"]
        # Siblings still verify.
        assert arc.read("package.json").verified is True


def test_unpacked_mismatch_names_cause_and_option(app_asar: Path) -> None:
    companion = Path(str(app_asar) + ".unpacked") / "native" / "addon.node"
    companion.write_bytes(companion.read_bytes() + b"signature")
    with AsarArchive.open(str(app_asar)) as arc, pytest.raises(ReaError) as err:
        arc.read("native/addon.node")
    assert err.value.code == "artifact_integrity_mismatch"
    assert err.value.details["unpacked"] is True
    assert "sign" in err.value.message and "strip" in err.value.message
    assert "record-and-continue" in err.value.remediation
    assert err.value.details["rerun_with"] == {"integrity_policy": "record-and-continue"}


def test_missing_companion_is_unavailable(app_asar: Path) -> None:
    shutil.rmtree(str(app_asar) + ".unpacked")
    with AsarArchive.open(str(app_asar)) as arc:
        with pytest.raises(ReaError) as err:
            arc.read("native/addon.node")
        assert err.value.code == "target_unavailable" and err.value.category == "unavailable"
        assert err.value.details == {"reason": "unavailable", "logical_path": "native/addon.node"}
        assert arc.read("main.js").verified is True


def test_companion_symlink_is_not_followed(app_asar: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.node"
    outside.write_bytes(b"\x7fELF-not-really-a-native-addon")
    companion = Path(str(app_asar) + ".unpacked") / "native" / "addon.node"
    companion.unlink()
    os.symlink(outside, companion)
    with AsarArchive.open(str(app_asar)) as arc, pytest.raises(ReaError) as err:
        arc.read("native/addon.node")
    assert err.value.code == "target_unavailable"


def test_reads_check_cancellation(app_asar: Path) -> None:
    ctx = CallContext()
    ctx.signal.cancel()
    with AsarArchive.open(str(app_asar)) as arc, pytest.raises(ReaError) as err:
        arc.read("assets/big.bin", ctx=ctx)
    assert err.value.code == "cancelled"


def test_archive_without_integrity_reads_unverified(tmp_path: Path, kit: Any) -> None:
    path = kit.write_asar(tmp_path / "old.asar", {"a.txt": b"alpha", "d/b.txt": b"beta"}, with_integrity=False)
    with AsarArchive.open(str(path)) as arc:
        got = arc.read("d/b.txt")
    assert got.data == b"beta" and got.verified is None and got.contradiction is None


def test_unknown_entry_is_invalid_request(app_asar: Path) -> None:
    with AsarArchive.open(str(app_asar)) as arc, pytest.raises(ReaError) as err:
        arc.read("no/such.js")
    assert err.value.code == "invalid_request"
