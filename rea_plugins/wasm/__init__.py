"""The WebAssembly plugin: a module's imports, exports, functions (disassembled, with callers and callees),
memories, strings and custom sections, read with wasm-tools (a pure-Python decoder; nothing is executed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.wasm.tools import TOOLS

    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_register_analysis_providers(register: Callable[[Any], None]) -> None:
    from rea_plugins.wasm.provider import WasmProvider

    register(WasmProvider())
