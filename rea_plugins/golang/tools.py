"""The Go tool family: inspect_go_binary (its handler and LIEF load on the first call)."""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.golang.model import GoBinary

FAMILY = "golang"


# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
def _page(description: str, default: int) -> JSONObject:
    return {"type": "integer", "minimum": 0, "maximum": 5000, "default": default, "description": description}


INSPECT_GO_BINARY = ToolDef(
    name="inspect_go_binary",
    family=FAMILY,
    title="Inspect Go Binary",
    description=(
        "A Go binary's build information (Go version, module, dependencies with versions and sums, build settings) "
        "and its function table (pclntab names and ranges), stripped or not, on ELF, PE and Mach-O."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "Go binary; default: the open binary."},
            "pattern": {"type": "string", "minLength": 1, "description": "Functions whose name contains this."},
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Functions to skip."},
            "limit": _page("Most functions to list.", 50),
            "dep_offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Dependencies to skip."},
            "dep_limit": _page("Most dependencies to list.", 100),
        },
        "additionalProperties": False,
    },
    result_type=GoBinary,
    handler=lazy_handler("rea_plugins.golang.inspect", "handle"),
    effects=ToolEffects(records_evidence=True),
    cli_subject="path",
    examples=({"path": "/opt/app/server"}, {"path": "/opt/app/server", "pattern": "main.", "limit": 200}),
)

TOOLS = (INSPECT_GO_BINARY,)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
