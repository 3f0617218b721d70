"""The corpus plugin: the same per-binary analysis over thousands of files, on Dask, into a SQLite index."""

from __future__ import annotations

from collections.abc import Callable

from rea_plugins.corpus.tools import TOOLS

from rea import hookimpl
from rea.catalog.tool import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    for tool in TOOLS:
        register(tool)
