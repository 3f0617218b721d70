"""What a host sends with every model request: the bytes of tools/list, per profile and per toolset.

Each figure comes from a live ``rea serve`` listed through the official SDK's stdio client: the input schemas
and descriptions of the advertised tools (what issue 22 budgets: at most 60 KB in the full profile and 30 KB in
the compact one), the same as sent on the wire (compact JSON), and the whole tools/list result with output
schemas. The budgeted list is the default one (every toolset but those a connection enables on demand); the
``all`` line is every toolset at once. A toolset's row is the server started with ``REA_MCP_TOOLSETS=<toolset>``
(``session`` always joins).

    python benchmarks/tool_definitions.py [--largest N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client

from rea.registry import TOOLSET_ORDER

GOALS = {"full": 60 * 1024, "compact": 30 * 1024}
# The whole tools/list result on the wire, output schemas included (issue 44).
WHOLE_GOALS = {"full": 100 * 1024, "compact": 60 * 1024}


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


async def _listed(env: dict[str, str]) -> list[dict[str, Any]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=env)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def listed(**settings: str) -> list[dict[str, Any]]:
    """The tools a server started with ``settings`` advertises, as the SDK client decodes them."""
    tools: list[dict[str, Any]] = anyio.run(_listed, server_env(**settings))
    return tools


def definition_bytes(tool: dict[str, Any], wire: bool = False) -> int:
    """Input schema + description of one tool (``wire``: compact JSON, as the server sends it)."""
    separators = (",", ":") if wire else None
    schema = json.dumps(tool["inputSchema"], separators=separators)
    return len(schema.encode()) + len(tool.get("description", "").encode())


def parts(tools: list[dict[str, Any]]) -> dict[str, int]:
    """The tools/list result on the wire (compact JSON, as the server sends it), whole and by part."""

    def size(value: Any) -> int:
        return len(json.dumps(value, separators=(",", ":")).encode())

    return {
        "whole": size({"tools": tools}),
        "input schemas": sum(size(t["inputSchema"]) for t in tools),
        "output schemas": sum(size(t.get("outputSchema")) for t in tools if t.get("outputSchema")),
        "descriptions": sum(len(t.get("description", "").encode()) for t in tools),
    }


def kb(n: float) -> str:
    return f"{n / 1024:6.1f} KB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=5, help="list this many largest tools per profile")
    opts = parser.parse_args()
    for profile, goal in GOALS.items():
        tools = listed(REA_MCP_INPUT_SCHEMA_PROFILE=profile)
        sent = sum(definition_bytes(t) for t in tools)
        wire = sum(definition_bytes(t, wire=True) for t in tools)
        whole = parts(tools)["whole"]
        print(
            f"{profile}: {len(tools)} tools, input schemas + descriptions {kb(sent)} "
            f"(goal <= {kb(goal).strip()}: {'met' if sent <= goal else 'MISSED'}); on the wire {kb(wire)}; "
            f"whole tools/list with output schemas {kb(whole)} (goal <= {kb(WHOLE_GOALS[profile]).strip()}: "
            f"{'met' if whole <= WHOLE_GOALS[profile] else 'MISSED'})"
        )
        for t in sorted(tools, key=definition_bytes, reverse=True)[: opts.largest]:
            print(f"    {definition_bytes(t):6d} B  {t['name']}")
        everything = listed(REA_MCP_INPUT_SCHEMA_PROFILE=profile, REA_MCP_TOOLSETS="all")
        print(f"  all toolsets: {len(everything)} tools {kb(sum(definition_bytes(t) for t in everything))}")
        for label, selection in (("default", tools), ("all", everything)):
            on_wire = parts(selection)
            print(
                f"  tools/list on the wire, {label} toolsets: "
                + ", ".join(f"{k} {kb(v).strip()}" for k, v in on_wire.items())
            )
        print("  per toolset (that toolset and session):")
        for toolset in TOOLSET_ORDER:
            selected = listed(REA_MCP_INPUT_SCHEMA_PROFILE=profile, REA_MCP_TOOLSETS=toolset)
            print(f"    {toolset:10} {len(selected):3} tools {kb(sum(definition_bytes(t) for t in selected))}")


if __name__ == "__main__":
    main()
