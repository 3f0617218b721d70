"""The process plugin: the ``process`` scenario driver and its tools (capture and compare)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ScenarioDriver, ToolDef


@hookimpl
def rea_register_scenario_drivers(register: Callable[[ScenarioDriver], None]) -> None:
    from rea_plugins.process.driver import ProcessDriver

    register(ProcessDriver())


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.process.tools import TOOLS

    for tool in TOOLS:
        register(tool)
