"""The Android tools through the MCP SDK client (one ``rea serve``) and from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import androidfixtures as fx
import anyio

from tests.mcp.harness import call_structured
from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.mcp.harness import server_env

TOOLS = (
    "inspect_android_package",
    "search_android_classes",
    "inspect_android_class",
    "inspect_android_method",
    "trace_android_references",
    "project_android_application_graph",
)
GREETER = "com.example.rea.Greeter"


def test_all_six_tools_through_the_mcp_client(apk: Path) -> None:
    path = str(apk)

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with connect() as client:
            # android is listed on demand: a connection adds it when a target turns out to be a package.
            await client.call_tool("enable_toolsets", {"toolsets": ["android"]})
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(TOOLS) <= set(listed)
            for name in TOOLS:
                annotations = listed[name].annotations
                # Read-only: the destructive hint, meaningless then, is not sent (an MCP client reads it as false).
                assert annotations is not None and annotations.read_only_hint is True
                assert annotations.destructive_hint in (None, False)
            calls: dict[str, dict[str, Any]] = {
                "inspect_android_package": {"path": path},
                "search_android_classes": {"path": path, "pattern": "the answer", "scope": "strings"},
                "inspect_android_class": {"path": path, "class_name": GREETER},
                "inspect_android_method": {
                    "path": path,
                    "class_name": GREETER,
                    "method": "greet",
                    "descriptor": "(I)Ljava/lang/String;",
                },
                "trace_android_references": {"path": path, "string": fx.URL},
                "project_android_application_graph": {"path": path, "limit": 50},
            }
            for name, args in calls.items():
                out[name] = await call_structured(client, name, args)
            out["error"] = error_of(
                await client.call_tool("inspect_android_class", {"path": path, "class_name": "no.Such"})
            )
        return out

    out = anyio.run(main)
    for name in TOOLS:
        assert out[name]["operation"] == name and out[name]["evidence_id"].startswith("ev_")
    assert out["inspect_android_package"]["normalized_result"]["package"] == fx.PACKAGE
    assert [c["name"] for c in out["search_android_classes"]["normalized_result"]["classes"]] == [GREETER]
    assert out["inspect_android_class"]["normalized_result"]["source_file"] == "Greeter.java"
    assert '"the answer"' in out["inspect_android_method"]["normalized_result"]["source"]["text"]
    refs = out["trace_android_references"]["normalized_result"]["references"]
    assert [r["source"] for r in refs] == ["Lcom/example/rea/MainActivity;->onCreate(Landroid/os/Bundle;)V"]
    assert out["project_android_application_graph"]["normalized_result"]["counts"]["classes"] == len(fx.SMALI)
    assert out["error"]["code"] == "invalid_request" and out["error"]["remediation"]["action"]


def _rea(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args], capture_output=True, text=True, timeout=120, env=server_env()
    )


def test_cli_commands(apk: Path, apk_v2: Path, tmp_path: Path) -> None:
    proc = _rea("inspect-android-package", str(apk), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["normalized_result"]["main_activity"] == "com.example.rea.MainActivity"
    proc = _rea(
        "inspect-android-method",
        json.dumps({"path": str(apk), "class_name": "com.example.rea.MainActivity", "method": "onCreate"}),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert f'"{fx.URL}"' in json.loads(proc.stdout)["normalized_result"]["source"]["text"]
    proc = _rea("search-android-classes", "--path", str(apk), "--pattern", "greet", "--scope", "methods", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [c["name"] for c in json.loads(proc.stdout)["normalized_result"]["classes"]] == [GREETER]
    proc = _rea("compare-android-packages", "--left-path", str(apk), "--right-path", str(apk_v2), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["normalized_result"]["summary"]["method"] == {"changed": 1}
    text = _rea("project-android-application-graph", str(apk))
    assert text.returncode == 0 and "loads-library" in text.stdout
    not_android = tmp_path / "notes.txt"
    not_android.write_text("not an application\n")
    proc = _rea("inspect-android-package", str(not_android), "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "unsupported_target"
