"""The binary tool family: every native-analysis MCP tool and CLI command, engine-agnostic.

Tools are built only on the operations of docs/native-operations.md, so any provider that declares
them (native, angr, ...) serves them; the kernel reports availability from ``requires_operations``.

The family is laid out in rooms by what they answer, over a shared ``core`` that declares no tool: ``navigation``
(the inventory, listings, the cursor, the load image), ``notebook`` (what the analyst writes down), ``search`` (what
is in the code and data), ``graph`` (who calls and references what), ``compare`` (two answers side by side) and
``workflows`` (answers composed from many operations). A room imports the core and only the rooms listed before it
in docs/architecture.md. Each module of ``TOOL_MODULES`` declares its tools in ``tools()``; the kernel calls them
itself and records which module declared which tool, so running one tool imports that module only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rea.plugin import hookimpl

TOOL_MODULES: tuple[str, ...] = (
    "rea_plugins.binary.navigation.direct",
    "rea_plugins.binary.navigation.listing",
    "rea_plugins.binary.navigation.cursor",
    "rea_plugins.binary.navigation.stepping",
    "rea_plugins.binary.navigation.image",
    "rea_plugins.binary.navigation.layout",
    "rea_plugins.binary.notebook.notes",
    "rea_plugins.binary.notebook.types",
    "rea_plugins.binary.search.strings",
    "rea_plugins.binary.search.codesearch",
    "rea_plugins.binary.search.crypto",
    "rea_plugins.binary.graph.arrays",
    "rea_plugins.binary.graph.thunks",
    "rea_plugins.binary.graph.crossbinary",
    "rea_plugins.binary.graph.callgraph",
    "rea_plugins.binary.graph.callpaths",
    "rea_plugins.binary.graph.dataflow",
    "rea_plugins.binary.compare.functions",
    "rea_plugins.binary.compare.bindiff",
    "rea_plugins.binary.compare.similar",
    "rea_plugins.binary.compare.agreement",
    "rea_plugins.binary.workflows.composed",
    "rea_plugins.binary.workflows.api",
    "rea_plugins.binary.workflows.engine_facts",
)


@hookimpl
def rea_register_prompts(register: Callable[[Any], None]) -> None:
    from rea_plugins.binary.workflows.prompts import prompts

    for prompt in prompts():
        register(prompt)
