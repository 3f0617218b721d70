"""Issue 47: each Android question answered right, by the tool named, within 64 KB, over the MCP SDK client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from androidquestions import QUESTIONS
from androidquestions import ask

from rea_plugins.android.tools import TOOLS
from tests.mcp.harness import connect

BUDGET = 64 * 1024


def test_each_question_is_answered_right_within_64_kb(apk: Path, apk_v2: Path) -> None:
    async def main() -> list[tuple[str, dict[str, Any], int]]:
        out = []
        async with connect() as client:
            await client.call_tool("enable_toolsets", {"toolsets": ["android"]})
            for q in QUESTIONS:
                result, size = await ask(client, q, apk, apk_v2)
                out.append((q.question, result, size))
        return out

    answers = anyio.run(main)
    for (question, result, size), q in zip(answers, QUESTIONS, strict=True):
        assert q.right(result), f"{q.tool} answered {question!r} wrongly: {result}"
        assert size <= BUDGET, f"{q.tool} used {size} bytes for {question!r}"


def test_no_android_argument_is_a_bare_object() -> None:
    """Issue 47 item 12: every argument of every android tool states its type, and objects their properties."""
    for tool in TOOLS:
        for name, prop in tool.input_schema["properties"].items():
            assert "type" in prop or "enum" in prop, f"{tool.name}.{name} has no type"
            if prop.get("type") == "object":
                assert prop.get("properties"), f"{tool.name}.{name} is a bare object"
            assert prop.get("description"), f"{tool.name}.{name} says nothing of what it takes"
