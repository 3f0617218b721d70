"""The TypeScript MCP SDK's client validates what rea returns against the advertised output schemas (issue 26).

The SDK (pinned, installed with npm once into tests/.fixtures/npm-mcp) checks every structuredContent against
the tool's outputSchema and throws when it does not match; a probe tool that returns a result unlike its
declared shape shows the check is real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import toolchains
from tests.mcp.harness import server_env

ROOT = Path(__file__).resolve().parents[1] / ".fixtures" / "npm-mcp"
SDK = "@modelcontextprotocol/sdk@1.32.2"
SCRIPT = Path(__file__).with_name("ts_client.mjs")
# Typed tools across the families the suite can drive on a plain ELF without engines beyond the default.
CALLS = [
    ("list_documents", {}),
    ("list_segments", {}),
    ("list_procedures", {"limit": 5}),
    ("search_procedures", {"pattern": "main"}),
    ("list_strings", {"limit": 5}),
    ("search_strings", {"pattern": "e"}),
    ("list_names", {"limit": 5}),
    ("procedure_address", {"procedure": "main"}),
    ("procedure_info", {"procedure": "main"}),
    ("procedure_assembly", {"procedure": "main", "limit": 5}),
    ("read_function_instructions", {"procedure": "main", "limit": 5, "split_operands": True}),
    ("procedure_callers", {"procedure": "main"}),
    ("procedure_callees", {"procedure": "main"}),
    ("procedure_references", {"procedure": "main", "limit": 5}),
    ("binary_overview", {}),
    ("probe_mistyped", {}),
]


@pytest.fixture(scope="module")
def sdk() -> Path:
    toolchains.require_all(("node", "npm"))
    if not (ROOT / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").exists():
        ROOT.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [shutil.which("npm") or "npm", "install", "--no-audit", "--no-fund", "--prefix", str(ROOT), SDK],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            toolchains.unavailable(f"npm install of {SDK} failed: {proc.stderr[-400:]}")
    # Node resolves the SDK from the script's own folder upwards.
    script = ROOT / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    return script


def test_the_typescript_client_validates_every_typed_result(sdk: Path, hello_elf: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps(CALLS))
    env = server_env(REA_PLUGIN_MODULES="tests.mcp.probe_plugin")
    node = shutil.which("node") or "node"
    proc = subprocess.run(
        [node, str(sdk), sys.executable, str(hello_elf), str(calls)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=os.getcwd(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    results = {r["name"]: r for r in out["results"]}
    assert out["typed"] >= len(CALLS) - 1, out
    for name, _ in CALLS[:-1]:
        assert results[name]["ok"] and results[name]["validated"], results[name]
    # The negative control: the SDK refuses a result that does not match the advertised schema.
    refused = results["probe_mistyped"]
    assert not refused["ok"] and "schema" in refused["error"].lower(), refused
