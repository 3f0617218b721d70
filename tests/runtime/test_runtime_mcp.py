"""The runtime tools through rea serve and the official MCP SDK client: the toolset is listed once enabled (on
demand), the answers match their advertised output schemas, and the default answer stays lean."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests.mcp.harness import connect
from tests.runtime.nodeapp import Inspected


def test_an_agent_observes_node_and_reconciles_over_mcp(
    node_app: Path, node_path: str, inspected: list[Inspected]
) -> None:
    program = Inspected(node_path, node_app / "main.js")
    inspected.append(program)

    async def main() -> None:
        async with connect() as client:
            first = {t.name for t in (await client.list_tools()).tools}
            assert "observe_javascript_runtime" not in first
            enabled = await client.call_tool("enable_toolsets", {"toolsets": ["runtime"]})
            assert enabled.structured_content["added"] == ["runtime"]
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {
                "list_javascript_runtime_targets",
                "observe_javascript_runtime",
                "reconcile_javascript_runtime",
            } <= listed
            targets = await client.call_tool(
                "list_javascript_runtime_targets", {"inspector_endpoint": program.endpoint}
            )
            assert targets.is_error is False
            target_id = targets.structured_content["normalized_result"]["targets"][0]["target_id"]
            observed = await client.call_tool(
                "observe_javascript_runtime",
                {
                    "inspector_endpoint": program.endpoint,
                    "target_id": target_id,
                    "runtime_kind": "node",
                    "allowed_file_roots": [str(node_app)],
                    "observation_ms": 500,
                },
            )
            assert observed.is_error is False
            summary = observed.structured_content["normalized_result"]
            assert summary["counts"]["application"] == 4
            assert len(json.dumps(observed.structured_content)) < 8192
            reconciled = await client.call_tool(
                "reconcile_javascript_runtime",
                {
                    "runtime_observations": [
                        {"kind": "retained-evidence", "evidence_id": observed.structured_content["evidence_id"]}
                    ],
                    "static_layers": [{"input_path": str(node_app)}],
                },
            )
            assert reconciled.is_error is False
            counts = reconciled.structured_content["normalized_result"]["counts"]
            assert counts["loaded_and_known"] == 4 and counts["loaded_but_unknown"] == 0

    anyio.run(main)
