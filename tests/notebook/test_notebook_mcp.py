"""Annotations across MCP connections (real `rea serve` processes over stdio), on native, angr and radare2."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import anyio
import pytest

from tests.mcp.harness import connect
from tests.mcp.harness import normalized
from tests.mcp.harness import structured
from tests.radare2.conftest import require_radare2


@pytest.mark.parametrize("provider", ["native", "angr", "radare2"])
def test_a_rename_is_seen_everywhere_from_a_new_connection(provider: str, elf: str, tmp_path: Path) -> None:
    if provider == "angr" and importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")
    if provider == "radare2":
        require_radare2()
    # Complete records: the annotation revision a dossier was made at is one of its parameters.
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "annotations"), "REA_RESULT_PRESENTATION": "complete"}

    async def main() -> None:
        async with connect(**env) as first:
            await first.call_tool("open_binary", {"path": elf, "provider_id": provider})
            target = normalized(await first.call_tool("procedure_address", {"procedure": "compute_checksum"}))
            renamed = await first.call_tool(
                "set_address_name", {"address": target["address"], "name": "checksum_string"}
            )
            assert normalized(renamed)["value"] == "checksum_string"
            bad = await first.call_tool("set_address_name", {"address": target["address"], "name": "no way"})
            assert bad.is_error and json.loads(bad.content[0].text)["error"]["code"] == "invalid_request"
        async with connect(**env) as second, connect(**env) as third:
            await second.call_tool("open_binary", {"path": elf, "provider_id": provider})
            await third.call_tool("open_binary", {"path": elf, "provider_id": provider})
            listed = normalized(await second.call_tool("list_procedures", {"limit": 1000}))["procedures"]
            assert [p["name"] for p in listed if p["address"] == target["address"]] == ["checksum_string"]
            info = normalized(await second.call_tool("procedure_info", {"procedure": "checksum_string"}))
            assert info["address"] == target["address"] and info["original_name"] == "compute_checksum"
            callers = normalized(await second.call_tool("procedure_callers", {"procedure": "strlen"}))["callers"]
            assert "checksum_string" in [c["name"] for c in callers]
            dossier = structured(
                await second.call_tool("analyze_function", {"procedure": "main", "include_assembly": False})
            )
            assert {
                "address": target["address"],
                "name": "checksum_string",
                "original_name": "compute_checksum",
            } in dossier["normalized_result"]["user_names"]
            assert dossier["parameters"]["annotation_revision"]
            if provider != "native":  # the engines' pseudo code names callees: the user's name replaces theirs
                code = normalized(await second.call_tool("procedure_pseudo_code", {"procedure": "main"}))
                assert "checksum_string" in code["text"] and "compute_checksum" not in code["text"], code["text"]
                own = normalized(await second.call_tool("procedure_pseudo_code", {"procedure": "checksum_string"}))
                assert "checksum_string" in own["text"] and "compute_checksum" not in own["text"], own["text"]
            # Each connection moves its own cursor.
            entry = normalized(await third.call_tool("current_address", {}))["address"]
            await second.call_tool("goto_address", {"address": target["address"]})
            assert normalized(await second.call_tool("current_procedure", {}))["procedure"]["name"] == "checksum_string"
            assert normalized(await third.call_tool("current_address", {}))["address"] == entry

    anyio.run(main)
