"""The seven managed tools through the official MCP SDK client, and the static ones from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from rea.evidence import retained_reference
from tests.mcp.harness import call_structured
from tests.mcp.harness import connect
from tests.mcp.harness import server_env


def ref(record: dict[str, Any]) -> dict[str, str]:
    return retained_reference(record["evidence_id"])


def test_all_seven_tools_through_the_sdk_client(managed_build: dict[str, Path]) -> None:
    lib1, lib2 = str(managed_build["lib_v1"]), str(managed_build["lib_v2"])

    async def main() -> None:
        async with connect() as client:
            # managed is listed on demand: a connection adds it when a target turns out to be an assembly.
            await client.call_tool("enable_toolsets", {"toolsets": ["managed"]})
            names = {t.name for t in (await client.list_tools()).tools}
            assert {
                "inspect_managed_artifact",
                "inspect_managed_members",
                "inspect_managed_native_boundaries",
                "compare_managed_members",
                "verify_managed_native_boundaries",
                "project_managed_application_graph",
                "import_managed_reconstruction",
            } <= names
            art = await call_structured(client, "inspect_managed_artifact", {"path": lib1})
            assert art["normalized_result"]["identity"]["version"] == "1.2.3.4"
            left = await call_structured(client, "inspect_managed_members", {"path": lib1})
            right = await call_structured(client, "inspect_managed_members", {"path": lib2})
            keys = {m["key"] for m in left["normalized_result"]["methods"]["items"]}
            assert "Demo.Lib.Calculator/Inner::Big(long)" in keys
            diff = await call_structured(
                client,
                "compare_managed_members",
                {"left_evidence_id": ref(left), "right_evidence_id": ref(right)},
            )
            assert diff["normalized_result"]["added"]["items"] == ["method Demo.Lib.Calculator::Sub(int, int)"]
            bounds = await call_structured(client, "inspect_managed_native_boundaries", {"path": lib1})
            await call_structured(client, "open_binary", {"path": str(managed_build["native"])})
            names_ev = await call_structured(client, "list_names", {"limit": 1000})
            verdict = await call_structured(
                client,
                "verify_managed_native_boundaries",
                {
                    "managed_boundaries_evidence_id": ref(bounds),
                    "native_observation_evidence_ids": [names_ev],  # inline
                },
            )
            assert verdict["normalized_result"]["counts"] == {"resolved": 3, "missing": 1, "unknown": 1}
            graph = await call_structured(
                client, "project_managed_application_graph", {"application_path": str(managed_build["app"])}
            )
            assert graph["normalized_result"]["main"] == "asm:App.exe"
            token = left["normalized_result"]["methods"]["items"][1]["token"]
            recon = await call_structured(
                client,
                "import_managed_reconstruction",
                {
                    "static_members_evidence_id": ref(left),
                    "decompiler": {"name": "ILSpy", "version": "9"},
                    "methods": [{"method_token": token, "csharp": "public Calculator() { }"}],
                },
            )
            assert recon["authority"] == "historical-reference"
            assert recon["normalized_result"]["methods"][0]["link"] == "matched"
            bad = await client.call_tool("inspect_managed_members", {"path": str(managed_build["native"])})
            assert bad.is_error and "unsupported_target" in str(bad.content)

    anyio.run(main)


def rea(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args], capture_output=True, text=True, env=server_env(), timeout=120
    )


def test_static_tools_from_the_cli(managed_build: dict[str, Path]) -> None:
    proc = rea("inspect-managed-native-boundaries", str(managed_build["lib_v1"]), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    entries = {i["entry_point"] for i in doc["normalized_result"]["imports"]["items"]}
    assert entries == {"native_add", "native_mul", "Missing", "native_sub"}
    proc = rea("inspect-managed-members", str(managed_build["app_exe"]), "--method-limit", "1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (main,) = json.loads(proc.stdout)["normalized_result"]["methods"]["items"]
    assert main["signature"] == "int Main(string[] args)"
    proc = rea("inspect-managed-artifact", str(managed_build["native"]), "--format", "json")
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "unsupported_target" and "Traceback" not in proc.stderr


def test_compare_from_the_cli_with_inline_records(managed_build: dict[str, Path], tmp_path: Path) -> None:
    files = []
    for version in ("lib_v1", "lib_v2"):
        proc = rea("inspect-managed-members", str(managed_build[version]), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        saved = tmp_path / f"{version}.json"
        saved.write_text(proc.stdout)
        files.append(saved)
    proc = rea(
        "compare-managed-members",
        "--left-evidence-id",
        f"@{files[0]}",
        "--right-evidence-id",
        f"@{files[1]}",
        "--limits",
        '{"limit": 5}',
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    left, right = (json.loads(f.read_text())["evidence_id"] for f in files)
    assert set(doc["evidence_links"]) == {left, right}
    assert doc["normalized_result"]["added"]["items"] == ["method Demo.Lib.Calculator::Sub(int, int)"]
    assert doc["normalized_result"]["counts"]["changed"] == 4
    # Each command keeps its Evidence in the analysis cache: a later one names it by id.
    proc = rea("compare-managed-members", "--left-evidence-id", left, "--right-evidence-id", right, "--json")
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout)
    assert set(again["evidence_links"]) == {left, right}
    assert again["normalized_result"]["counts"] == doc["normalized_result"]["counts"]
    # The same records as one JSON argument, and the default text rendering.
    args = {"left_evidence_id": json.loads(files[0].read_text()), "right_evidence_id": json.loads(files[1].read_text())}
    argument = tmp_path / "args.json"
    argument.write_text(json.dumps(args))
    proc = rea("compare-managed-members", f"@{argument}")
    assert proc.returncode == 0, proc.stderr
    assert "Demo.Lib.Calculator::Sub(int, int)" in proc.stdout


def test_workflows_from_the_cli(managed_build: dict[str, Path], tmp_path: Path) -> None:
    """The graph, the boundary verification and a reconstruction import from the CLI, Evidence passed as files."""
    proc = rea("project-managed-application-graph", "--application-path", str(managed_build["app"]), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["normalized_result"]["main"] == "asm:App.exe"
    saved = {}
    for name, command in (
        ("bounds", ["inspect-managed-native-boundaries", str(managed_build["lib_v1"])]),
        ("names", ["list-names", str(managed_build["native"]), "--limit", "1000"]),
        ("members", ["inspect-managed-members", str(managed_build["lib_v1"])]),
    ):
        proc = rea(*command, "--json")
        assert proc.returncode == 0, proc.stderr
        saved[name] = tmp_path / f"{name}.json"
        saved[name].write_text(proc.stdout)
    proc = rea(
        "verify-managed-native-boundaries",
        "--managed-boundaries-evidence-id",
        f"@{saved['bounds']}",
        "--native-observation-evidence-ids",
        f"[{saved['names'].read_text()}]",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["normalized_result"]["counts"] == {"resolved": 3, "missing": 1, "unknown": 1}
    members = json.loads(saved["members"].read_text())
    token = members["normalized_result"]["methods"]["items"][1]["token"]
    proc = rea(
        "import-managed-reconstruction",
        "--static-members-evidence-id",
        f"@{saved['members']}",
        "--decompiler",
        '{"name": "ILSpy", "version": "9"}',
        "--methods",
        json.dumps([{"method_token": token, "csharp": "public Calculator() { }"}]),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    recon = json.loads(proc.stdout)
    assert recon["authority"] == "historical-reference"
    assert recon["normalized_result"]["methods"][0]["link"] == "matched"
