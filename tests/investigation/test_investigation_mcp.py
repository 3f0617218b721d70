"""Through the MCP SDK client (real `rea serve` processes): the tools, the resources, and compare-and-swap
between two servers sharing one store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.investigation.test_unknowns import QUESTION
from tests.mcp.harness import connect, server_env


def _ok(reply: Any) -> dict[str, Any]:
    assert reply.is_error is False, reply.content
    doc: dict[str, Any] = reply.structured_content
    return doc


def _error(reply: Any) -> dict[str, Any]:
    assert reply.is_error is True
    err: dict[str, Any] = json.loads(reply.content[0].text)["error"]
    return err


def test_resources_and_tools_through_the_sdk_client(stripped: str, tmp_path: Path) -> None:
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}

    async def main() -> None:
        async with connect(**env) as client:
            listed = await client.list_resources()
            assert [str(r.uri) for r in listed.resources] == ["rea://unknowns/active"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["rea://unknown/{unknown_id}"]
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert {"verify_reconstruction", "audit_residual_unknowns"} <= prompts
            _ok(await client.call_tool("open_binary", {"path": stripped, "provider_id": "native"}))
            made = _ok(await client.call_tool("record_unknown", QUESTION))["unknown"]
            uid = made["unknown_id"]
            active = json.loads((await client.read_resource("rea://unknowns/active")).contents[0].text)
            assert [u["unknown_id"] for u in active["unknowns"]] == [uid]
            one = await client.read_resource(f"rea://unknown/{uid}")
            assert json.loads(one.contents[0].text)["revisions"][0]["digest"] == made["digest"]
            with pytest.raises(MCPError):
                await client.read_resource("rea://unknown/unk_000000000000_00000000000000000000")
            with pytest.raises(MCPError):
                await client.read_resource("rea://nothing/here")
            heads = _ok(await client.call_tool("list_unknowns", {"severity": "high"}))["heads"]
            assert heads["total"] == 1
            verdict = _ok(await client.call_tool("verify_unknown_resolution", {"unknown_id": uid}))
            assert verdict["normalized_result"]["verdict"] == "not-resolved"
            bad = _error(await client.call_tool("update_unknown", {"unknown_id": uid, "expected_revision": 0}))
            assert bad["code"] == "invalid_request"

    anyio.run(main)


def test_two_servers_race_one_update_exactly_one_wins(stripped: str, tmp_path: Path) -> None:
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}

    async def main() -> None:
        async with connect(**env) as first, connect(**env) as second:
            for client in (first, second):
                _ok(await client.call_tool("open_binary", {"path": stripped, "provider_id": "native"}))
            uid = _ok(await first.call_tool("record_unknown", QUESTION))["unknown"]["unknown_id"]
            replies: list[Any] = []

            async def update(client: Any, status: str) -> None:
                replies.append(
                    await client.call_tool(
                        "update_unknown", {"unknown_id": uid, "expected_revision": 1, "status": status}
                    )
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(update, first, "investigating")
                tg.start_soon(update, second, "blocked")
            wins = [r for r in replies if not r.is_error]
            losses = [_error(r) for r in replies if r.is_error]
            assert len(wins) == 1 and len(losses) == 1
            assert losses[0]["code"] == "revision_conflict" and losses[0]["retryable"] is True
            history = json.loads((await second.read_resource(f"rea://unknown/{uid}")).contents[0].text)["revisions"]
            assert [r["revision"] for r in history] == [1, 2]
            assert history[1]["status"] == wins[0].structured_content["unknown"]["status"]

    anyio.run(main)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args], capture_output=True, text=True, env=server_env(**env), timeout=120
    )


def test_the_cli_records_lists_and_rejects(stripped: str, tmp_path: Path) -> None:
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}
    made = _cli(
        "record-unknown",
        stripped,
        "--domain",
        "behaviour",
        "--question",
        "What does it print?",
        "--severity",
        "low",
        "--required-authority",
        "shipped-artifact",
        "--required-confidence",
        "observed",
        "--json",
        env=env,
    )
    assert made.returncode == 0, made.stderr
    uid = json.loads(made.stdout)["unknown"]["unknown_id"]
    listed = _cli("list-unknowns", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [h["unknown_id"] for h in json.loads(listed.stdout)["heads"]["items"]] == [uid]
    stale = _cli(
        "update-unknown", "--unknown-id", uid, "--expected-revision", "5", "--status", "open", "--json", env=env
    )
    assert stale.returncode != 0 and "revision_conflict" in stale.stdout + stale.stderr
    assert "Traceback" not in stale.stderr
