"""The SQLite plugin: a database's schema, row counts and bounded rows, read from an isolated copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea import hookimpl

if TYPE_CHECKING:
    from rea.catalog.tool import ToolDef
    from rea.target import Target, TargetView

MAGIC = b"SQLite format 3\x00"


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.sqlite.tools import TOOLS

    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    if not head.startswith(MAGIC):
        return None
    from rea.target import TargetView

    return [
        TargetView(
            kind="sqlite-database",
            summary="A SQLite database: its schema, row counts and rows (its WAL included), read from a copy.",
            tools=["inspect_sqlite_database"],
        )
    ]
