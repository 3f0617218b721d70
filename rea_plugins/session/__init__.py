"""The session plugin: open_binary, close_binary and enable_toolsets (defined in ``rea_plugins.session.tools``,
imported when the hook runs), the kernel's search_tools and call_tool_by_name, and the session's settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import SettingSpec
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea.plugin import CALL_TOOL_BY_NAME_DEF
    from rea.plugin import SEARCH_TOOLS_DEF
    from rea_plugins.session.tools import TOOLS

    for tool in TOOLS:
        register(tool)
    register(SEARCH_TOOLS_DEF)
    register(CALL_TOOL_BY_NAME_DEF)


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea.plugin import LEDGER_MEMORY_MB
    from rea.plugin import MAX_OPEN_TARGETS

    register(MAX_OPEN_TARGETS)
    register(LEDGER_MEMORY_MB)
