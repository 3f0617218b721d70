"""The doctor report: host checks, provider readiness, plugin health, exit status and both renderings."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

import rea
from rea import doctor
from rea import hookimpl
from rea import registry as registry_mod
from rea.errors import ReaError
from rea.registry import BrokenPlugin
from rea.registry import Registry

ROOT = Path(__file__).resolve().parents[2]


def _report(registry: Registry, tmp_path: Path, environ: dict[str, str] | None = None) -> dict[str, Any]:
    return doctor.doctor_report(
        registry, home=str(tmp_path), project_dir=str(tmp_path), environ={} if environ is None else environ
    )


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in report["checks"] if c["id"] == check_id]
    assert len(found) == 1, [c["id"] for c in report["checks"]]
    return found[0]


def test_report_matches_the_documented_shape(registry: Registry, tmp_path: Path) -> None:
    report = _report(registry, tmp_path)
    # Decoding into the Structs proves every documented field is present with its type, and no others.
    typed = msgspec.convert(report, doctor.DoctorReport)
    assert msgspec.to_builtins(typed) == report
    assert json.loads(json.dumps(report)) == report
    assert report["schema_version"] == 1
    assert report["live_server"] == "unknown"
    assert report["clients"]["expected"] == {"command": sys.executable, "args": ["-m", "rea", "serve"]}
    assert report["clients"]["accepted"][0] == report["clients"]["expected"]


def test_host_facts(registry: Registry, tmp_path: Path) -> None:
    host = _report(registry, tmp_path)["host"]
    assert host["python_version"] == platform.python_version()
    assert host["python_executable"] == sys.executable
    assert host["rea_version"] == rea.__version__
    assert host["system"] == platform.system()
    assert os.path.samefile(host["rea_package_path"], os.path.dirname(rea.__file__))


def test_host_checks_pass_here(registry: Registry, tmp_path: Path) -> None:
    report = _report(registry, tmp_path)
    for check_id in ("python", "temp-dir", "settings", "env:REA_ANALYSIS_PROVIDER"):
        check = _check(report, check_id)
        assert check["status"] == "pass", check
        assert check["required"] is True


def test_unwritable_temp_dir_fails(registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "does-not-exist"))
    report = _report(registry, tmp_path)
    assert _check(report, "temp-dir")["status"] == "fail"
    assert "temp-dir" in report["failures"]
    assert doctor.exit_status(report) == 1


def test_providers_report_their_availability(registry: Registry, tmp_path: Path) -> None:
    report = _report(registry, tmp_path)
    ids = [p["id"] for p in report["providers"]]
    assert ids == sorted(registry.providers)
    for p in report["providers"]:
        expected = registry.providers[p["id"]].availability()
        assert (p["status"], p["code"], p["reason"]) == (expected.status, expected.code, expected.reason)
        assert p["plugin"] == registry.owner[("provider", p["id"])]
        assert p["required"] is (p["id"] == "native")
        check = _check(report, f"provider:{p['id']}")
        assert check["status"] == ("pass" if p["status"] == "available" else "fail" if p["required"] else "warn")


def test_embedded_provider_ready_means_exit_zero(registry: Registry, tmp_path: Path) -> None:
    if "native" not in registry.providers:
        pytest.skip("the native provider is not registered in this checkout")
    report = _report(registry, tmp_path)
    native = next(p for p in report["providers"] if p["id"] == "native")
    assert native["status"] == "available", native
    assert report["ok"] is True and report["failures"] == [] and report["exit_status"] == 0
    assert doctor.exit_status(report) == 0


def test_disabled_embedded_provider_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_DISABLE_PLUGINS", "native")
    reg = registry_mod.load()
    report = _report(reg, tmp_path, {"REA_DISABLE_PLUGINS": "native"})
    check = _check(report, "provider:native")
    assert check["status"] == "fail" and check["required"] is True
    assert "REA_DISABLE_PLUGINS" in check["remediation"]
    assert _check(report, "plugin-filter")["status"] == "warn"
    assert report["failures"] == ["provider:native"]
    assert report["ok"] is False and doctor.exit_status(report) == 1


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("auto", "pass"),
        ("Auto", "fail"),
        ("", "fail"),
        ("x ", "fail"),
        ("no-such-provider", "fail"),
    ],
)
def test_analysis_provider_variable(registry: Registry, tmp_path: Path, value: str, status: str) -> None:
    report = _report(registry, tmp_path, {"REA_ANALYSIS_PROVIDER": value})
    check = _check(report, "env:REA_ANALYSIS_PROVIDER")
    assert check["status"] == status, check
    assert ("env:REA_ANALYSIS_PROVIDER" in report["failures"]) is (status == "fail")
    if status == "fail":
        assert check["remediation"]


def test_analysis_provider_variable_naming_a_registered_provider(registry: Registry, tmp_path: Path) -> None:
    if not registry.providers:
        pytest.skip("no provider is registered in this checkout")
    pid = sorted(registry.providers)[0]
    available = registry.providers[pid].availability().status == "available"
    check = _check(_report(registry, tmp_path, {"REA_ANALYSIS_PROVIDER": pid}), "env:REA_ANALYSIS_PROVIDER")
    assert check["status"] == ("pass" if available else "fail")


def test_invalid_server_setting_fails(registry: Registry, tmp_path: Path) -> None:
    report = _report(registry, tmp_path, {"REA_MCP_MAX_RESPONSE_BYTES": "12abc"})
    check = _check(report, "settings")
    assert check["status"] == "fail"
    assert "REA_MCP_MAX_RESPONSE_BYTES" in check["summary"]


class _HookRaises:
    """A third-party plugin whose registration hook raises."""

    @hookimpl
    def rea_register_analysis_providers(self, register: Any) -> None:
        raise ValueError("third-party hook fails on purpose")


def test_broken_third_party_plugin_warns_only(tmp_path: Path) -> None:
    reg = registry_mod.load(extra=[("raiser", _HookRaises())])
    report = _report(reg, tmp_path)
    broken = [b for b in report["plugins"]["broken"] if b["name"] == "raiser"]
    assert broken == [
        {
            "name": "raiser",
            "distribution": None,
            "stage": "rea_register_analysis_providers",
            "error": broken[0]["error"],
            "first_party": False,
        }
    ]
    assert "ValueError: third-party hook fails on purpose" in broken[0]["error"]
    check = _check(report, "plugin:raiser")
    assert check["status"] == "warn" and check["required"] is False
    assert "plugin:raiser" not in report["failures"]
    # Every first-party plugin still loaded.
    ours = [p for p in report["plugins"]["loaded"] if p["distribution"] == "rea-reverse"]
    assert ours and all(p["first_party"] for p in ours)


def test_broken_first_party_plugin_fails(tmp_path: Path) -> None:
    reg = registry_mod.load()
    # A first-party plugin is one shipped by the rea distribution; record one failing as the registry would.
    reg.broken.append(
        BrokenPlugin(
            name="native", distribution="rea-reverse", stage="import", error="ImportError: cannot import name 'lief'"
        )
    )
    report = _report(reg, tmp_path)
    check = _check(report, "plugin:native")
    assert check["status"] == "fail" and check["required"] is True
    assert "plugin:native" in report["failures"]
    assert doctor.exit_status(report) == 1


def test_registry_errors_are_reported(tmp_path: Path) -> None:
    reg = registry_mod.load()
    reg.errors.append(
        ReaError(
            "configuration_invalid",
            "duplicate provider id 'toy': registered by plugin a and by plugin b",
            details={"kind": "provider", "id": "toy", "plugins": ["a", "b"]},
        )
    )
    report = _report(reg, tmp_path)
    assert report["plugins"]["errors"][0]["code"] == "configuration_invalid"
    assert _check(report, "registry")["status"] == "warn"


def test_client_states_never_change_the_exit_status(registry: Registry, tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").write_text("{broken")
    report = _report(registry, tmp_path)
    assert report["clients"]["registrations"][4]["state"] == "invalid"
    assert not [f for f in report["failures"] if not f.startswith(("provider:", "plugin:"))]


def test_format_doctor_renders_every_section(registry: Registry, tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"rea": {"command": sys.executable, "args": ["-m", "rea", "serve"]}}})
    )
    reg = registry_mod.load(extra=[("raiser", _HookRaises())])
    report = _report(reg, tmp_path, {"REA_ANALYSIS_PROVIDER": "Auto"})
    text = doctor.format_doctor(report)
    lines = text.splitlines()
    assert lines[0].startswith("rea doctor: FAIL") and "env:REA_ANALYSIS_PROVIDER" in lines[0]
    for heading in ("Host", "Checks", "Providers", "Plugins"):
        assert heading in lines
    assert any(line.startswith("MCP clients (expected: ") and "live server: unknown" in line for line in lines)
    assert any("cursor" in line and "aligned" in line for line in lines)
    assert any(line.strip().startswith("BROKEN raiser") for line in lines)
    for pid in registry.providers:
        assert any(line.strip().startswith(pid + " ") for line in lines)
    assert not text.endswith("\n")


def _cli_doctor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["HOME"] = str(tmp_path)
    env.pop("CODEX_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "rea", "doctor", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_cli_json_is_the_report_and_exit_status_follows_it(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        f'[mcp_servers.rea]\ncommand = {json.dumps(sys.executable)}\nargs = ["-m", "rea", "serve"]\n'
    )
    proc = _cli_doctor(tmp_path, "--json")
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    msgspec.convert(report, doctor.DoctorReport)
    assert proc.returncode == report["exit_status"] == doctor.exit_status(report)
    codex = next(r for r in report["clients"]["registrations"] if r["client"] == "codex")
    assert (codex["client"], codex["state"]) == ("codex", "aligned")
    assert codex["path"] == str(tmp_path / ".codex" / "config.toml")


def test_cli_human_output(tmp_path: Path) -> None:
    proc = _cli_doctor(tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("rea doctor: ")
    assert "MCP clients" in proc.stdout
    assert proc.returncode in (0, 1)
