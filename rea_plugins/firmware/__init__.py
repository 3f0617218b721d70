"""The firmware plugin: an image's regions and its extraction with unblob, owned and sandboxed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.firmware.tools import TOOLS

    for tool in TOOLS:
        register(tool)
