"""REA_RESULT_PRESENTATION: lean (the default: provenance by id, only the envelope fields that say something),
complete (the contract's record) and compact (the profile by its digest); the same identity in each, the complete
record one reference away."""

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
from rea.operations.shapes import ProcedureRows
from rea.operations.shapes import Procedures
from rea.presentation import compact_evidence_output_schema
from rea.presentation import lean_evidence_output_schema
from rea.presentation import present
from tests.mcp.harness import connect
from tests.mcp.harness import server_env

# Issue 44: what a result's envelope (the record but its normalized_result) and open_binary may cost by default.
LEAN_ENVELOPE_BYTES = 400
OPEN_BINARY_BYTES = 800


def _wire(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def test_compact_results_carry_the_profile_by_digest_with_the_same_identity(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect(REA_RESULT_PRESENTATION="compact") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            # The compact Evidence schema, with normalized_result typed as the tool's shape (issue 26).
            # Advertised in the shallow form of the complete schema (issue 44).
            assert tools["list_procedures"].output_schema == shallow_output(
                compact_evidence_output_schema((Procedures, ProcedureRows))
            )
            assert tools["list_procedures"].output_schema != shallow_output(compact_evidence_output_schema())
            assert tools["binary_session"].output_schema != shallow_output(compact_evidence_output_schema())
            opened = (await client.call_tool("open_binary", {"path": str(hello_elf)})).structured_content
            profile = opened["analysis_provider_binding"]["analysis_profile"]
            assert "parameters" in profile  # open_binary gives the profile whole but under lean
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
    def run(presentation: str | None) -> dict[str, Any]:
        chosen = {} if presentation is None else {"REA_RESULT_PRESENTATION": presentation}
        proc = subprocess.run(
            [sys.executable, "-m", "rea", "procedure-info", str(hello_elf), "main", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            env=server_env(**chosen, REA_CACHE_DIR=str(tmp_path)),
        )
        assert proc.returncode == 0, proc.stderr
        doc: dict[str, Any] = json.loads(proc.stdout)
        return doc

    complete, compact, lean = run("complete"), run("compact"), run("lean")
    assert compact["evidence_id"] == complete["evidence_id"] == lean["evidence_id"]
    assert lean["normalized_result"] == complete["normalized_result"] and "analysis_profile" not in lean
    jsonschema.validate(lean, lean_evidence_output_schema())
    # Unset, the CLI prints the complete record: a command is its own session, its output the only place the
    # provenance is said.
    assert run(None) == complete
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
    assert present(plain, "lean") is plain
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


def test_lean_is_the_default_and_its_envelope_fits(hello_elf: Path) -> None:
    """Over the SDK client (which validates structuredContent against the advertised output schema): a lean
    record's envelope within 400 B, open_binary within 800 B, the provenance said by open_binary, binary_session
    and a resource, and the complete record retained under the same id."""

    async def main() -> None:
        async with connect() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["list_procedures"].output_schema == shallow_output(
                lean_evidence_output_schema((Procedures, ProcedureRows))
            )
            opened = (await client.call_tool("open_binary", {"path": str(hello_elf)})).structured_content
            assert _wire(opened) <= OPEN_BINARY_BYTES, _wire(opened)
            binding = opened["analysis_provider_binding"]
            assert set(binding["analysis_profile"]) == {"digest", "presentation"}
            page = await client.call_tool("list_procedures", {"limit": 1})
            record = page.structured_content
            assert page.is_error is False and json.loads(page.content[0].text) == record
            envelope = {k: v for k, v in record.items() if k != "normalized_result"}
            assert _wire(envelope) <= LEAN_ENVELOPE_BYTES, envelope
            assert envelope == {
                "evidence_id": record["evidence_id"],
                "operation": "list_procedures",
                "provenance": binding["provenance"],
            }
            jsonschema.validate(record, lean_evidence_output_schema(Procedures))
            # The complete record is retained under the same id, with the provenance open_binary named.
            bundle = (await client.call_tool("get_evidence_bundle", {})).structured_content
            kept = next(r for r in bundle["records"] if r["evidence_id"] == record["evidence_id"])
            assert kept["normalized_result"] == record["normalized_result"]
            assert kept["analysis_profile"]["digest"] == binding["analysis_profile"]["digest"]
            assert kept["subject"]["digest"]["sha256"] == opened["target"]["sha256"]
            session = (await client.call_tool("binary_session", {})).structured_content
            assert session["settings"]["result_presentation"] == "lean"
            assert session["analysis_provider_binding"]["provenance"] == binding["provenance"]
            assert session["analysis_provider_binding"]["analysis_profile"] == kept["analysis_profile"]
            said = await client.read_resource(f"rea://provenance/{binding['provenance']}")
            provenance = json.loads(said.contents[0].text)
            assert provenance == {
                "id": binding["provenance"],
                "subject": kept["subject"],
                "provider": kept["provider"],
                "analysis_profile": kept["analysis_profile"],
            }

    anyio.run(main)


def test_a_lean_record_is_accepted_where_evidence_is_taken(hello_elf: Path) -> None:
    """compare_functions (and inspect_analysis_view's inline source) take a lean record by its retained original;
    one the session does not retain, or an edited one, is a typed error with a remediation."""

    async def main() -> None:
        async with connect() as client:
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            left = (await client.call_tool("analyze_function", {"procedure": "compute"})).structured_content
            right = (await client.call_tool("analyze_function", {"procedure": "helper_add"})).structured_content
            assert "analysis_profile" not in left and "provenance" in left
            compared = await client.call_tool("compare_functions", {"left": left, "right": right})
            assert compared.is_error is False, compared.content[0].text
            assert set(compared.structured_content["evidence_links"]) == {left["evidence_id"], right["evidence_id"]}
            view = await client.call_tool(
                "inspect_analysis_view", {"source": {"kind": "inline", "evidence": left}, "view": {"kind": "summary"}}
            )
            assert view.is_error is False, view.content[0].text
            edited = {**left, "operation": "list_procedures"}
            refused = await client.call_tool("compare_functions", {"left": edited, "right": right})
            error = json.loads(refused.content[0].text)["error"]
            assert refused.is_error and error["code"] == "evidence_integrity_mismatch"
            assert error["details"]["reason"] == "lean_record_mismatch"
        # Another session does not retain it.
        async with connect() as other:
            refused = await other.call_tool("compare_functions", {"left": left, "right": right})
            error = json.loads(refused.content[0].text)["error"]
            assert refused.is_error and error["code"] == "target_unavailable"
            assert error["details"]["reason"] == "not_retained" and "REA_RESULT_PRESENTATION=complete" in str(error)

    anyio.run(main)


def test_complete_is_still_available(hello_elf: Path) -> None:
    """REA_RESULT_PRESENTATION=complete restores the contract's complete record, self-authenticating."""

    async def main() -> None:
        async with connect(REA_RESULT_PRESENTATION="complete") as client:
            opened = (await client.call_tool("open_binary", {"path": str(hello_elf)})).structured_content
            binding = opened["analysis_provider_binding"]
            assert "parameters" in binding["analysis_profile"] and binding["selection_reason"]
            record = (await client.call_tool("list_procedures", {"limit": 1})).structured_content
            from rea.evidence import from_builtins
            from rea.evidence import provenance_id

            ev = from_builtins(record)  # authenticates: the complete record
            assert provenance_id(ev.subject, ev.provider, ev.analysis_profile) == binding["provenance"]
            assert record["predicate_type"] == "rea.analysis" and record["raw_result"] is None

    anyio.run(main)
