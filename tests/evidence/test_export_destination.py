"""export_evidence_bundle with overwrite replaces regular files only (issue 24, item 2)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool

from .support import simple_record


@pytest.fixture
def loaded(rea_session: Session) -> Session:
    for i in range(3):
        rea_session.ledger.record(simple_record(i))
    return rea_session


def _export_error(session: Session, dest: Path) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, "export_evidence_bundle", {"path": str(dest), "overwrite": True})
    return info.value


def _hostile_destinations(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link-to-null"
    link.symlink_to("/dev/null")
    made = {"fifo": fifo, "symlink": link, "directory": tmp_path / "dir"}
    made["directory"].mkdir()
    if os.geteuid() == 0:
        device = tmp_path / "null-copy"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        made["device"] = device
    return made


def test_overwrite_refuses_devices_fifos_and_links_to_them(loaded: Session, tmp_path: Path) -> None:
    hostile = _hostile_destinations(tmp_path)
    if os.geteuid() == 0:
        assert "device" in hostile
    before = {name: os.lstat(p) for name, p in hostile.items()}
    for name, dest in hostile.items():
        err = _export_error(loaded, dest)
        assert err.code == "invalid_request", name
        assert str(dest) in err.message and err.details["issues"][0]["path"] == "path", name
        after = os.lstat(dest)
        assert (after.st_mode, after.st_ino, after.st_rdev) == (
            before[name].st_mode,
            before[name].st_ino,
            before[name].st_rdev,
        ), name
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    # No staging file is left behind for any refusal.
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".json.tmp")]


def test_overwrite_still_replaces_a_regular_file_and_a_link_to_one(loaded: Session, tmp_path: Path) -> None:
    dest = tmp_path / "b.json"
    dest.write_bytes(b"old")
    call_tool(loaded, "export_evidence_bundle", {"path": str(dest), "overwrite": True})
    assert json.loads(dest.read_bytes())["record_count"] == 3
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "alias.json"
    link.symlink_to(real)
    call_tool(loaded, "export_evidence_bundle", {"path": str(link), "overwrite": True})
    assert link.is_symlink() and json.loads(real.read_bytes())["record_count"] == 3
