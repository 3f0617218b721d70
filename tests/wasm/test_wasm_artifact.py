"""inspect_wasm_artifact on a module built here with clang, through the MCP SDK client, checked against its
source: the exported functions, the host import, who calls whom, the string and the function that uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import wasmfixtures

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from tests.mcp.harness import call_structured
from tests.mcp.harness import connect


def test_module_through_the_sdk_client(wasm_module: Path) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with connect() as client:
            whole = await call_structured(client, "inspect_wasm_artifact", {"path": str(wasm_module)})
            one = await call_structured(
                client, "inspect_wasm_artifact", {"path": str(wasm_module), "function": "twice_answer"}
            )
            result = await client.call_tool("inspect_wasm_artifact", {"path": str(wasm_module)})
            size = len(msgspec.json.encode(result.structured_content))
            # The module's functions answer the native tools once it is open.
            await call_structured(client, "open_binary", {"path": str(wasm_module)})
            callers = await call_structured(client, "procedure_callers", {"procedure": "answer"})
            assert [c["name"] for c in callers["normalized_result"]["callers"]] == ["twice_answer"]
            return whole["normalized_result"], one["normalized_result"], size

    result, one, size = anyio.run(main)
    assert size < 16_000  # the default answer stays lean
    exports = {e["name"] for e in result["exports"]["items"] if e["kind"] == "func"}
    assert exports >= wasmfixtures.EXPORTED_FUNCTIONS
    assert [(i["module"], i["name"]) for i in result["imports"]["items"]] == [wasmfixtures.IMPORT]
    functions = {f["name"]: f for f in result["functions"]["items"]}
    assert functions["twice_answer"]["calls"] == ["answer"]
    assert functions["answer"]["called_by"] == ["twice_answer"]
    assert functions["greet"]["calls"] == ["env.host_log"]
    assert functions["answer"]["signature"] == "(i32) -> (i32)"
    (greeting,) = [s for s in result["strings"]["items"] if s["value"] == wasmfixtures.GREETING]
    assert greeting["used_by"] == ["greet"]
    assert {"name", "producers"} <= set(result["custom_sections"])
    assert any("clang" in p["name"] for p in result["producers"]["processed_by"])
    assert result["memories"][0]["min_pages"] >= 1
    text = [i["text"] for i in one["disassembly"]["instructions"]["items"]]
    assert text.count("call answer") == 2 and text[-1] == "end"


def test_native_tools_on_the_open_module(wasm_module: Path, rea_session: Session) -> None:
    """open_binary picks the wasm provider; list_procedures, callers, callees, instructions and strings answer."""
    opened = call_tool(rea_session, "open_binary", {"path": str(wasm_module)}).structured or {}
    assert opened["analysis_provider_binding"]["provider"]["id"] == "wasm"

    def result(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        out = call_tool(rea_session, tool, args).evidence
        assert out is not None
        return dict(msgspec.to_builtins(out.normalized_result))

    procedures = {p["name"]: p for p in result("list_procedures", {})["procedures"]}
    assert set(procedures) >= wasmfixtures.EXPORTED_FUNCTIONS
    assert procedures["env.host_log"]["kind"] == "import"
    callers = result("procedure_callers", {"procedure": "answer"})["callers"]
    assert [c["name"] for c in callers] == ["twice_answer"] and len(callers[0]["call_sites"]) == 2
    callees = result("procedure_callees", {"procedure": "greet"})["callees"]
    assert [(c["name"], c["kind"]) for c in callees] == [("env.host_log", "import")]
    text = [i["text"] for i in result("read_function_instructions", {"procedure": "twice_answer"})["instructions"]]
    assert text.count("call answer") == 2
    strings = result("list_strings", {})["strings"]
    assert [s["value"] for s in strings] == [wasmfixtures.GREETING]
    # The open module is inspect_wasm_artifact's default.
    assert result("inspect_wasm_artifact", {"pattern": "greet"})["functions"]["total"] == 1


def test_filter_and_typed_errors(wasm_module: Path, rea_session: Session, tmp_path: Path) -> None:
    out = call_tool(rea_session, "inspect_wasm_artifact", {"path": str(wasm_module), "pattern": "answer"})
    assert out.evidence is not None
    names = [f["name"] for f in msgspec.to_builtins(out.evidence.normalized_result)["functions"]["items"]]
    assert names == ["answer", "twice_answer"]
    with pytest.raises(ReaError) as missing:
        call_tool(rea_session, "inspect_wasm_artifact", {"path": str(wasm_module), "function": "nope"})
    assert missing.value.code == "invalid_request"
    text = tmp_path / "module.wat"
    text.write_text("(module)")
    with pytest.raises(ReaError) as not_binary:
        call_tool(rea_session, "inspect_wasm_artifact", {"path": str(text)})
    assert not_binary.value.code == "unsupported_target"
