"""The cdp plugin: browser analysis over the Chrome DevTools Protocol (tools and a browser scenario driver)."""

from __future__ import annotations

from collections.abc import Callable

from rea_plugins.cdp.browser import SETTINGS
from rea_plugins.cdp.scenario import BrowserScenarioDriver
from rea_plugins.cdp.tools import TOOLS

from rea import hookimpl
from rea.catalog.tool import ToolDef
from rea.config import SettingSpec
from rea.scenarios import ScenarioDriver


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_register_scenario_drivers(register: Callable[[ScenarioDriver], None]) -> None:
    register(BrowserScenarioDriver())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    for setting in SETTINGS:
        register(setting)
