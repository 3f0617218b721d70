"""The crash tool family: inspect_recorded_crash (its handler and LIEF load on the first call)."""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.crash.model import RecordedCrash

FAMILY = "crash"


def _count(description: str, default: int, maximum: int = 1000) -> JSONObject:
    # A JSON Schema fragment of the input schema (JSON Schema's vocabulary, not a rea record).
    return {"type": "integer", "minimum": 0, "maximum": maximum, "default": default, "description": description}


INSPECT_RECORDED_CRASH = ToolDef(
    name="inspect_recorded_crash",
    family=FAMILY,
    title="Inspect Recorded Crash",
    description=(
        "A recorded crash (an ELF core file): every thread's signal, registers and backtrace, the faulting address, "
        "the mapped files, and with the executable the procedure and instruction at each thread's PC."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "The ELF core file the crashed process left."},
            "executable_path": {
                "type": "string",
                "minLength": 1,
                "description": "The crashed program; default: the open binary if it is.",
            },
            "thread_offset": _count("Threads to skip.", 0),
            "thread_limit": _count("Most threads to list (the crashed one first).", 4),
            "mapping_offset": _count("Mapped files to skip.", 0),
            "mapping_limit": _count("Most mapped files to list.", 20),
            "max_frames": _count("Most frames per backtrace.", 16, 256),
            "registers": {"type": "boolean", "default": True, "description": "List every register of each thread."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    result_type=RecordedCrash,
    handler=lazy_handler("rea_plugins.crash.inspect", "handle"),
    effects=ToolEffects(records_evidence=True),
    cli_subject="path",
    examples=({"path": "/var/crash/core.1234"}, {"path": "/var/crash/core.1234", "executable_path": "/opt/app/server"}),
)

TOOLS = (INSPECT_RECORDED_CRASH,)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
