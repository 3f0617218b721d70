"""A target rewritten after open_binary is never served under the SHA-256 it was opened with (issue 42 item 3).

Every reader of an open target's file either works on the bytes that were hashed or detects the change (size,
inode, times; a re-hash when only those moved) and answers ``artifact_changed`` with the remediation to reopen.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.engine_lifecycle import op
from tests.engine_lifecycle import owned_alive
from tests.engine_lifecycle import worker_pid
from tests.radare2.conftest import require_radare2


@pytest.fixture
def elf(native_fixtures: Any, tmp_path: Path) -> Path:
    """A private copy of the symbolized x86-64 ELF fixture, free to rewrite."""
    path = tmp_path / "target.elf"
    shutil.copyfile(native_fixtures.get("elf-x64").path, path)
    return path


def _main(session: Session) -> str:
    return str(result_of(session, "procedure_address", {"procedure": "main"})["address"])


def _changed(session: Session, tool: str, args: dict[str, Any]) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, tool, args)
    err = info.value
    assert err.code == "artifact_changed", err
    assert "open_binary" in err.remediation
    return err


def _flip(path: Path, offset: int) -> None:
    """Overwrite one byte in place: same size, same inode, new bytes."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        old = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([old[0] ^ 0xFF]))


def test_overwritten_target_is_not_read_under_its_old_hash(rea_session: Session, elf: Path) -> None:
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "native"})
    main = _main(rea_session)
    before = result_of(rea_session, "read_bytes", {"address": main, "length": 16})
    _flip(elf, int(before["file_offset"]))
    err = _changed(rea_session, "read_bytes", {"address": main, "length": 16})
    assert err.details["reason"] == "its bytes changed (a different SHA-256)"
    # The search tools read the whole file the same way.
    _changed(rea_session, "search_bytes", {"pattern": before["hex"][:8]})


def test_replaced_or_cut_target_is_refused_and_a_touch_is_not(rea_session: Session, elf: Path) -> None:
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "native"})
    main = _main(rea_session)
    first = result_of(rea_session, "read_bytes", {"address": main, "length": 16})
    # Same bytes, new times: a re-hash proves them, and the read answers as before.
    os.utime(elf, ns=(1, 1))
    assert result_of(rea_session, "read_bytes", {"address": main, "length": 16})["hex"] == first["hex"]
    # Another file renamed over it (a new inode, the same size, other bytes).
    data = bytearray(elf.read_bytes())
    data[int(first["file_offset"])] ^= 0xFF
    fresh = elf.with_suffix(".new")
    fresh.write_bytes(bytes(data))
    os.replace(fresh, elf)
    _changed(rea_session, "read_bytes", {"address": main, "length": 16})
    os.truncate(elf, 100)
    err = _changed(rea_session, "read_bytes", {"address": main, "length": 16})
    assert err.details["size"] == 100


def test_truncated_target_under_radare2_is_a_typed_error_and_reopen_works(rea_session: Session, elf: Path) -> None:
    require_radare2()
    original = elf.read_bytes()
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "radare2"})
    assert op(rea_session, "list_segments")  # the worker runs with the target loaded
    pid = worker_pid(rea_session)
    assert pid is not None
    os.truncate(elf, 4096)
    with pytest.raises(ReaError) as info:
        op(rea_session, "list_strings")
    assert info.value.code == "artifact_changed"
    # The worker was not killed by radare2 touching pages the file no longer has (SIGBUS).
    assert worker_pid(rea_session) == pid and owned_alive(pid)
    elf.write_bytes(original)
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "radare2"})
    assert op(rea_session, "list_segments")


def test_radare2_reads_the_hashed_bytes_even_when_cut_under_it(rea_session: Session, elf: Path) -> None:
    """The worker reads its own copy: a truncation that slips past the client's check cannot reach radare2."""
    require_radare2()
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "radare2"})
    segments = op(rea_session, "list_segments")
    client: Any = rea_session._client
    pid = worker_pid(rea_session)
    os.truncate(elf, 4096)
    # Straight to the worker, past the check a request makes first.
    reply = client.request("list_strings", {}, CallContext(), 60_000, "list_strings")
    assert reply.result() is not None and worker_pid(rea_session) == pid
    assert segments


def test_rewritten_target_never_starts_an_angr_worker(rea_session: Session, elf: Path) -> None:
    pytest.importorskip("angr")
    call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "angr"})
    _flip(elf, 0x40)
    with pytest.raises(ReaError) as info:
        op(rea_session, "list_segments")
    assert info.value.code == "artifact_changed"
    assert worker_pid(rea_session) is None


def test_a_target_rewritten_between_hashing_and_loading_is_refused(
    rea_session: Session, elf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """native reads the file again after identify hashed it: a write in between is caught, not loaded."""
    import rea.session

    identify = rea.session.identify

    def then_rewritten(path: str, *args: Any, **kw: Any) -> Any:
        target = identify(path, *args, **kw)
        _flip(elf, 0x200)
        return target

    monkeypatch.setattr(rea.session, "identify", then_rewritten)
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "open_binary", {"path": str(elf), "provider_id": "native"})
    assert info.value.code == "artifact_changed"
