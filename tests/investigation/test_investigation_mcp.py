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
from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.mcp.harness import server_env
from tests.mcp.harness import structured


def test_resources_and_tools_through_the_sdk_client(stripped: str, tmp_path: Path) -> None:
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}

    async def main() -> None:
        async with connect(**env) as client:
            listed = await client.list_resources()
            assert [str(r.uri) for r in listed.resources] == ["rea://unknowns/active"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "rea://provenance/{provenance_id}",
                "rea://tool/{name}",
                "rea://unknown/{unknown_id}",
            ]
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert {"verify_reconstruction", "audit_residual_unknowns"} <= prompts
            structured(await client.call_tool("open_binary", {"path": stripped, "provider_id": "native"}))
            made = structured(await client.call_tool("record_unknown", QUESTION))["unknown"]
            uid = made["unknown_id"]
            active = json.loads((await client.read_resource("rea://unknowns/active")).contents[0].text)
            assert [u["unknown_id"] for u in active["unknowns"]] == [uid]
            one = await client.read_resource(f"rea://unknown/{uid}")
            assert json.loads(one.contents[0].text)["revisions"][0]["digest"] == made["digest"]
            with pytest.raises(MCPError):
                await client.read_resource("rea://unknown/unk_000000000000_00000000000000000000")
            with pytest.raises(MCPError):
                await client.read_resource("rea://nothing/here")
            heads = structured(await client.call_tool("list_unknowns", {"severity": "high"}))["heads"]
            assert heads["total"] == 1
            verdict = structured(await client.call_tool("verify_unknown_resolution", {"unknown_id": uid}))
            assert verdict["normalized_result"]["verdict"] == "not-resolved"
            bad = error_of(await client.call_tool("update_unknown", {"unknown_id": uid, "expected_revision": 0}))
            assert bad["code"] == "invalid_request"

    anyio.run(main)


def test_two_servers_race_one_update_exactly_one_wins(stripped: str, tmp_path: Path) -> None:
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}

    async def main() -> None:
        async with connect(**env) as first, connect(**env) as second:
            for client in (first, second):
                structured(await client.call_tool("open_binary", {"path": stripped, "provider_id": "native"}))
            uid = structured(await first.call_tool("record_unknown", QUESTION))["unknown"]["unknown_id"]
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
            losses = [error_of(r) for r in replies if r.is_error]
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


