"""What a host sends with every request: the live tools/list fits issue 22's budgets, whole and per toolset."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import jsonschema

from rea.catalog.document import build_catalog
from rea.registry import Registry
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
    for profile, budget in BUDGET_BYTES.items():
        tools = anyio.run(functools.partial(listing, REA_MCP_INPUT_SCHEMA_PROFILE=profile))
        assert {t["name"] for t in tools} == set(catalog)
        assert sent_bytes(tools) <= budget, f"{profile}: {sent_bytes(tools)} bytes"
        for tool in tools:
            # Lean, not lossy: every example the catalog keeps still satisfies the advertised schema, and the
            # description is the start of the complete one.
            validator = jsonschema.Draft202012Validator(tool["inputSchema"])
            for example in catalog[tool["name"]]["examples"]:
                assert not list(validator.iter_errors(example)), (profile, tool["name"], example)
            assert catalog[tool["name"]]["description"].startswith(tool["description"].rstrip("…")), tool["name"]


def test_a_toolset_selection_lists_exactly_its_tools_and_costs_less(rea_registry: Registry) -> None:
    toolset_of = {t["name"]: t["toolset"] for t in build_catalog(rea_registry)["tools"]}
    whole = sent_bytes(anyio.run(listing))
    for selection in ("native", "browser,dynamic"):
        chosen = {"session", *selection.split(",")}
        tools = anyio.run(functools.partial(listing, REA_MCP_TOOLSETS=selection))
        assert {t["name"] for t in tools} == {n for n, ts in toolset_of.items() if ts in chosen}
        assert sent_bytes(tools) < whole
