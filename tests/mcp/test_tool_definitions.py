"""What a host sends with every request: the live tools/list fits issue 22's budgets, whole and per toolset."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import jsonschema

from rea.catalog.document import build_catalog
from rea.registry import ON_DEMAND_TOOLSETS
from rea.registry import Registry
from tests.mcp.harness import Recorder
from tests.mcp.harness import connect

# Input schemas + descriptions of the whole catalog, as the SDK client decodes tools/list (issue 22, item 4).
BUDGET_BYTES = {"full": 60 * 1024, "compact": 30 * 1024}


def sent_bytes(tools: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(t["inputSchema"]).encode()) + len(t.get("description", "").encode()) for t in tools)


async def listing(**settings: str) -> list[dict[str, Any]]:
    async with connect(**settings) as client:
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]


def test_the_live_tools_list_fits_both_budgets(rea_registry: Registry) -> None:
    catalog = {t["name"]: t for t in build_catalog(rea_registry)["tools"]}
    default = {n for n, t in catalog.items() if t["toolset"] not in ON_DEMAND_TOOLSETS}
    for profile, budget in BUDGET_BYTES.items():
        tools = anyio.run(functools.partial(listing, REA_MCP_INPUT_SCHEMA_PROFILE=profile))
        # The default list: every toolset but those a connection enables on demand.
        assert {t["name"] for t in tools} == default
        assert sent_bytes(tools) <= budget, f"{profile}: {sent_bytes(tools)} bytes"
        everything = anyio.run(functools.partial(listing, REA_MCP_INPUT_SCHEMA_PROFILE=profile, REA_MCP_TOOLSETS="all"))
        assert {t["name"] for t in everything} == set(catalog)
        tools = everything
        for tool in tools:
            # Lean, not lossy: every example the catalog keeps still satisfies the advertised schema, and the
            # description is the start of the complete one.
            validator = jsonschema.Draft202012Validator(tool["inputSchema"])
            for example in catalog[tool["name"]]["examples"]:
                assert not list(validator.iter_errors(example)), (profile, tool["name"], example)
            # The advertised first sentence ends with its own stop (or an ellipsis where it was cut).
            assert catalog[tool["name"]]["description"].startswith(tool["description"].rstrip("…").rstrip(".")), tool[
                "name"
            ]


def test_a_toolset_selection_lists_exactly_its_tools_and_costs_less(rea_registry: Registry) -> None:
    toolset_of = {t["name"]: t["toolset"] for t in build_catalog(rea_registry)["tools"]}
    whole = sent_bytes(anyio.run(functools.partial(listing, REA_MCP_TOOLSETS="all")))
    for selection in ("binary", "browser,dynamic"):
        chosen = {"session", *selection.split(",")}
        tools = anyio.run(functools.partial(listing, REA_MCP_TOOLSETS=selection))
        assert {t["name"] for t in tools} == {n for n, ts in toolset_of.items() if ts in chosen}
        assert sent_bytes(tools) < whole


def test_a_connection_enables_toolsets_on_demand_and_is_told_its_list_changed(rea_registry: Registry) -> None:
    toolset_of = {t["name"]: t["toolset"] for t in build_catalog(rea_registry)["tools"]}

    async def main() -> None:
        rec = Recorder()
        async with connect(rec) as client:
            first = {t.name for t in (await client.list_tools()).tools}
            assert "inspect_managed_artifact" not in first and "enable_toolsets" in first
            enabled = await client.call_tool("enable_toolsets", {"toolsets": ["managed"]})
            assert enabled.structured_content["added"] == ["managed"]
            assert "notifications/tools/list_changed" in rec.methods()
            second = {t.name for t in (await client.list_tools()).tools}
            assert second - first == {n for n, ts in toolset_of.items() if ts == "managed"}
            # Calling a tool of a toolset not listed yet enables it too (the call is answered as usual).
            before = len(rec.methods())
            listed = await client.call_tool("list_unknowns", {})
            assert listed.is_error is False and listed.structured_content["targets"] == []
            assert "notifications/tools/list_changed" in rec.methods()[before:]
            third = {t.name for t in (await client.list_tools()).tools}
            assert "record_unknown" in third
            unknown = await client.call_tool("enable_toolsets", {"toolsets": ["nope"]})
            assert unknown.is_error is True

    anyio.run(main)


def test_an_operators_selection_is_kept(rea_registry: Registry) -> None:
    async def main() -> None:
        async with connect(REA_MCP_TOOLSETS="native") as client:
            refused = await client.call_tool("enable_toolsets", {"toolsets": ["managed"]})
            assert refused.is_error is True
            err = json.loads(refused.content[0].text)["error"]
            assert err["code"] == "invalid_request" and "REA_MCP_TOOLSETS" in err["remediation"]["action"]

    anyio.run(main)


def test_several_open_targets_add_the_target_argument(hello_elf: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copyfile(hello_elf, other)

    async def main() -> None:
        rec = Recorder()
        async with connect(rec) as client:

            def schema(tools: Any, name: str) -> dict[str, Any]:
                found: dict[str, Any] = next(t for t in tools.tools if t.name == name).input_schema
                return found

            await client.call_tool("open_binary", {"path": str(hello_elf), "alias": "a"})
            assert "target" not in schema(await client.list_tools(), "procedure_info")["properties"]
            assert "notifications/tools/list_changed" not in rec.methods()
            await client.call_tool("open_binary", {"path": str(other), "alias": "b"})
            assert "notifications/tools/list_changed" in rec.methods()
            assert "target" in schema(await client.list_tools(), "procedure_info")["properties"]
            await client.call_tool("close_binary", {"target": "b"})
            assert "target" not in schema(await client.list_tools(), "procedure_info")["properties"]

    anyio.run(main)
