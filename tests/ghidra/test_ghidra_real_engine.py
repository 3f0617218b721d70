"""The real engine: runs when GHIDRA_INSTALL_DIR names a usable Ghidra 12, else skips with the reason.

(tests/conformance runs the native conformance suite on Ghidra under the same condition.) A configured but
unusable installation skips with its availability reason, except under CI=true, where it fails.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.ghidra import install

pytestmark = pytest.mark.skipif(not os.environ.get("GHIDRA_INSTALL_DIR"), reason="GHIDRA_INSTALL_DIR is not set")


@pytest.fixture
def ghidra_session(rea_registry: Registry, monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.delenv("REA_GHIDRA_TEST_WORKER", raising=False)
    _, availability = install.discover()
    if availability.status != "available":
        if os.environ.get("CI") == "true":
            pytest.fail(f"GHIDRA_INSTALL_DIR is set but Ghidra is unavailable: {availability.reason}")
        pytest.skip(f"GHIDRA_INSTALL_DIR is set but Ghidra is unavailable: {availability.reason}")
    return Session(rea_registry)


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


def test_cold_start_overview_decompile_and_clean_close(ghidra_session: Session, program: str, tmp_path: Path) -> None:
    target = tmp_path / "targets" / "program"
    target.parent.mkdir()
    shutil.copyfile(program, target)
    before = _tree(target.parent)
    session = ghidra_session
    try:
        result_of(session, "open_binary", {"path": str(target), "provider_id": "ghidra"})
        overview = result_of(session, "binary_overview")
        assert overview["format"] == "elf" and overview["architecture"] == "x86_64"
        assert overview["counts"]["procedures"] > 0
        code = result_of(session, "procedure_pseudo_code", {"procedure": "main"})
        assert code["decompiler"] == "ghidra" and "main" in code["text"]
        lineage = result_of(session, "binary_session")["analysis_run"]["process_lineage"]["snapshots"]
        worker = [s for s in lineage if s["resource"] == "ghidra-worker"]
        assert worker and worker[-1]["status"] == "verified"
        pid = worker[-1]["pid"]
        assert result_of(session, "close_binary")["cleanup"] == "complete"
        assert not Path(f"/proc/{pid}").exists()
    finally:
        session.close()
    # The temporary project lived in the worker's private directory, never beside the target.
    assert _tree(target.parent) == before


def test_a_too_short_startup_deadline_is_reported_by_the_first_query(
    ghidra_session: Session, program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_GHIDRA_STARTUP_TIMEOUT_MS", "1000")
    session = ghidra_session
    try:
        result_of(session, "open_binary", {"path": program, "provider_id": "ghidra"})
        with pytest.raises(ReaError) as err:
            result_of(session, "list_procedures")
        assert err.value.code == "provider_timeout" and "REA_GHIDRA_STARTUP_TIMEOUT_MS" in err.value.remediation
        assert result_of(session, "close_binary")["cleanup"] == "complete"
    finally:
        session.close()
