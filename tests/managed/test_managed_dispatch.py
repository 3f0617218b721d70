"""Issue 44 item 2: a client that never follows tools/list changes finds and runs a managed tool anyway.

The client lists tools once, never enables a toolset and never acts on notifications/tools/list_changed (the
way Codex and several Claude Code versions behave); search_tools and call_tool_by_name get it to the .NET tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from tests.mcp.harness import Recorder
from tests.mcp.harness import connect


def test_a_client_that_ignores_list_changes_finds_and_calls_a_managed_tool(managed_build: dict[str, Path]) -> None:
    lib = str(managed_build["lib_v1"])
    recorder = Recorder()

    async def main() -> None:
        async with connect(recorder) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert "inspect_managed_artifact" not in listed and {"search_tools", "call_tool_by_name"} <= listed
            found = await client.call_tool("search_tools", {"query": "dotnet assembly"})
            assert not found.is_error
            search: dict[str, Any] = found.structured_content or {}
            match = next(m for m in search["matches"] if m["name"] == "inspect_managed_artifact")
            assert match["toolset"] == "managed" and match["listed"] is False and match["read_only"] is True
            assert "path" in match["input_schema"]["properties"]
            answer = await client.call_tool(
                "call_tool_by_name", {"name": "inspect_managed_artifact", "arguments": {"path": lib}}
            )
            assert not answer.is_error, answer.content
            record: dict[str, Any] = answer.structured_content or {}
            assert record["normalized_result"]["identity"]["version"] == "1.2.3.4"
            # Recorded like a direct call: the session's Evidence holds it under the tool's own operation.
            bundle = await client.call_tool("get_evidence_bundle", {"detail": "summary"})
            summary = json.loads(bundle.content[0].text)
            ids = {r["evidence_id"]: r for r in summary["records"]}
            assert record["evidence_id"] in ids
            # Arguments are the tool's own schema's: a wrong one is refused naming the tool and the argument.
            wrong = await client.call_tool(
                "call_tool_by_name", {"name": "inspect_managed_artifact", "arguments": {"pth": lib}}
            )
            assert wrong.is_error
            error = json.loads(wrong.content[0].text)["error"]
            assert error["code"] == "invalid_request" and error["details"]["tool"] == "inspect_managed_artifact"
            # The list the client holds is still true: nothing was enabled, no change was announced.
            assert {t.name for t in (await client.list_tools()).tools} == listed
        assert "notifications/tools/list_changed" not in recorder.methods()

    anyio.run(main)
