"""The WebAssembly tool family: inspect_wasm_artifact (its handler and wasm-tools load on the first call)."""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.wasm.model import WasmModule

FAMILY = "wasm"


# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
def _offset(what: str) -> JSONObject:
    return {"type": "integer", "minimum": 0, "default": 0, "description": f"{what} to skip."}


def _limit(what: str, default: int) -> JSONObject:
    return {"type": "integer", "minimum": 0, "maximum": 5000, "default": default, "description": f"Most {what}."}


INSPECT_WASM_ARTIFACT = ToolDef(
    name="inspect_wasm_artifact",
    family=FAMILY,
    title="Inspect WebAssembly Module",
    description=(
        "A WebAssembly module's imports, exports, functions (callers, callees, text disassembly of one), memories, "
        "strings and custom sections (names, producers), decoded without running it."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "The .wasm module; default: the open one."},
            "pattern": {"type": "string", "minLength": 1, "description": "Functions whose name contains this."},
            "offset": _offset("Functions"),
            "limit": _limit("functions", 50),
            "function": {
                "type": ["string", "integer"],
                "description": "A function (name or index) to disassemble.",
            },
            "instruction_offset": _offset("Instructions"),
            "instruction_limit": _limit("instructions", 200),
            "import_offset": _offset("Imports"),
            "import_limit": _limit("imports", 100),
            "export_offset": _offset("Exports"),
            "export_limit": _limit("exports", 100),
            "string_offset": _offset("Strings"),
            "string_limit": _limit("strings", 20),
            "max_file_bytes": {"type": "integer", "minimum": 8, "description": "File size bound (default 64 MiB)."},
        },
        "additionalProperties": False,
    },
    result_type=WasmModule,
    handler=lazy_handler("rea_plugins.wasm.inspect", "handle"),
    effects=ToolEffects(records_evidence=True),
    cli_subject="path",
    examples=({"path": "/srv/app/module.wasm"}, {"path": "/srv/app/module.wasm", "function": "answer"}),
)

TOOLS = (INSPECT_WASM_ARTIFACT,)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
