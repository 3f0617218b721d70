"""The runtime plugin: JavaScript runtimes (Node, Electron) observed passively through the V8 inspector, and their
loaded scripts joined to the static application graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.runtime.tools import TOOLS

    for tool in TOOLS:
        register(tool)
