"""REA_RESULT_PRESENTATION=compact: the profile by its digest, the same identity, the record one reference away."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from rea.catalog.schemas import shallow_output
from rea.errors import ReaError
from rea.operations.shapes import Procedures
from rea.presentation import compact_evidence_output_schema, present
from tests.mcp.harness import connect, server_env


def test_compact_results_carry_the_profile_by_digest_with_the_same_identity(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect(REA_RESULT_PRESENTATION="compact") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            # The compact Evidence schema, with normalized_result typed as the tool's shape (issue 26).
            # Advertised in the shallow form of the complete schema (issue 44).
            assert tools["list_procedures"].output_schema == shallow_output(compact_evidence_output_schema(Procedures))
            assert tools["list_procedures"].output_schema != shallow_output(compact_evidence_output_schema())
            assert tools["binary_session"].output_schema != shallow_output(compact_evidence_output_schema())
            opened = (await client.call_tool("open_binary", {"path": str(hello_elf)})).structured_content
            profile = opened["analysis_provider_binding"]["analysis_profile"]
            # The SDK client validates every result against the advertised (compact) output schema.
            page = await client.call_tool("list_procedures", {"limit": 3})
            record = page.structured_content
            assert page.is_error is False and json.loads(page.content[0].text) == record
            assert record["analysis_profile"] == {"digest": profile["digest"], "presentation": "digest"}
            # The retained record is the complete one, under the same id.
            bundle = (await client.call_tool("get_evidence_bundle", {})).structured_content
            kept = next(r for r in bundle["records"] if r["evidence_id"] == record["evidence_id"])
            assert kept["analysis_profile"] == profile
            assert {**kept, "analysis_profile": record["analysis_profile"]} == record
            view = await client.call_tool(
                "inspect_analysis_view", {"source": {"kind": "retained-evidence", "evidence_id": record["evidence_id"]}}
            )
            assert view.structured_content["normalized_result"]["parent_evidence_id"] == record["evidence_id"]
            session = (await client.call_tool("binary_session", {})).structured_content
            assert session["settings"]["result_presentation"] == "compact"

    anyio.run(main)


def test_the_cli_presents_the_same_way(hello_elf: Path, tmp_path: Path) -> None:
    def run(presentation: str) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "rea", "procedure-info", str(hello_elf), "main", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            env=server_env(REA_RESULT_PRESENTATION=presentation, REA_CACHE_DIR=str(tmp_path)),
        )
        assert proc.returncode == 0, proc.stderr
        doc: dict[str, Any] = json.loads(proc.stdout)
        return doc

    complete, compact = run("complete"), run("compact")
    assert compact["evidence_id"] == complete["evidence_id"]
    assert compact["analysis_profile"]["digest"] == complete["analysis_profile"]["digest"]
    assert len(json.dumps(compact)) < len(json.dumps(complete)) - 500
    jsonschema.validate(compact, compact_evidence_output_schema())
    bad = subprocess.run(
        [sys.executable, "-m", "rea", "procedure-info", str(hello_elf), "main", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=server_env(REA_RESULT_PRESENTATION="tiny", REA_CACHE_DIR=str(tmp_path)),
    )
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["code"] == "configuration_invalid"


def test_presentation_leaves_other_results_alone() -> None:
    plain = {"closed": True}
    assert present(plain, "compact") is plain
    unbound = {"evidence_id": "ev_" + "0" * 64, "normalized_result": {}, "analysis_profile": None}
    assert present(unbound, "compact") == unbound


def test_an_invalid_presentation_stops_the_server() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rea", "serve"],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(REA_RESULT_PRESENTATION="short"),
    )
    assert proc.returncode != 0 and "REA_RESULT_PRESENTATION" in proc.stderr
    with pytest.raises(ReaError):
        from rea.config import load_settings

        load_settings({"REA_RESULT_PRESENTATION": "short"})
