"""Toolsets: a server advertises the families it was asked for (REA_MCP_TOOLSETS, rea serve --toolsets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from rea.catalog.document import build_catalog
from rea.doctor import doctor_report
from rea.registry import Registry
from tests.mcp.harness import connect
from tests.mcp.harness import server_env


def test_a_selected_toolset_is_all_that_is_advertised_and_callable(hello_elf: Path) -> None:
    async def main() -> None:
        # "native", the toolset's former name, is accepted for one release.
        async with connect(REA_MCP_TOOLSETS="native") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"binary_session", "open_binary", "list_procedures", "search_immediates"} <= names
            assert not names & {"set_comment", "capture_browser_scenario", "inspect_artifact", "get_evidence_bundle"}
            session = json.loads((await client.call_tool("binary_session", {})).content[0].text)
            toolsets = session["settings"]["toolsets"]
            assert toolsets["advertised"] == ["session", "binary"] and "browser" in toolsets["available"]
            refused = await client.call_tool("set_comment", {"address": "0x1000", "comment": "x"})
            assert refused.is_error
            error: dict[str, Any] = json.loads(refused.content[0].text)["error"]
            assert error["code"] == "invalid_request" and error["details"]["toolset"] == "notebook"
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            found = await client.call_tool("search_instructions", {"pattern": "call", "limit": 1})
            assert not found.is_error

    anyio.run(main)


def test_rea_serve_takes_toolsets_as_an_option() -> None:
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "serve", "--toolsets", "evidence"],
        input=request,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    listed = [json.loads(line) for line in proc.stdout.splitlines() if '"id":2' in line.replace(" ", "")]
    names = {t["name"] for t in listed[0]["result"]["tools"]}
    assert names == {
        "binary_session",
        "open_binary",
        "close_binary",
        "enable_toolsets",
        "search_tools",
        "call_tool_by_name",
        "get_evidence_bundle",
        "export_evidence_bundle",
        "import_evidence_bundle",
        "inspect_analysis_view",
        "inspect_evidence_bundle",
    }


def test_the_catalog_and_doctor_name_toolsets(rea_registry: Registry, tmp_path: Path) -> None:
    doc = build_catalog(rea_registry)
    toolsets = {t["name"]: t["toolset"] for t in doc["tools"]}
    assert toolsets["set_comment"] == "notebook" and toolsets["scan_yara"] == "binary"
    assert toolsets["analyze_javascript_application"] == "javascript" and toolsets["open_binary"] == "session"
    report = doctor_report(rea_registry, environ={"REA_MCP_TOOLSETS": "native,notebook"}, home=str(tmp_path))
    settings = next(c for c in report["checks"] if c["id"] == "settings")
    assert settings["status"] == "pass" and "session, binary, notebook" in settings["summary"]
    bad = doctor_report(rea_registry, environ={"REA_MCP_TOOLSETS": "nativ"}, home=str(tmp_path))
    assert next(c for c in bad["checks"] if c["id"] == "settings")["status"] == "fail"


def test_binary_session_answers_a_summary_and_the_inventory_on_request(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect() as client:
            before = await client.call_tool("binary_session", {})
            summary = json.loads(before.content[0].text)
            assert "tool_availability" not in summary and len(before.content[0].text) < 16 * 1024
            counts = summary["availability_summary"]["counts"]
            assert sum(counts.values()) == summary["server_identity"]["tool_count"]
            waiting = {g["reason"]: g for g in summary["availability_summary"]["unavailable"]}
            assert "list_procedures" in waiting["target_required"]["tools"]
            assert all("operations" not in c for c in summary["analysis_provider_candidates"])
            await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": "native"})
            opened = json.loads((await client.call_tool("binary_session", {})).content[0].text)
            assert opened["target"]["path"] == str(hello_elf)
            assert "target_required" not in opened["availability_summary"]["counts"]
            page = json.loads(
                (await client.call_tool("binary_session", {"detail": "tools", "limit": 10})).content[0].text
            )
            assert len(page["tool_availability"]) == 10 and page["tool_page"]["next_offset"] == 10
            assert all("operations" in c for c in page["analysis_provider_candidates"])

    anyio.run(main)
