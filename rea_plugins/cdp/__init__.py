"""The cdp plugin: browser analysis over the Chrome DevTools Protocol (tools and a browser scenario driver)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ScenarioDriver
    from rea.plugin import SettingSpec

TOOL_MODULES = ("rea_plugins.cdp.tools", "rea_plugins.cdp.pagetools")


@hookimpl
def rea_register_scenario_drivers(register: Callable[[ScenarioDriver], None]) -> None:
    from rea_plugins.cdp.scenario import BrowserScenarioDriver

    register(BrowserScenarioDriver())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.cdp.browser import SETTINGS

    for setting in SETTINGS:
        register(setting)
