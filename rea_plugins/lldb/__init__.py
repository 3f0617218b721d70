"""The lldb plugin: a dynamic provider that observes native calls under LLDB (``observe_native_calls``), and debug
sessions that keep a program stopped between calls (the ``debug_*`` tools, toolset ``debug``).

LLDB (the ``lldb-for-pwndbg`` wheel, extra ``rea-reverse[lldb]``) is imported only in the worker process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import AnalysisProvider
    from rea.plugin import SettingSpec
    from rea.plugin import ToolDef


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.lldb.provider import LldbProvider

    register(LldbProvider())


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.lldb.debug import TOOLS
    from rea_plugins.lldb.tool import OBSERVE_NATIVE_CALLS

    register(OBSERVE_NATIVE_CALLS)
    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.lldb.client import ATTACH
    from rea_plugins.lldb.client import MEMORY_LIMIT

    register(MEMORY_LIMIT)
    register(ATTACH)
