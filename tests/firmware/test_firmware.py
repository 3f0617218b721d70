"""inspect_firmware_regions and extract_firmware on an image assembled in the session, and a decompression bomb."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from fwfixtures import BOMB_BYTES
from fwfixtures import ELF_AT
from fwfixtures import FS_SIZE
from fwfixtures import GZIP_AT
from fwfixtures import GZIP_TEXT
from fwfixtures import IMAGE_SIZE
from fwfixtures import VERSION_TEXT
from fwfixtures import XZ_AT
from fwfixtures import XZ_TEXT

from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.mcp.harness import connect


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folders rea makes for these calls go to a temporary directory of this test's own, so another process
    using the shared one at the same time (a parallel run, another tool's extraction) never counts as a leftover."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))


def _ours() -> set[str]:
    """rea's firmware folders in the temporary directory (outputs, scratch, input copies)."""
    tmp = tempfile.gettempdir()
    return {n for n in os.listdir(tmp) if n.startswith(("rea-extract-firmware-", "rea-firmware-"))}


def _check_regions(regions: list[dict[str, Any]], elf: bytes) -> None:
    at = {r["offset"]: r for r in regions}
    assert at[0]["kind"] == "extfs" and at[0]["size"] == FS_SIZE
    assert at[GZIP_AT]["kind"] == "gzip"
    assert at[XZ_AT]["kind"] == "xz"
    assert at[ELF_AT]["kind"] == "elf64" and at[ELF_AT]["size"] == len(elf)
    # Regions tile the image; 0xff padding has no entropy, compressed streams a lot.
    assert sum(r["size"] for r in regions) == IMAGE_SIZE
    assert all(r["entropy"] == 0 for r in regions if r["kind"] == "padding")
    assert at[GZIP_AT]["entropy"] > 4 and at[0]["entropy"] < 2


def test_regions(rea_session: Session, firmware: dict[str, Path]) -> None:
    before = _ours()
    out = result_of(rea_session, "inspect_firmware_regions", {"path": str(firmware["image"])})
    _check_regions(out["regions"], firmware["elf"].read_bytes())
    assert out["image_size"] == IMAGE_SIZE and out["next_offset"] is None
    assert out["sandbox"] == "bubblewrap"
    page = result_of(rea_session, "inspect_firmware_regions", {"path": str(firmware["image"]), "limit": 2})
    assert len(page["regions"]) == 2 and page["next_offset"] == 2 and page["total"] == out["total"]
    assert _ours() == before  # the scratch carving and the input copy are gone


def test_extract(rea_session: Session, firmware: dict[str, Path]) -> None:
    elf = firmware["elf"].read_bytes()
    out = result_of(rea_session, "extract_firmware", {"path": str(firmware["image"])})
    root = Path(out["output_directory"])
    try:
        assert root.name.startswith("rea-extract-firmware-") and root.parent == Path(tempfile.gettempdir())
        files = {f["path"]: f for f in out["files"]}
        by_name = {Path(p).name: f for p, f in files.items()}
        # The file system's files, the streams' contents and the carved ELF, each with its SHA-256.
        assert by_name["version"]["sha256"] == _sha(VERSION_TEXT)
        assert by_name["program"]["sha256"] == _sha(elf)
        assert by_name["gzip.uncompressed"]["sha256"] == _sha(GZIP_TEXT)
        assert by_name["xz.uncompressed"]["sha256"] == _sha(XZ_TEXT)
        assert by_name["carved.elf"]["sha256"] == _sha(elf)
        for path, row in files.items():
            assert _sha((root / path).read_bytes()) == row["sha256"]
        assert out["file_count"] == len(files) and out["listing"]["status"] == "complete"
        native = {Path(n["path"]).name: n for n in out["native_binaries"]}
        assert set(native) == {"program", "carved.elf"}
        assert native["program"]["format"] == "elf" and native["program"]["architecture"] == "x86_64"
        # The native binaries are handed on: open_binary reads one as it is listed.
        assert out["next_steps"][0]["tool"] == "open_binary"
        result_of(rea_session, "open_binary", {"path": native["program"]["path"]})
        procs = result_of(rea_session, "list_procedures", {"limit": 500})
        assert "firmware_main" in {p["name"] for p in procs["procedures"]}
        _check_regions(out["regions"], elf)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_decompression_bomb_stops_at_the_output_bound_and_leaves_nothing(
    rea_session: Session, firmware: dict[str, Path]
) -> None:
    # A quarter of a megabyte that expands a thousandfold, sixty-four times the bound.
    assert firmware["bomb"].stat().st_size * 500 < BOMB_BYTES == 64 * (4 << 20)
    before = _ours()
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "extract_firmware", {"path": str(firmware["bomb"]), "max_output_bytes": 4 << 20})
    err = info.value
    assert err.code == "resource_constraint" and err.details["resource"] == "output_bytes"
    assert err.details["limit"] == 4 << 20
    assert _ours() == before


def test_a_file_bound_and_a_deadline(rea_session: Session, firmware: dict[str, Path]) -> None:
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "extract_firmware", {"path": str(firmware["image"]), "max_files": 3})
    assert info.value.code == "resource_constraint" and info.value.details["resource"] == "output_files"
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "extract_firmware", {"path": str(firmware["bomb"]), "timeout_s": 1})
    assert info.value.code in ("provider_timeout", "resource_constraint")


def test_a_cancelled_extraction_leaves_nothing(rea_session: Session, firmware: dict[str, Path]) -> None:
    ctx = CallContext()
    # Cancelled while unblob starts (it takes seconds to load its handlers): the owned process ends, the output goes.
    timer = threading.Timer(0.5, ctx.signal.cancel)
    before = _ours()
    timer.start()
    try:
        with pytest.raises(ReaError) as info:
            call_tool(rea_session, "extract_firmware", {"path": str(firmware["image"])}, ctx)
    finally:
        timer.cancel()
    assert info.value.code == "cancelled"
    assert _ours() == before


def test_through_the_sdk_client(firmware: dict[str, Path]) -> None:
    async def main() -> None:
        async with connect() as client:
            await client.call_tool("enable_toolsets", {"toolsets": ["firmware"]})
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"inspect_firmware_regions", "extract_firmware"} <= names
            result = await client.call_tool("inspect_firmware_regions", {"path": str(firmware["image"])})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            _check_regions(result.structured_content["normalized_result"]["regions"], firmware["elf"].read_bytes())
            result = await client.call_tool("extract_firmware", {"path": str(firmware["image"])})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            out = result.structured_content["normalized_result"]
            try:
                assert {Path(n["path"]).name for n in out["native_binaries"]} == {"program", "carved.elf"}
            finally:
                shutil.rmtree(out["output_directory"], ignore_errors=True)

    anyio.run(main)
