"""The discovery plugin: ``binary_session`` (defined in ``rea_plugins.discovery.tools``, imported when the hook
runs) and the ``rea://tool/{name}`` resource, one tool's complete definition."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ResourceSpec
    from rea.plugin import Session
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.discovery.tools import binary_session_tool

    register(binary_session_tool())


TOOL_URI = "rea://tool/{name}"


def read_tool(session: Session, variables: dict[str, str]) -> str:
    """One tool's catalog entry: its canonical input schema and complete output schema, which tools/list gives
    in shorter forms, and its effects and requirements."""
    import msgspec

    from rea.plugin import ReaError
    from rea.plugin import tool_entry

    tool = session.registry.tools.get(variables["name"])
    if tool is None:
        raise ReaError(
            "invalid_request",
            f"no tool named {variables['name']!r}",
            remediation="Call search_tools or binary_session for the tool names.",
            details={"issues": [{"path": "name", "reason": "invalid_value", "message": "no such tool"}]},
        )
    return msgspec.json.encode(tool_entry(session.registry, tool)).decode()


@hookimpl
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    from rea.plugin import ResourceTemplateDef

    register(
        ResourceTemplateDef(
            uri_template=TOOL_URI,
            name="tool",
            title="A tool's complete definition",
            description="One tool's canonical input schema, complete output schema, effects and requirements.",
            reader=read_tool,
        )
    )
