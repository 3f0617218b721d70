"""The refusals of a tool call by name: a name no tool has, and a tool whose toolset this server does not list."""

from __future__ import annotations

from rea.errors import ReaError
from rea.errors import issue


def unknown_tool(name: str, remediation: str, path: str = "name") -> ReaError:
    """No tool of this registry is called ``name``; ``remediation`` says where the caller finds the names."""
    return ReaError(
        "invalid_request",
        f"unknown tool {name[:80]!r}",
        remediation=remediation,
        details={"issues": [issue(path, "invalid_value", f"no tool named {name[:80]!r}")]},
    )


def not_advertised(toolset: str, enabled: list[str], path: str = "name", tool: str | None = None) -> ReaError:
    """A toolset the operator left out (an explicit REA_MCP_TOOLSETS list names the others)."""
    what = f"{tool} is in the {toolset} toolset, which" if tool else f"the {toolset} toolset is one"
    return ReaError(
        "invalid_request",
        f"{what} this server does not advertise",
        remediation=f"Restart the server with {toolset} in REA_MCP_TOOLSETS (or rea serve --toolsets).",
        details={
            "issues": [issue(path, "invalid_value", f"toolset {toolset} is not advertised")],
            "toolset": toolset,
            "advertised_toolsets": list(enabled),
        },
    )
