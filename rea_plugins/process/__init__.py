"""The process plugin: the ``process`` scenario driver and its tools (capture and compare)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ScenarioDriver

TOOL_MODULES = ("rea_plugins.process.tools",)


@hookimpl
def rea_register_scenario_drivers(register: Callable[[ScenarioDriver], None]) -> None:
    from rea_plugins.process.driver import ProcessDriver

    register(ProcessDriver())
