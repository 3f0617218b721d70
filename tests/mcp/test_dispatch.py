"""Issue 44 item 2: at most 80 tools listed by default, every tool reachable through search_tools and
call_tool_by_name (with the operator's toolset choice still the law), and prompts that say how to reach theirs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from rea.catalog.dispatch import CALL_TOOL_BY_NAME
from rea.catalog.dispatch import SEARCH_TOOLS
from rea.catalog.invoke import invoke
from rea.context import CallContext
from rea.registry import Registry
from rea.session import Session
from tests.mcp.harness import connect
from tests.mcp.harness import error_of

MAX_DEFAULT_TOOLS = 80


def test_the_default_list_stays_under_80_and_search_reaches_every_other_tool(rea_registry: Registry) -> None:
    async def main() -> None:
        async with connect() as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert len(listed) <= MAX_DEFAULT_TOOLS, len(listed)
            assert {SEARCH_TOOLS, CALL_TOOL_BY_NAME} <= listed
            # Every unlisted tool is found by its own name's words, on the first page.
            for name in sorted(set(rea_registry.tool_info()) - listed):
                found = await client.call_tool(SEARCH_TOOLS, {"query": name.replace("_", " "), "limit": 25})
                names = [m["name"] for m in (found.structured_content or {})["matches"]]
                assert name in names, (name, names)

    anyio.run(main)


def test_call_tool_by_name_runs_a_tool_as_a_direct_call_does(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect() as client:
            opened = await client.call_tool(
                CALL_TOOL_BY_NAME, {"name": "open_binary", "arguments": {"path": str(hello_elf)}}
            )
            assert not opened.is_error and (opened.structured_content or {})["target"]["path"] == str(hello_elf)
            direct = await client.call_tool("list_procedures", {"limit": 3})
            through = await client.call_tool(CALL_TOOL_BY_NAME, {"name": "list_procedures", "arguments": {"limit": 3}})
            # The same call, the same record: Evidence identity is the content's, not the path it came by.
            assert (direct.structured_content or {})["evidence_id"] == (through.structured_content or {})["evidence_id"]
            unknown = error_of(await client.call_tool(CALL_TOOL_BY_NAME, {"name": "no_such_tool"}))
            assert unknown["code"] == "invalid_request" and "search_tools" in unknown["remediation"]["action"]
            itself = error_of(await client.call_tool(CALL_TOOL_BY_NAME, {"name": CALL_TOOL_BY_NAME}))
            assert itself["code"] == "invalid_request"
            empty = error_of(await client.call_tool(SEARCH_TOOLS, {"query": "?!"}))
            assert empty["code"] == "invalid_request" and empty["details"]["issues"][0]["path"] == "query"

    anyio.run(main)


def test_an_operators_toolset_choice_holds_for_dispatched_calls() -> None:
    async def main() -> None:
        async with connect(REA_MCP_TOOLSETS="native") as client:
            refused = error_of(
                await client.call_tool(CALL_TOOL_BY_NAME, {"name": "set_comment", "arguments": {"address": "0x1"}})
            )
            assert refused["details"]["toolset"] == "notebook"
            found = await client.call_tool(SEARCH_TOOLS, {"query": "comment", "toolset": "notebook"})
            matches = (found.structured_content or {})["matches"]
            assert matches and all(not m["listed"] for m in matches)

    anyio.run(main)


def test_prompts_say_how_to_reach_their_unlisted_tools() -> None:
    async def main() -> None:
        async with connect() as client:
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert "inventory_electron_application" in prompts
            got = await client.get_prompt("inventory_electron_application", {"path": "/tmp/app.asar"})
            text = got.messages[0].content.text  # type: ignore[union-attr]
            assert "analyze_javascript_application" in text and "call_tool_by_name" in text
            triage = await client.get_prompt("triage_binary", {"path": "/bin/true"})
            assert "call_tool_by_name" not in triage.messages[0].content.text  # type: ignore[union-attr]
        async with connect(REA_MCP_TOOLSETS="native") as client:
            # An operator's list leaves the browser's and JavaScript's workflows unreachable: not offered at all.
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert "inventory_electron_application" not in prompts and "triage_binary" in prompts

    anyio.run(main)


def test_search_ranks_by_the_words_an_agent_uses(rea_registry: Registry) -> None:
    session = Session(rea_registry)
    try:

        def first(query: str, **extra: Any) -> list[str]:
            found = invoke(session, rea_registry.tools[SEARCH_TOOLS], {"query": query, **extra}, CallContext())
            assert found.structured is not None
            return [m["name"] for m in found.structured["matches"]]

        assert first("decompile function")[0] == "procedure_pseudo_code"
        assert first("call graph")[0] == "get_call_graph"
        assert "search_android_classes" in first("apk classes")
        assert first("screenshot", limit=1) == ["capture_web_screenshot"] or first("screenshot")[0].endswith(
            "screenshots"
        )
        page = invoke(session, rea_registry.tools[SEARCH_TOOLS], {"query": "binary", "limit": 2}, CallContext())
        assert page.structured is not None and page.structured["next_offset"] == 2 and page.structured["total"] > 2
    finally:
        session.close()


def test_a_tools_complete_schemas_are_one_resource_away() -> None:
    """tools/list carries shallow output schemas; rea://tool/{name} gives the complete ones the catalog keeps."""

    async def main() -> None:
        async with connect() as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            read = await client.read_resource("rea://tool/list_procedures")  # type: ignore[arg-type]
            entry = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert (
                entry["name"] == "list_procedures"
                and entry["advertised_output_schema"] == listed["list_procedures"].output_schema
            )
            complete = entry["output_schema"]
            assert complete["$defs"] and len(json.dumps(complete)) > 4 * len(
                json.dumps(entry["advertised_output_schema"])
            )
            with pytest.raises(MCPError, match="no tool named"):
                await client.read_resource("rea://tool/no_such_tool")  # type: ignore[arg-type]

    anyio.run(main)
