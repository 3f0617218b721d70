"""The Go plugin: a Go binary's build information and function table (rea.operations.golang), on ELF, PE, Mach-O."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.golang.tools import TOOLS

    for tool in TOOLS:
        register(tool)
