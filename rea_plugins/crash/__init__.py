"""The crash plugin: a recorded crash (an ELF core file) read with LIEF, its code located through the providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.crash.tools import TOOLS

    for tool in TOOLS:
        register(tool)
