"""The binary tool family: every native-analysis MCP tool and CLI command, engine-agnostic.

Tools are built only on the operations of docs/native-operations.md, so any provider that declares
them (native, angr, ...) serves them; the kernel reports availability from ``requires_operations``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rea.plugin import hookimpl


@hookimpl
def rea_register_tools(register: Callable[[Any], None]) -> None:
    from rea_plugins.binary.compare import agreement, bindiff, similar
    from rea_plugins.binary.compare import functions as compare
    from rea_plugins.binary.graph import callgraph, callpaths, dataflow
    from rea_plugins.binary.navigation import cursor as navigation
    from rea_plugins.binary.navigation import direct, image, layout, stepping
    from rea_plugins.binary.notebook import notes as notebook
    from rea_plugins.binary.notebook import types
    from rea_plugins.binary.search import codesearch, crypto
    from rea_plugins.binary.workflows import api, engine_facts
    from rea_plugins.binary.workflows import composed as workflows

    for module in (
        direct,
        workflows,
        callgraph,
        compare,
        layout,
        navigation,
        stepping,
        notebook,
        types,
        image,
        engine_facts,
        callpaths,
        api,
        agreement,
        codesearch,
        bindiff,
        similar,
        dataflow,
        crypto,
    ):
        for tool in module.tools():
            register(tool)


@hookimpl
def rea_register_prompts(register: Callable[[Any], None]) -> None:
    from rea_plugins.binary.workflows.prompts import prompts

    for prompt in prompts():
        register(prompt)
