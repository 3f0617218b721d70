"""The radare2 provider without analysis: descriptor, availability, settings, profile, worker module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rea.cli.main import main as cli_main
from rea.config import load_settings
from rea.errors import ReaError
from rea.process import WorkerChannel
from rea.process import python_worker_spec
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.radare2 import options
from rea_plugins.radare2.provider import Radare2Provider
from tests.engine_lifecycle import check_worker_answers_ping_and_refuses_queries_before_a_load
from tests.engine_lifecycle import worker_pid
from tests.engine_operations import CONTRACT_OPERATIONS
from tests.radare2.conftest import require_radare2

SETTINGS = (
    "REA_RADARE2_ANALYSIS",
    "REA_RADARE2_LOAD_TIMEOUT_MS",
    "REA_RADARE2_ANALYSIS_TIMEOUT_MS",
    "REA_RADARE2_QUERY_TIMEOUT_MS",
    "REA_RADARE2_MEMORY_LIMIT_MB",
)


def test_importing_the_plugin_loads_no_radare2() -> None:
    code = (
        "import sys, rea_plugins.radare2, rea_plugins.radare2.provider, rea_plugins.radare2.client; "
        "from rea_plugins.radare2.provider import Radare2Provider; Radare2Provider().availability(); "
        "maps = open('/proc/self/maps').read(); "
        "print('libr_core' in maps, 'libr' in sys.modules, 'r2pipe' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "False", "False"]


def test_descriptor_declares_the_contract_and_a_distinct_priority(rea_registry: Registry) -> None:
    d = rea_registry.providers["radare2"].descriptor
    assert (d.id, d.kind) == ("radare2", "deep")
    assert set(d.formats) == {"elf", "pe", "mach-o", "mach-o-universal"}
    assert set(d.operations) == CONTRACT_OPERATIONS
    others = {p.descriptor.auto_priority for pid, p in rea_registry.providers.items() if pid != "radare2"}
    assert d.auto_priority not in others
    assert d.auto_priority < rea_registry.providers["native"].descriptor.auto_priority
    if "angr" in rea_registry.providers:
        assert d.auto_priority != rea_registry.providers["angr"].descriptor.auto_priority


def _hide_r2libr(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("libr", "r2pipe") else real(name, *a)
    )


def test_availability_follows_the_installed_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = Radare2Provider()
    installed = options.library_dir() is not None
    assert provider.availability().status == ("available" if installed else "unavailable")
    _hide_r2libr(monkeypatch)
    missing = provider.availability()
    assert (missing.status, missing.code) == ("unavailable", "runtime_missing")
    assert missing.remediation == "pip install 'rea-reverse[radare2]'"


def _providers_list(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli_main(["providers", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return {p["id"]: p for p in doc["providers"]}


def test_providers_list_shows_radare2_available_then_missing_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_radare2()
    row = _providers_list(capsys)["radare2"]
    assert row["availability"]["status"] == "available" and row["auto_priority"] == 4
    _hide_r2libr(monkeypatch)
    row = _providers_list(capsys)["radare2"]
    assert row["availability"] == {
        "status": "unavailable",
        "code": "runtime_missing",
        "reason": row["availability"]["reason"],
        "remediation": "pip install 'rea-reverse[radare2]'",
        "features": [],
    }
    assert cli_main(["providers", "list"]) == 0
    assert "pip install 'rea-reverse[radare2]'" in capsys.readouterr().out


def test_providers_list_in_an_environment_without_the_libraries(tmp_path: Path) -> None:
    # A ``libr`` package first on the path that carries none of radare2's libraries: what an install without
    # the extra (or a broken one) looks like to the provider.
    (tmp_path / "libr").mkdir()
    (tmp_path / "libr" / "__init__.py").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(root), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "rea", "providers", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    row = next(p for p in json.loads(proc.stdout)["providers"] if p["id"] == "radare2")
    assert row["availability"]["status"] == "unavailable"
    assert row["availability"]["remediation"] == "pip install 'rea-reverse[radare2]'"


def test_settings_are_declared_and_validated_at_startup(rea_registry: Registry) -> None:
    assert set(SETTINGS) <= set(rea_registry.settings)
    load_settings({"REA_RADARE2_ANALYSIS": "aa"}, declared=rea_registry.settings)
    for name, bad in (
        ("REA_RADARE2_ANALYSIS", "aaaa"),
        ("REA_RADARE2_ANALYSIS", "AA"),
        ("REA_RADARE2_QUERY_TIMEOUT_MS", "0"),
        ("REA_RADARE2_MEMORY_LIMIT_MB", "255"),
        ("REA_RADARE2_LOAD_TIMEOUT_MS", "1.5"),
    ):
        with pytest.raises(ReaError) as info:
            load_settings({name: bad}, declared=rea_registry.settings)
        assert info.value.code == "configuration_invalid"
        assert info.value.details["settings"][0]["setting"] == name


def test_limits_from_environment() -> None:
    limits = options.limits_from_env({"REA_RADARE2_ANALYSIS": "aa", "REA_RADARE2_QUERY_TIMEOUT_MS": "2500"})
    assert (limits.analysis, limits.query_ms, limits.load_ms) == ("aa", 2500, options.Limits().load_ms)
    assert options.limits_from_env({}).analysis == "aaa"


def test_analysis_depth_is_part_of_the_profile(
    rea_registry: Registry, native_fixtures: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_radare2()
    path = native_fixtures.get("elf-x64").path
    profiles = {}
    for level in ("aa", "aaa"):
        monkeypatch.setenv("REA_RADARE2_ANALYSIS", level)
        session = Session(rea_registry)
        try:
            out = call_tool(session, "open_binary", {"path": path, "provider_id": "radare2"})
            assert out.structured is not None
            binding = out.structured["analysis_provider_binding"]
            params = binding["analysis_profile"]["parameters"]
            assert params["analysis"] == level and params["radare2_version"] == binding["provider"]["version"]
            assert params["pseudo_code"]["command"] == "pdc"
            profiles[level] = binding["analysis_profile"]
            # open binds the provider but starts no worker: the first query does.
            assert worker_pid(session) is None
        finally:
            assert session.close() == []
    assert profiles["aa"] != profiles["aaa"]


def test_invalid_setting_fails_the_open(
    rea_registry: Registry, native_fixtures: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_RADARE2_ANALYSIS", "deep")
    session = Session(rea_registry)
    with pytest.raises(ReaError) as info:
        call_tool(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "radare2"})
    assert info.value.code == "configuration_invalid"
    assert info.value.details["settings"][0]["setting"] == "REA_RADARE2_ANALYSIS"
    assert session.target is None


def test_auto_keeps_native_the_default(rea_registry: Registry, native_fixtures: Any) -> None:
    require_radare2()
    session = Session(rea_registry)
    try:
        out = call_tool(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "auto"})
        assert out.structured is not None
        assert out.structured["analysis_provider_binding"]["provider"]["id"] == "native"
        candidates = call_tool(session, "binary_session", {}).structured
        assert candidates is not None
        row = next(c for c in candidates["analysis_provider_candidates"] if c["provider_id"] == "radare2")
        assert row["availability"]["status"] == "available" and row["auto_priority"] == 4
        assert row["selected"] is False
    finally:
        session.close()


def test_worker_module_answers_ping_and_refuses_queries_before_a_load() -> None:
    require_radare2()
    libdir = options.library_dir()
    assert libdir is not None
    check_worker_answers_ping_and_refuses_queries_before_a_load(
        WorkerChannel(
            python_worker_spec(
                "rea_plugins.radare2.worker", resource="radare2-worker", owner="radare2", args=("--libr", libdir)
            ),
            label="radare2",
        )
    )
