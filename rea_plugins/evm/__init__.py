"""The EVM plugin: a contract's interface and storage layout from its bytecode, with evmole."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.evm.tools import TOOLS

    for tool in TOOLS:
        register(tool)
