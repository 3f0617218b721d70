"""Hopper's availability (macOS only, its launcher) and settings (validated at startup on every host)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rea.config import load_settings
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.hopper.provider import DEFAULT_LAUNCHER
from rea_plugins.hopper.provider import HopperProvider
from rea_plugins.hopper.settings import STARTUP
from rea_plugins.hopper.settings import limits_from_env
from tests.mcp.harness import server_env

INVALID = ["", "0", "1.5", "1e6", "+1", " 1800000 ", "01", "Infinity", "2147483648"]


@pytest.mark.parametrize("raw", INVALID)
def test_invalid_startup_deadline_is_configuration_invalid(rea_registry: Registry, raw: str) -> None:
    with pytest.raises(ReaError) as err:
        load_settings({"REA_HOPPER_STARTUP_TIMEOUT_MS": raw}, declared=rea_registry.settings)
    assert err.value.code == "configuration_invalid"
    assert err.value.details["settings"][0]["setting"] == "REA_HOPPER_STARTUP_TIMEOUT_MS"


def test_defaults_and_other_settings(rea_registry: Registry) -> None:
    assert STARTUP.read({}) == 120_000 and limits_from_env({}).request_ms == 30_000
    assert limits_from_env({"REA_HOPPER_STARTUP_TIMEOUT_MS": "2147483647"}).startup_ms == 2_147_483_647
    for env in ({"HOPPER_LAUNCHER_PATH": "hopper"}, {"REA_HOPPER_TEST_ANY_HOST": "yes"}):
        with pytest.raises(ReaError):
            load_settings(env, declared=rea_registry.settings)


def test_serve_refuses_an_invalid_deadline_on_any_host() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "serve"],
        capture_output=True,
        text=True,
        env=server_env(REA_HOPPER_STARTUP_TIMEOUT_MS="Infinity"),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 1
    assert "configuration_invalid" in out.stderr and "REA_HOPPER_STARTUP_TIMEOUT_MS" in out.stderr


@pytest.mark.skipif(sys.platform == "darwin", reason="the host check is about non-macOS hosts")
def test_unsupported_host(monkeypatch: pytest.MonkeyPatch, rea_registry: Registry) -> None:
    monkeypatch.delenv("REA_HOPPER_TEST_ANY_HOST", raising=False)
    availability = HopperProvider().availability()
    assert availability.code == "unsupported_host"
    assert "macOS" in availability.reason and sys.platform in availability.reason
    assert availability.remediation is not None and "native" in availability.remediation
    session = Session(rea_registry)
    try:
        candidates = result_of(session, "binary_session")["analysis_provider_candidates"]
        entry = next(c for c in candidates if c["provider_id"] == "hopper")
        assert entry["availability"]["code"] == "unsupported_host"
    finally:
        session.close()


def test_launcher_decides_availability(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REA_HOPPER_TEST_ANY_HOST", "1")
    monkeypatch.delenv("HOPPER_LAUNCHER_PATH", raising=False)
    missing = HopperProvider().availability()
    assert missing.code == "executable_missing" and DEFAULT_LAUNCHER in missing.reason
    launcher = tmp_path / "hopper"
    launcher.write_text("#!/bin/sh\n")
    monkeypatch.setenv("HOPPER_LAUNCHER_PATH", str(launcher))
    assert HopperProvider().availability().code == "executable_missing"  # not executable
    launcher.chmod(0o755)
    assert HopperProvider().availability().status == "available"
