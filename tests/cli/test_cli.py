"""The CLI: providers list, catalog, tool commands, canonical errors, exit codes and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.errors import CODES
from tests.mcp.harness import connect
from tests.mcp.harness import server_env
from tests.waiting import wait_for

PROBE = {"REA_PLUGIN_MODULES": "tests.mcp.probe_plugin"}


def rea(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args],
        capture_output=True,
        text=True,
        env=server_env(**(env or {})),
        timeout=timeout,
    )


def test_providers_list_json_is_stable_and_complete() -> None:
    proc = rea("providers", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {
        "plugins",
        "broken_plugins",
        "registry_errors",
        "providers",
        "unpackers",
        "scenario_drivers",
        "projections",
        "tool_count",
    }
    assert doc["broken_plugins"] == [] and doc["registry_errors"] == []
    for plugin in doc["plugins"]:
        assert set(plugin) == {"name", "distribution", "version", "module", "hooks"}
    assert doc["projections"] == ["compact", "full"]
    ids = [p["id"] for p in doc["providers"]]
    assert ids == sorted(ids)
    for provider in doc["providers"]:
        assert set(provider["availability"]) == {"status", "code", "reason", "remediation", "features"}
        assert isinstance(provider["auto_priority"], int)


def test_human_output_is_a_table() -> None:
    proc = rea("providers", "list")
    assert proc.returncode == 0
    assert proc.stdout.startswith("Plugins\nname") and "Providers" in proc.stdout


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_error_code_has_one_shape_at_cli_and_mcp(code: str) -> None:
    proc = rea("probe-fail", "--code", code, "--format", "json", env=PROBE)
    assert proc.returncode == 1
    cli = json.loads(proc.stdout)["error"]
    assert cli["code"] == code
    assert set(cli) == {"code", "category", "message", "retryable", "remediation", "details"}
    assert cli["category"] == CODES[code][0] and cli["retryable"] is CODES[code][1]
    assert isinstance(cli["remediation"]["action"], str) and cli["remediation"]["action"]
    assert "Traceback" not in proc.stderr


def test_human_errors_go_to_stderr() -> None:
    human = rea("probe-fail", "--code", "truncated", env=PROBE)
    assert human.returncode == 1 and "[truncated]" in human.stderr and "remediation:" in human.stderr
    assert human.stdout == ""


def test_mcp_error_shape_matches_cli() -> None:
    async def main() -> dict[str, Any]:
        async with connect(**PROBE) as client:
            res = await client.call_tool("probe_fail", {"code": "provider_timeout"})
            assert res.is_error and res.structured_content is None
            left = await client.call_tool("probe_fail", {"code": "execution_failure", "cleanup_left": True})
            wrapped = json.loads(left.content[0].text)["error"]
            assert wrapped["code"] == "cleanup_incomplete"
            assert wrapped["details"]["execution_failure"]["code"] == "execution_failure"
            assert wrapped["details"]["resources"] == ["probe-worker"]
            out: dict[str, Any] = json.loads(res.content[0].text)["error"]
            return out

    mcp_err = anyio.run(main)
    cli_err = json.loads(rea("probe-fail", "--code", "provider_timeout", "--format", "json", env=PROBE).stdout)["error"]
    assert mcp_err == cli_err


def _marked_or_exited(proc: subprocess.Popen[str], marker: Path) -> Callable[[], bool]:
    """A wait_for probe: the program wrote ``marker`` (it reached the point a test signals it at) or it ended."""
    return lambda: marker.exists() or proc.poll() is not None


def test_sigint_cancels_and_exits_128_plus_n(tmp_path: Path) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        started = tmp_path / f"started-{signum}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "rea", "probe-wait", "--steps", "3000", "--step-ms", "10"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=server_env(**PROBE, REA_TEST_PROBE_STARTED=str(started)),
        )
        # Signalled once the call runs (a loaded machine can take seconds to start the interpreter and rea).
        wait_for(_marked_or_exited(proc, started), "the probe call started", timeout_s=120)
        proc.send_signal(signum)
        proc.send_signal(signum)  # repeated delivery, as package runners do
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + signum, err
        assert "cancelled by signal" in err and out == ""


CLOSE_PROBE = {"REA_PLUGIN_MODULES": "tests.cli.close_probe"}


def test_signals_during_provider_cleanup_do_not_cut_it_short(hello_elf: Path, tmp_path: Path) -> None:
    """The guard lasts through cleanup, repeated delivery included; --json gets the canonical error."""
    env = server_env(**CLOSE_PROBE, REA_TEST_CLOSE_MARKERS=str(tmp_path), REA_TEST_CLOSE_SECONDS="2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea", "list-documents", str(hello_elf), "--provider", "close-probe", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    wait_for(_marked_or_exited(proc, tmp_path / "closing"), "provider cleanup began", timeout_s=120)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert (tmp_path / "closed").exists(), "the signal cut provider cleanup short"
    assert proc.returncode == 128 + signal.SIGTERM, err
    error = json.loads(out)["error"]
    assert error["code"] == "cancelled" and error["details"]["signal"] == "SIGTERM"


def test_a_completed_call_still_reports_owned_resources_left_behind(hello_elf: Path) -> None:
    proc = rea(
        "list-documents",
        str(hello_elf),
        "--provider",
        "close-probe",
        "--json",
        env={**CLOSE_PROBE, "REA_TEST_CLOSE_LEAVES": "probe-worker"},
    )
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "cleanup_incomplete" and error["details"]["resources"] == ["probe-worker"]
    assert error["details"]["execution_failure"]["details"]["completed_evidence_id"].startswith("ev_")


def test_bad_arguments_and_targets_are_typed(tmp_path: Path) -> None:
    proc = rea("probe-wait", '{"steps": "many"}', "--format", "json", env=PROBE)
    err = json.loads(proc.stdout)["error"]
    assert proc.returncode == 1 and err["code"] == "invalid_request"
    assert err["details"]["issues"][0]["path"] == "steps"
    proc = rea("probe-wait", "{not json", "--format", "json", env=PROBE)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "invalid_request"
    proc = rea("open-binary", str(tmp_path / "absent"), "--format", "json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "target_unavailable"
    unreadable = tmp_path / "secret.bin"
    unreadable.write_bytes(b"\x7fELF" + b"\0" * 60)
    unreadable.chmod(0)
    if os.geteuid() != 0:
        proc = rea("open-binary", str(unreadable), "--format", "json")
        assert json.loads(proc.stdout)["error"]["code"] == "access_denied"
    proc = rea("no-such-command", "--format", "json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "invalid_request"


def test_catalog_matches_live_tools_list(tmp_path: Path) -> None:
    out = tmp_path / "docs" / "public" / "product-catalog.json"
    proc = rea("catalog", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    catalog = json.loads(out.read_text())

    async def listing(profile: str) -> list[dict[str, Any]]:
        async with connect(REA_MCP_INPUT_SCHEMA_PROFILE=profile, REA_MCP_TOOLSETS="all") as client:
            tools = await client.list_tools()
            return [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools]

    for profile in ("full", "compact"):
        live = anyio.run(listing, profile)
        assert [t["name"] for t in live] == [t["name"] for t in catalog["tools"]]
        for entry, tool in zip(catalog["tools"], live, strict=True):
            assert tool["inputSchema"] == entry["advertised_input_schemas"][profile]
            assert tool["description"] == entry["advertised_descriptions"][profile]
            assert tool.get("outputSchema") == entry["advertised_output_schema"]
            ann = tool["annotations"]
            assert ann["readOnlyHint"] == entry["annotations"]["readOnlyHint"]
            # Sent only where MCP gives it a meaning: for tools that are not read-only.
            assert ann.get("destructiveHint", False) == entry["annotations"]["destructiveHint"]
    assert catalog["catalog_digest"].startswith("sha256:")


def test_version_lists_plugins() -> None:
    proc = rea("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("rea ") and "installed plugins:" in proc.stdout


def test_analyze_routes_applications_and_a_format_property_keeps_its_flag(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "demo", "main": "main.js"}')
    (app / "main.js").write_text('const util = require("./util");\nconsole.log(util.greet("rea"));\n')
    (app / "util.js").write_text('exports.greet = (n) => "hello " + n;\n')
    proc = rea("analyze", str(app), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["operation"] == "analyze_javascript_application"
    assert {m["path"] for m in doc["normalized_result"]["modules"]} == {"main.js", "util.js"}
    # The tool's own "format" property is --input-format; --format stays the output switch.
    proc = rea("analyze-javascript-application", str(app), "--input-format", "asar", "--format", "json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] in (
        "unsupported_target",
        "invalid_request",
    )


def test_plugins_command_filters_by_hook() -> None:
    proc = rea("plugins", "--hook", "rea_register_unpackers", "--json")
    assert proc.returncode == 0, proc.stderr
    names = {p["name"] for p in json.loads(proc.stdout)["plugins"]}
    assert {"asar", "artifacts"} <= names and "native" not in names
    human = rea("plugins")
    assert human.returncode == 0 and "rea_register_analysis_providers" in human.stdout


def test_remediation_names_only_providers_that_are_here(hello_elf: Path) -> None:
    proc = rea("binary-overview", str(hello_elf), "--provider", "close-probe", "--json", env=CLOSE_PROBE)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "capability_unavailable"
    action = error["remediation"]["action"]
    usable = error["details"]["providers_with_it"]
    assert "native" in usable and "ghost-engine" not in usable
    assert f"provider_id one of: {', '.join(usable)}." in action
    assert "ghost-engine would offer it: pip install ghost" in action
    assert {"provider_id": "ghost-engine", "remediation": "pip install ghost"} in error["details"][
        "installable_providers"
    ]
