"""An archive rewritten in place while extract_artifact reads it (issue 42 item 9).

The reader reads one descriptor, the file that was identified; each entry is read between two checks that the file
still holds the bytes that were hashed. A rewrite mid-extraction is ``artifact_changed`` (reopen), nothing is left
in the output directory, and no file of the new archive is reported under the old one's SHA-256.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.artifacts.zipformat import ZipReader

ENTRY = 16 << 10


def _archive(path: Path) -> list[tuple[str, int]]:
    """Stored entries in two folders; their data offsets (to rewrite in place)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for folder in ("a", "b"):
            for i in range(8):
                zf.writestr(f"{folder}/f{i}.bin", bytes([i]) * ENTRY)
    with zipfile.ZipFile(path) as zf:
        return [(i.filename, i.header_offset + 30 + len(i.filename)) for i in zf.infolist()]


def test_an_archive_rewritten_mid_extraction_is_artifact_changed(
    rea_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "app.zip"
    offsets = _archive(archive)
    out_root = tmp_path / "out"
    out_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(out_root))  # where extract_artifact makes its folder
    original = ZipReader.stream
    calls = 0

    def stream(self: ZipReader, entry: Any, sink: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            # Another writer rewrites the archive in place: same size, same inode, other bytes in every entry.
            with open(archive, "r+b") as fh:
                for _, offset in offsets:
                    fh.seek(offset)
                    fh.write(b"\xee" * ENTRY)
        return original(self, entry, sink, **kw)

    monkeypatch.setattr(ZipReader, "stream", stream)
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "extract_artifact", {"path": str(archive)})
    err = info.value
    assert err.code == "artifact_changed", err
    assert "open" in err.remediation.lower()
    assert os.listdir(out_root) == []  # the partial extraction was removed


def test_an_archive_replaced_after_identification_is_read_as_identified_or_refused(
    rea_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename over the path between identify and open: the opened file is not the hashed one."""
    from rea_plugins.artifacts import inventory

    archive = tmp_path / "app.zip"
    _archive(archive)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("evil.bin", b"x" * 100)
    identify = inventory.identify

    def swapped(path: str, *args: Any, **kw: Any) -> Any:
        target = identify(path, *args, **kw)
        os.replace(other, archive)
        return target

    monkeypatch.setattr(inventory, "identify", swapped)
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "extract_artifact", {"path": str(archive)})
    assert info.value.code == "artifact_changed"


KILLED_MID_EXTRACTION = """
import os, signal, sys
from rea_plugins.artifacts.zipformat import ZipReader
from rea.registry import default_registry
from rea.session import Session
from rea.testing import call_tool

original = ZipReader.stream
calls = []

def stream(self, entry, sink, **kw):
    calls.append(entry.path)
    if len(calls) == 3:  # two files written: the server is killed mid-extraction
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, entry, sink, **kw)

ZipReader.stream = stream
call_tool(Session(default_registry()), "extract_artifact", {"path": sys.argv[1]})
"""


def test_a_start_after_a_kill_mid_extraction_removes_the_partial_output(tmp_path: Path) -> None:
    """Issue 42 item 6: the partial folder of an extraction whose server was killed is removed by the next start,
    a complete extraction's folder (the caller's) never."""
    import subprocess
    import sys

    from rea.process import leftovers
    from tests.mcp.harness import server_env

    archive = tmp_path / "app.zip"
    _archive(archive)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = server_env(TMPDIR=str(tmp))
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_EXTRACTION, str(archive)], env=env, check=False)
    assert killed.returncode == -9
    [partial] = [n for n in os.listdir(tmp) if n.startswith("rea-extract-")]
    assert os.listdir(tmp / partial)  # what it had written
    done = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "extract-artifact", str(archive), "--json"],
        env=env,
        check=True,
        capture_output=True,
    )
    complete = os.path.basename(json.loads(done.stdout)["normalized_result"]["output_directory"])
    removed = leftovers.sweep(str(tmp))
    assert removed == [str(tmp / partial)]
    assert sorted(os.listdir(tmp)) == [complete]
