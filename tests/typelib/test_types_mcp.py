"""Types through MCP (real `rea serve` processes over stdio): declared, applied to a procedure and a datum,
shown by every provider, applied to angr's decompiler, and carried in an Evidence bundle."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.mcp.harness import normalized
from tests.mcp.harness import structured
from tests.radare2.conftest import require_radare2
from tests.typelib.conftest import OPTS_DECL

PROTOTYPE = "int apply_opts(opts_t *opts)"


def _require(provider: str) -> None:
    if provider == "angr" and importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")
    if provider == "radare2":
        require_radare2()


async def _declare(client: Any) -> None:
    declared = normalized(await client.call_tool("declare_c_types", {"declarations": OPTS_DECL}))
    assert [d["name"] for d in declared["declared"]] == ["struct opts"]
    typedef = normalized(await client.call_tool("declare_c_types", {"declarations": "typedef struct opts opts_t;"}))
    assert typedef["type_count"] == 2 and typedef["annotation_revision"]


@pytest.mark.parametrize("provider", ["native", "angr", "radare2"])
def test_a_prototype_and_a_typed_datum_show_on_every_provider(provider: str, opts_program: str, tmp_path: Path) -> None:
    _require(provider)
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "annotations")}

    async def main() -> None:
        async with connect(**env) as client:
            await client.call_tool("open_binary", {"path": opts_program, "provider_id": provider})
            bad = error_of(
                await client.call_tool("declare_c_types", {"declarations": "struct x {\n  int a;\n  foo_t b;\n};"})
            )
            assert bad["code"] == "invalid_request" and (bad["details"]["line"], bad["details"]["column"]) == (3, 3)
            await _declare(client)
            # The signature note becomes the prototype.
            await client.call_tool("annotate_native_function", {"procedure": "apply_opts", "signature": PROTOTYPE})
            set_proto = normalized(await client.call_tool("set_function_prototype", {"procedure": "apply_opts"}))
            assert set_proto["prototype"]["parameters"] == [{"name": "opts", "type": "opts_t *"}]
            info = normalized(await client.call_tool("procedure_info", {"procedure": "apply_opts"}))
            assert info["signature"] == PROTOTYPE and info["signature_source"] == "user"
            assert info["prototype"]["text"] == PROTOTYPE and info["prototype"]["return_type"] == "int"
            missing = error_of(await client.call_tool("inspect_type", {"name": "struct other"}))
            assert missing["code"] == "invalid_request" and "not declared" in missing["message"]
            layout = normalized(await client.call_tool("inspect_type", {"name": "opts_t"}))
            assert (layout["size"], layout["abi"]) == (32, "lp64")
            assert [f["offset"] for f in layout["fields"]] == [0, 4, 8, 16, 24]
            # The global struct, read as the declared type from the file's bytes.
            names = normalized(await client.call_tool("list_names", {"limit": 1000}))["names"]
            at = next(n["address"] for n in names if n["name"] == "global_opts")
            typed = normalized(await client.call_tool("set_data_type", {"address": at, "type": "struct opts"}))
            assert typed["size"] == 32
            datum = normalized(await client.call_tool("inspect_native_data_type", {"address": at}))
            values = {v["name"]: v["value"] for v in datum["user_type"]["values"]}
            assert {k: values[k] for k in ("verbose", "level", "count")} == {"verbose": 1, "level": 2, "count": 7}
            # An import's prototype shows in the API surface.
            await client.call_tool(
                "set_function_prototype", {"procedure": "strlen", "prototype": "size_t strlen(const char *s)"}
            )
            api = normalized(await client.call_tool("inspect_native_api", {}))
            imports = {i["plain_name"]: i for lib in api["libraries"] for i in lib["imports"]}
            assert imports["strlen"]["prototype"] == "size_t strlen(const char *s)"
            listed = normalized(await client.call_tool("list_types", {"kind": "struct"}))
            assert [(t["name"], t["size"]) for t in listed["types"]] == [("struct opts", 32)]

    anyio.run(main)


def test_a_struct_parameter_changes_angrs_field_accesses(opts_program: str, tmp_path: Path) -> None:
    _require("angr")
    # Complete records: the annotation revision a result was made at is one of its parameters.
    env = {"REA_ANNOTATIONS_DIR": str(tmp_path / "annotations"), "REA_RESULT_PRESENTATION": "complete"}

    async def main() -> None:
        async with connect(**env) as client:
            await client.call_tool("open_binary", {"path": opts_program, "provider_id": "angr"})
            before = structured(await client.call_tool("procedure_pseudo_code", {"procedure": "apply_opts"}))
            assert "->field_8" in before["normalized_result"]["text"], before["normalized_result"]["text"]
            await _declare(client)
            await client.call_tool("set_function_prototype", {"procedure": "apply_opts", "prototype": PROTOTYPE})
            after = structured(await client.call_tool("procedure_pseudo_code", {"procedure": "apply_opts"}))
            text = after["normalized_result"]["text"]
            assert "opts->extensions" in text and "opts->level" in text and "->field_" not in text, text
            assert any("analyst's types" in lim for lim in after["limitations"]), after["limitations"]
            # New types, new Evidence: the cached untyped decompilation is never shown as current.
            assert after["evidence_id"] != before["evidence_id"]
            assert after["parameters"]["annotation_revision"] != before["parameters"].get("annotation_revision")
            # Clearing the prototype gives angr's own reading back.
            await client.call_tool("set_function_prototype", {"procedure": "apply_opts", "prototype": ""})
            cleared = normalized(await client.call_tool("procedure_pseudo_code", {"procedure": "apply_opts"}))
            assert "opts->extensions" not in cleared["text"]

    anyio.run(main)


def test_types_survive_a_bundle_into_another_store(opts_program: str, tmp_path: Path) -> None:
    path = str(tmp_path / "evidence.json")

    async def main() -> None:
        async with connect(REA_ANNOTATIONS_DIR=str(tmp_path / "one")) as first:
            await first.call_tool("open_binary", {"path": opts_program, "provider_id": "native"})
            await _declare(first)
            await first.call_tool("set_function_prototype", {"procedure": "apply_opts", "prototype": PROTOTYPE})
            await first.call_tool("procedure_info", {"procedure": "apply_opts"})
            exported = await first.call_tool("export_evidence_bundle", {"path": path})
            assert exported.is_error is False, exported.content
        async with connect(REA_ANNOTATIONS_DIR=str(tmp_path / "two")) as second:
            imported = structured(await second.call_tool("import_evidence_bundle", {"path": path}))
            report = (imported.get("structured") or imported)["annotations"][0]
            assert report["added_types"] == 2, report
            await second.call_tool("open_binary", {"path": opts_program, "provider_id": "native"})
            listed = normalized(await second.call_tool("list_types", {}))
            assert [t["name"] for t in listed["types"]] == ["opts_t", "struct opts"]
            info = normalized(await second.call_tool("procedure_info", {"procedure": "apply_opts"}))
            assert info["prototype"]["text"] == PROTOTYPE

    anyio.run(main)
