"""The SQLite plugin: a database's schema, row counts and bounded rows, read from an isolated copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.sqlite.tools import TOOLS

    for tool in TOOLS:
        register(tool)
