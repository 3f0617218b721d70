"""Issue 24 item 6: hostile ZIPs refused while they are read, through one real ``rea serve``, whose memory
stays at most 256 MiB throughout (VmHWM, the peak resident set, read from /proc after every call).

Before: a ZIP listing 1,000,000 entries was refused only after ``zipfile`` had built an object for each
(593 MiB with short names, 2.5 GB with long ones); a 2 KiB bzip2 member expanded to 3 GiB in one
decompressor call (6 GB resident); sixty directory records over one deflated member were read as 3.5 GiB of
entries; a nested ZIP was held in memory whole (1.9 GB for 900 MiB).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.robustness import hostile
from tests.robustness.server import Reply
from tests.robustness.server import Server

MEMORY_BOUND_KIB = 256 << 10
DEADLINE_S = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("bombs")
    dirs = [work / d for d in ("tmp", "home", "cwd", "cache")]
    for d in dirs:
        d.mkdir()
    srv = Server(*dirs, work / "stderr")
    try:
        yield srv
    finally:
        srv.kill()
        srv.close(5)


def _both(server: Server, path: Path) -> list[Reply]:
    """inspect_artifact and extract_artifact on ``path``; each answered in time, memory within the bound."""
    replies = []
    for tool in ("inspect_artifact", "extract_artifact"):
        reply = server.call(tool, {"path": str(path)}, DEADLINE_S)
        assert reply.status in ("ok", "error"), (tool, reply)
        peak = server.peak_rss_kib()
        assert peak <= MEMORY_BOUND_KIB, f"{tool} on {path.name}: rea serve peaked at {peak >> 10} MiB"
        replies.append(reply)
    return replies


def _error(reply: Reply) -> dict[str, Any]:
    assert reply.status == "error", reply
    err: dict[str, Any] = reply.payload["error"]
    return err


def test_a_million_entries_are_refused_while_the_directory_is_read(server: Server, tmp_path: Path) -> None:
    honest = tmp_path / "million.zip"
    honest.write_bytes(hostile.many_entries_zip(1_000_000))
    # zipfile walks the directory's bytes, not the end record's count: a count of 10 hides nothing.
    lying = tmp_path / "million-lying.zip"
    data = bytearray(honest.read_bytes())
    data[-22 + 8 : -22 + 12] = b"\x0a\x00\x0a\x00"
    lying.write_bytes(bytes(data))
    for path in (honest, lying):
        for reply in _both(server, path):
            err = _error(reply)
            assert err["code"] == "resource_constraint", err
            assert err["details"]["resource"] == "entries" and err["details"]["limit"] == 200_000, err


def test_a_bomb_behind_200000_long_names_is_refused_before_they_are_materialized(
    server: Server, tmp_path: Path
) -> None:
    # 200,000 records of 250-byte names, the last declaring 1 GiB for 0 bytes: refused from the directory pass
    # (once refused after zipfile built every record, at 278 MiB).
    path = tmp_path / "late.zip"
    path.write_bytes(hostile.many_entries_zip(200_000, name_len=250, last_declares=1 << 30))
    for reply in _both(server, path):
        err = _error(reply)
        assert (err["code"], err["details"]["resource"]) == ("resource_constraint", "compression_ratio"), err
        assert err["details"]["logical_path"].startswith("f0199999n"), err


def test_a_small_limit_is_enforced_by_the_same_count(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "count.zip"
    path.write_bytes(hostile.many_entries_zip(101))
    err = _error(server.call("inspect_artifact", {"path": str(path), "max_entries": 100}, DEADLINE_S))
    assert (err["code"], err["details"]["resource"]) == ("resource_constraint", "entries")
    ok = server.call("inspect_artifact", {"path": str(path), "max_entries": 101}, DEADLINE_S)
    assert ok.status == "ok" and ok.payload["normalized_result"]["entry_count"] == 101


def test_a_bzip2_member_stops_at_its_declared_size(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "bzip2.zip"
    path.write_bytes(hostile.bzip2_lying_zip(2 << 30))
    for reply in _both(server, path):
        err = _error(reply)
        # The declared size's bytes are read, and the CRC judges them; the other 2 GiB are never produced.
        assert err["code"] == "artifact_integrity_mismatch", err


def test_honest_bzip2_and_lzma_members_still_read(server: Server, tmp_path: Path) -> None:
    payload = random.Random(24).randbytes(1 << 20) + bytes(4 << 20)  # over many 1 MiB read chunks
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        path = tmp_path / f"honest-{method}.zip"
        path.write_bytes(hostile.zip_bytes([("a.bin", payload), ("b.txt", b"bravo")], compression=method))
        inspected, extracted = _both(server, path)
        assert inspected.status == "ok", inspected
        entries = {e["path"]: e for e in inspected.payload["normalized_result"]["entries"]}
        assert entries["a.bin"]["size"] == len(payload) and entries["a.bin"]["integrity"] == "verified"
        assert extracted.status == "ok" and extracted.payload["normalized_result"]["file_count"] == 2


def test_overlapping_entries_are_refused(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "overlap.zip"
    path.write_bytes(hostile.overlapping_zip(60, bytes(60 << 20) + random.Random(7).randbytes(4 << 10)))
    for reply in _both(server, path):
        err = _error(reply)
        assert err["code"] == "artifact_operation_failed" and err["details"]["problem"] == "overlapping_entries", err
        assert "overlap" in err["message"]


def test_a_large_nested_zip_is_read_without_holding_it(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "nested.zip"
    path.write_bytes(hostile.nested_large_zip(400 << 20))
    inspected, extracted = _both(server, path)
    assert inspected.status == "ok", inspected
    entries = {e["path"]: e for e in inspected.payload["normalized_result"]["entries"]}
    assert entries["inner.zip"]["nested_archive"]["status"] == "expanded"
    assert entries["inner.zip!/z"]["size"] == 400 << 20 and entries["inner.zip!/z"]["integrity"] == "verified"
    assert extracted.status == "ok"


def test_formats_without_a_reader_are_refused_at_once(server: Server, tmp_path: Path) -> None:
    # gzip with endless concatenated members, a tar declaring a huge sparse member, xz, bzip2 and 7z: no
    # unpacker claims them, so nothing is decompressed and each call is unsupported_target.
    cases = {
        "endless.gz": gzip.compress(b"") * 20_000,
        "sparse.tar": hostile.sparse_tar(1 << 40),
        "z.xz": lzma.compress(bytes(16 << 20)),
        "z.bz2": bz2.compress(bytes(16 << 20)),
        "z.7z": b"7z\xbc\xaf\x27\x1c" + bytes(64),
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        for reply in _both(server, path):
            assert _error(reply)["code"] == "unsupported_target", (name, reply)


def test_a_large_nested_asar_is_read_without_holding_it(server: Server, tmp_path: Path) -> None:
    chunk = bytes((1 << 20) - 256) + random.Random(1).randbytes(256)
    big = chunk * 300
    header = {"files": {"big.bin": {"size": len(big), "offset": "0"}, "a.js": {"size": 2, "offset": "0"}}}
    path = tmp_path / "nested-asar.zip"
    path.write_bytes(hostile.zip_bytes([("app.asar", hostile.asar_bytes(header, big))]))
    inspected, _ = _both(server, path)
    assert inspected.status == "ok", inspected
    entries = {e["path"]: e for e in inspected.payload["normalized_result"]["entries"]}
    assert entries["app.asar"]["nested_archive"]["status"] == "expanded"
    assert entries["app.asar!/big.bin"]["size"] == len(big)
