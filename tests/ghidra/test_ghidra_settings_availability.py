"""Ghidra's settings (validated at startup, engine installed or not) and its availability checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rea.config import load_settings
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.ghidra import install
from rea_plugins.ghidra.client import worker_spec
from rea_plugins.ghidra.settings import STARTUP
from rea_plugins.ghidra.settings import limits_from_env
from tests.mcp.harness import server_env

INVALID = ["", "0", "1.5", "1e6", "+1", " 1800000 ", "01", "Infinity", "2147483648", "-5"]


@pytest.mark.parametrize("raw", INVALID)
def test_invalid_startup_deadline_is_configuration_invalid(rea_registry: Registry, raw: str) -> None:
    with pytest.raises(ReaError) as err:
        load_settings({"REA_GHIDRA_STARTUP_TIMEOUT_MS": raw}, declared=rea_registry.settings)
    assert err.value.code == "configuration_invalid"
    assert err.value.details["settings"][0]["setting"] == "REA_GHIDRA_STARTUP_TIMEOUT_MS"


def test_startup_deadline_default_and_bounds(rea_registry: Registry) -> None:
    assert STARTUP.read({}) == 330_000
    for raw, value in (("1", 1), ("2147483647", 2_147_483_647), ("1800000", 1_800_000)):
        load_settings({"REA_GHIDRA_STARTUP_TIMEOUT_MS": raw}, declared=rea_registry.settings)
        assert limits_from_env({"REA_GHIDRA_STARTUP_TIMEOUT_MS": raw}).startup_ms == value
    assert limits_from_env({}).decompile_ms == 30_000
    with pytest.raises(ReaError):
        load_settings({"REA_GHIDRA_TEST_WORKER": "relative/fake"}, declared=rea_registry.settings)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea.cli.main", *args],
        capture_output=True,
        text=True,
        env=server_env(**env),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_serve_and_doctor_refuse_an_invalid_deadline_without_ghidra() -> None:
    served = _cli("serve", REA_GHIDRA_STARTUP_TIMEOUT_MS="1e6")
    assert served.returncode == 1
    assert "configuration_invalid" in served.stderr and "REA_GHIDRA_STARTUP_TIMEOUT_MS" in served.stderr
    assert "Traceback" not in served.stderr
    doctor = _cli("doctor", "--json", REA_GHIDRA_STARTUP_TIMEOUT_MS=" 1800000 ")
    assert doctor.returncode == 1
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "settings")
    assert check["status"] == "fail" and "REA_GHIDRA_STARTUP_TIMEOUT_MS" in check["summary"]


# -- availability ------------------------------------------------------------------------------


def ghidra_dir(root: Path, version: str = "12.1.3", java_min: int = 21) -> Path:
    props = root / "Ghidra" / "application.properties"
    props.parent.mkdir(parents=True)
    props.write_text(f"application.name=Ghidra\napplication.version={version}\napplication.java.min={java_min}\n")
    return root


def jdk(root: Path, version: str) -> Path:
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return root


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No JDK in the usual places and pyghidra present, unless a test says otherwise."""
    monkeypatch.setattr(install, "JDK_GLOBS", (str(tmp_path / "jvm" / "*"),))
    monkeypatch.setattr(install, "pyghidra_version", lambda: "3.2.0")
    return tmp_path


def check(env: dict[str, str]) -> tuple[str | None, str]:
    _, availability = install.discover(env)
    return availability.code, availability.reason


def test_not_configured(host: Path) -> None:
    assert check({}) == ("not_configured", "GHIDRA_INSTALL_DIR is not set")
    assert check({"GHIDRA_INSTALL_DIR": "ghidra"})[0] == "not_configured"
    code, reason = check({"GHIDRA_INSTALL_DIR": str(host / "empty")})
    assert code == "not_configured" and "not a Ghidra installation" in reason


def test_wrong_ghidra_version(host: Path) -> None:
    code, reason = check(
        {"GHIDRA_INSTALL_DIR": str(ghidra_dir(host / "g", "11.4.2")), "JAVA_HOME": str(jdk(host / "j", "21.0.5"))}
    )
    assert code == "unsupported_version" and "11.4.2" in reason and "12" in reason