def test_reconstruction_and_version_tools_through_the_sdk_client_and_cli(tmp_path: Path) -> None:
    from tests.investigation.test_reconstruction import CHECK
    from tests.investigation.test_reconstruction import DIFF
    from tests.investigation.test_reconstruction import LEAF
    from tests.investigation.test_reconstruction import MAIN
    from tests.investigation.test_reconstruction import PARSE
    from tests.investigation.test_reconstruction import RUN
    from tests.investigation.test_reconstruction import SAME
    from tests.investigation.test_reconstruction import UNSURE
    from tests.investigation.test_reconstruction import export

    bundle = export(tmp_path / "r.json", [MAIN, PARSE, CHECK, LEAF, RUN, SAME, DIFF, UNSURE])
    other = export(tmp_path / "o.json", [MAIN, RUN])
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store")}

    def ref(ev: Any) -> dict[str, str]:
        return {"kind": "retained-evidence", "evidence_id": ev.evidence_id}

    calls: list[tuple[str, dict[str, Any]]] = [
        ("build_reconstruction_obligation_ledger", {"evidence_bundle": {"path": bundle}, "page": {"limit": 2}}),
        ("evaluate_reconstruction_coverage", {"evidence_bundle": {"path": bundle}}),
        (
            "verify_reconstruction",
            {
                "specification": {
                    "evidence_bundle": {"path": bundle},
                    "claims": [{"claim_id": "m", "kind": "structural", "evidence_ids": [MAIN.evidence_id]}],
                }
            },
        ),
        (
            "build_call_path",
            {"functions": [ref(MAIN), ref(PARSE), ref(LEAF)], "start": {"name": "main"}, "goal": {"name": "leaf"}},
        ),
        ("compare_bundles", {"left_bundle_path": other, "right_bundle_path": bundle}),
        ("find_changed_behavior", {"comparisons": [ref(SAME), ref(DIFF)]}),
        (
            "correlate_static_and_runtime",
            {
                "static_comparisons": [ref(SAME)],
                "runtime_comparisons": [ref(DIFF)],
                "mappings": [
                    {
                        "hypothesis_id": "h",
                        "static_evidence_id": SAME.evidence_id,
                        "runtime_evidence_id": DIFF.evidence_id,
                    }
                ],
            },
        ),
    ]

    async def main() -> None:
        async with connect(**env) as client:
            structured(await client.call_tool("import_evidence_bundle", {"path": bundle}))
            for name, args in calls:
                out = structured(await client.call_tool(name, args))
                assert out, name
            bad = error_of(await client.call_tool("build_reconstruction_obligation_ledger", {"evidence_bundle": {}}))
            assert bad["code"] == "invalid_request"
            missing = error_of(
                await client.call_tool(
                    "compare_bundles", {"left_bundle_path": "/nope.json", "right_bundle_path": bundle}
                )
            )
            assert missing["code"] in ("invalid_request", "target_unavailable")

    anyio.run(main)
    cli = _cli(
        "build-reconstruction-obligation-ledger", "--evidence-bundle", json.dumps({"path": bundle}), "--json", env=env
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout)["normalized_result"]["obligations"]["total"] == 5
    cov = _cli("evaluate-reconstruction-coverage", "--evidence-bundle", json.dumps({"path": bundle}), "--json", env=env)
    assert cov.returncode == 0 and json.loads(cov.stdout)["counts"]["uncovered"] == 2
    cmp = _cli("compare-bundles", "--left-bundle-path", other, "--right-bundle-path", bundle, "--json", env=env)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr


def test_the_evidence_tools_through_the_cli_with_inline_evidence(tmp_path: Path) -> None:
    from rea import evidence as ev_mod
    from tests.investigation.test_reconstruction import DIFF
    from tests.investigation.test_reconstruction import LEAF
    from tests.investigation.test_reconstruction import MAIN
    from tests.investigation.test_reconstruction import PARSE
    from tests.investigation.test_reconstruction import SAME

    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "store"), "REA_CACHE_DIR": str(tmp_path / "cache")}

    def inline(path: Path, records: list[Any]) -> str:
        path.write_text(json.dumps([ev_mod.to_builtins(r) for r in records]))
        return f"@{path}"

    changed = _cli(
        "find-changed-behavior", "--comparisons", inline(tmp_path / "c.json", [SAME, DIFF]), "--json", env=env
    )
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert json.loads(changed.stdout)["normalized_result"]["unchanged_count"] == 1
    paths = _cli(
        "build-call-path",
        "--functions",
        inline(tmp_path / "f.json", [MAIN, PARSE, LEAF]),
        "--start",
        '{"name": "main"}',
        "--goal",
        '{"address": "0x1300"}',
        "--json",
        env=env,
    )
    assert paths.returncode == 0, paths.stdout + paths.stderr
    assert json.loads(paths.stdout)["normalized_result"]["paths"]["total"] == 1
    mappings = json.dumps(
        [{"hypothesis_id": "h", "static_evidence_id": SAME.evidence_id, "runtime_evidence_id": DIFF.evidence_id}]
    )
    judged = _cli(
        "correlate-static-and-runtime",
        "--static-comparisons",
        inline(tmp_path / "s.json", [SAME]),
        "--runtime-comparisons",
        inline(tmp_path / "r.json", [DIFF]),
        "--mappings",
        mappings,
        "--json",
        env=env,
    )
    assert judged.returncode == 0, judged.stdout + judged.stderr
    missing = _cli("verify-unknown-resolution", "--unknown-id", "unk_" + "0" * 12 + "_" + "0" * 20, "--json", env=env)
    assert missing.returncode == 1 and json.loads(missing.stdout)["error"]["code"] == "invalid_request"
