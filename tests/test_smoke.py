"""The smoke run (tox's py311 env, and part of the full suite on 3.13): rea installs, lists its providers, answers
a native query, and on an interpreter older than 3.13 says its decompiler is unavailable with this project's own
install command, not a registry package name that belongs to someone else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of

DECOMPILER = sys.version_info >= (3, 13)


def _rea(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rea", *args], capture_output=True, text=True, timeout=300)


def test_the_installed_cli_lists_the_embedded_default_provider() -> None:
    done = _rea("providers", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    native = [p for p in report["providers"] if p["id"] == "native"]
    assert native and native[0]["availability"]["status"] == "available", report["providers"]


def test_a_native_query_answers(rea_session: Session, hello_elf: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(hello_elf), "provider_id": "native"})
    info = result_of(rea_session, "procedure_info", {"procedure": "compute"})
    assert info["name"] == "compute" and info["instruction_count"] > 0, info


@pytest.mark.skipif(DECOMPILER, reason="this interpreter has the decompiler (the native decompiler tests cover it)")
def test_without_the_decompiler_pseudo_code_is_a_typed_unavailability(rea_session: Session, hello_elf: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(hello_elf), "provider_id": "native"})
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "procedure_pseudo_code", {"procedure": "compute"})
    err = info.value
    assert err.code in ("provider_unavailable", "capability_unavailable"), err
    text = f"{err.message} {err.remediation}"
    assert "3.13" in text and "scripts/install" in text, text
    assert "pip install rea" not in text and "pip install 'rea" not in text, text


def test_the_doctor_reports_the_decompiler() -> None:
    done = _rea("doctor", "--json")
    report = json.loads(done.stdout)
    checks = {c["id"]: c for c in report["checks"]}
    decompiler = checks.get("provider:native:decompiler")
    assert decompiler is not None, sorted(checks)
    assert (decompiler["status"] == "pass") is DECOMPILER, decompiler
    if not DECOMPILER:
        assert "scripts/install" in (decompiler["remediation"] or ""), decompiler