def test_jdk_missing_or_too_old(host: Path) -> None:
    g = str(ghidra_dir(host / "g"))
    assert check({"GHIDRA_INSTALL_DIR": g})[0] == "runtime_missing"
    code, reason = check({"GHIDRA_INSTALL_DIR": g, "JAVA_HOME": str(jdk(host / "j17", "17.0.15"))})
    assert code == "unsupported_version" and "17.0.15" in reason and "21" in reason
    assert check({"GHIDRA_INSTALL_DIR": g, "JAVA_HOME": str(host / "nope")})[0] == "runtime_missing"
    jdk(host / "jvm" / "java-17", "17.0.15")
    code, reason = check({"GHIDRA_INSTALL_DIR": g})
    assert code == "unsupported_version" and "17.0.15" in reason
    # Ghidra's own minimum decides: 12.2 needs JDK 25.
    g25 = str(ghidra_dir(host / "g25", "12.2", 25))
    jdk(host / "jvm" / "temurin-21", "21.0.5")
    assert check({"GHIDRA_INSTALL_DIR": g25})[0] == "unsupported_version"


def test_pyghidra_missing(host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "pyghidra_version", lambda: None)
    _, availability = install.discover(
        {"GHIDRA_INSTALL_DIR": str(ghidra_dir(host / "g")), "JAVA_HOME": str(jdk(host / "j", "21.0.5"))}
    )
    assert availability.code == "runtime_missing"
    assert availability.remediation is not None and "rea-reverse[ghidra]" in availability.remediation
    monkeypatch.setattr(install, "pyghidra_version", lambda: "2.2.1")
    _, old = install.discover({"GHIDRA_INSTALL_DIR": str(host / "g"), "JAVA_HOME": str(host / "j")})
    assert old.code == "unsupported_version" and "2.2.1" in old.reason


def test_available_installation_runs_the_pyghidra_worker_with_its_jdk(host: Path) -> None:
    jdk(host / "jvm" / "temurin-21", "21.0.5")
    newest = jdk(host / "jvm" / "temurin-25", "25.0.1")
    found, availability = install.discover({"GHIDRA_INSTALL_DIR": str(ghidra_dir(host / "g"))})
    assert availability.status == "available" and found is not None
    assert found.jdk.home == str(newest.resolve()) and found.version == "12.1.3"
    spec = worker_spec(found, None)
    assert spec.argv[1:] == ("-m", "rea_plugins.ghidra.worker")
    assert spec.env["JAVA_HOME"] == spec.env["JAVA_HOME_OVERRIDE"] == str(newest.resolve())
    assert spec.env["GHIDRA_INSTALL_DIR"] == str(host / "g")
    # No address-space cap: a JVM reserves far more address space than it uses.
    assert spec.address_space_bytes == 0 and spec.resource == "ghidra-worker"


def test_unavailability_is_reported_by_providers_list_and_binary_session(
    host: Path, rea_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = ghidra_dir(host / "g", "11.4.2")
    listed = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "providers", "list", "--json"],
        capture_output=True,
        text=True,
        env=server_env(GHIDRA_INSTALL_DIR=str(old)),
        timeout=120,
    )
    ghidra = next(p for p in json.loads(listed.stdout)["providers"] if p["id"] == "ghidra")
    assert ghidra["availability"]["code"] == "unsupported_version"
    assert "GHIDRA_INSTALL_DIR" in ghidra["availability"]["remediation"]
    monkeypatch.delenv("REA_GHIDRA_TEST_WORKER", raising=False)
    monkeypatch.delenv("GHIDRA_INSTALL_DIR", raising=False)
    session = Session(rea_registry)
    try:
        candidates = result_of(session, "binary_session")["analysis_provider_candidates"]
    finally:
        session.close()
    entry = next(c for c in candidates if c["provider_id"] == "ghidra")
    assert entry["availability"]["code"] == "not_configured"
    assert entry["availability"]["reason"] == "GHIDRA_INSTALL_DIR is not set"
