"""Issue 17 regressions of the artifact tools, through the SDK client over stdio (and the kernel for one
failure that cannot be timed from outside): plain messages for malformed ZIPs, one bad name refused
instead of the whole archive, and a large extraction that returns a bounded result naming its record."""

from __future__ import annotations

import io
import os
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.artifacts import extract as extract_mod
from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.robustness.runner import EXCEPTION_NAME

LONG = "n" * 120  # long names make 30,000 rows far larger than the 10 MiB response budget


def _structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    doc: dict[str, Any] = result.structured_content
    return doc


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def _bad_utf8(data: bytes, stand_in: bytes, raw: bytes) -> bytes:
    """Put ``raw`` (not UTF-8) where ``stand_in`` is, and flag it as UTF-8 in both of its headers."""
    buf = bytearray(data.replace(stand_in, raw))
    for magic, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = buf.find(magic)
        while at >= 0:
            if raw in buf[at : at + 80]:
                buf[at + flags_at + 1] |= 0x08
            at = buf.find(magic, at + 4)
    return bytes(buf)


def test_malformed_zips_are_described_and_one_bad_name_is_refused(tmp_path: Path, kit: Any) -> None:
    good = _zip({"a.txt": b"alpha", "b.txt": b"bravo"})
    eocd = bytearray(good)
    struct.pack_into("<I", eocd, good.rfind(b"PK\x05\x06") + 16, 0x7FFFFFFF)
    past_eof = tmp_path / "eocd.zip"
    past_eof.write_bytes(bytes(eocd))
    names = tmp_path / "names.zip"
    names.write_bytes(
        _bad_utf8(_zip({"a.txt": b"alpha", "badQQ.txt": b"bad name", "": b"no name"}), b"badQQ.txt", b"bad\x98\x98.txt")
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    async def main() -> None:
        async with connect(TMPDIR=str(tmp)) as client:
            for tool in ("inspect_artifact", "extract_artifact"):
                err = error_of(await client.call_tool(tool, {"path": str(past_eof)}))
                assert err["code"] == "artifact_operation_failed"
                assert (
                    "end-of-central-directory record places the central directory at offset 2147483647, "
                    "past the end of" in err["message"]
                )
                assert not EXCEPTION_NAME.search(err["message"]), err["message"]
            inv = _structured(await client.call_tool("inspect_artifact", {"path": str(names)}))
            problems = {e["path"]: e["problem"] for e in inv["normalized_result"]["entries"]}
            assert problems == {"a.txt": None, "bad\\x98\\x98.txt": "invalid_utf8_name", "": "empty_name"}
            out = _structured(await client.call_tool("extract_artifact", {"path": str(names)}))["normalized_result"]
            assert [f["path"] for f in out["files"]] == ["a.txt"]
            assert {r["path"]: r["reason"] for r in out["refused"]} == {
                "bad\\x98\\x98.txt": "invalid_utf8_name",
                "": "empty_name",
            }
            assert sorted(os.listdir(out["output_directory"])) == ["a.txt"]

    anyio.run(main)


def test_a_large_extraction_is_bounded_and_names_its_complete_record(tmp_path: Path, kit: Any) -> None:
    count = 30_000
    tree: dict[str, Any] = {"files": {}}
    for i in range(count):
        folder = tree["files"].setdefault(f"d{i // 1000:02d}", {"files": {}})
        folder["files"][f"{LONG}{i:05d}.js"] = {"size": 16, "offset": "0"}  # every entry shares one offset
    archive = tmp_path / "shared.asar"
    archive.write_bytes(kit.asar_bytes(tree, b"S" * 16))
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    async def main() -> None:
        async with connect(TMPDIR=str(tmp)) as client:
            doc = _structured(await client.call_tool("extract_artifact", {"path": str(archive)}))
            result = doc["normalized_result"]
            out = Path(result["output_directory"])
            assert out.parent == tmp and result["file_count"] == count and result["total_bytes"] == 16 * count
            assert sum(len(files) for _, _, files in os.walk(out)) == count
            listing = result["listing"]
            assert listing["status"] == "bounded" and listing["total"]["files"] == count
            assert len(result["files"]) == listing["shown"]["files"] < count
            complete = listing["complete_evidence"]
            assert doc["evidence_links"] == [complete["evidence_id"]]
            # The complete listing is in the session: the last page names the last file.
            page = _structured(
                await client.call_tool(
                    "inspect_analysis_view",
                    {"source": complete, "view": {"kind": "page", "section": "files", "offset": count - 5, "limit": 5}},
                )
            )
            rows = page["normalized_result"]["items"]
            assert [r["path"] for r in rows][-1] == f"d29/{LONG}{count - 1:05d}.js"
            assert page["normalized_result"]["total"] == count and page["normalized_result"]["next_offset"] is None
            # A selection small enough to list stays complete, in a fresh directory of its own.
            small = _structured(
                await client.call_tool("extract_artifact", {"path": str(archive), "paths": [f"d00/{LONG}00000.js"]})
            )["normalized_result"]
            assert small["listing"] == {"status": "complete"} and small["file_count"] == 1
            assert Path(small["output_directory"]) != out
            shutil.rmtree(out)
            shutil.rmtree(small["output_directory"])
        assert os.listdir(tmp) == []  # nothing else was written; the session's workers are gone

    anyio.run(main)


def test_a_failure_after_the_files_are_written_leaves_nothing(
    rea_session: Session, tmp_path: Path, kit: Any, private_tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = kit.write_asar(tmp_path / "app.asar", {"a.js": b"1", "b.js": b"2"})

    def fail(*args: Any, **kwargs: Any) -> bool:
        raise ReaError("resource_constraint", "simulated failure after extraction")

    monkeypatch.setattr(extract_mod, "oversized", fail)
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "extract_artifact", {"path": str(archive)})
    assert err.value.message == "simulated failure after extraction"
    assert list(private_tmpdir.iterdir()) == []


def test_names_longer_than_a_file_system_allows_are_refused(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    long_name = "x" * 300
    archive = tmp_path / "long.zip"
    archive.write_bytes(_zip({"ok.txt": b"ok", long_name: b"too long", f"d/{long_name}/y": b"deep"}))
    res = call_tool(rea_session, "extract_artifact", {"path": str(archive)}).evidence
    assert res is not None
    result = res.normalized_result
    assert [f["path"] for f in result["files"]] == ["ok.txt"]
    assert {r["reason"] for r in result["refused"]} == {"name_too_long"} and result["refused_count"] == 2
