"""The WebAssembly plugin: a module's imports, exports, functions (disassembled, with callers and callees),
memories, strings and custom sections, read with wasm-tools (a pure-Python decoder; nothing is executed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rea.plugin import hookimpl

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.wasm.tools",)


@hookimpl
def rea_register_analysis_providers(register: Callable[[Any], None]) -> None:
    from rea_plugins.wasm.provider import WasmProvider

    register(WasmProvider())
