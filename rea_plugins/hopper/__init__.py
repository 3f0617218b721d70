"""The Hopper analysis provider: Hopper Disassembler (macOS) with rea's bridge script, launched on first query."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import AnalysisProvider
    from rea.plugin import SettingSpec


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.hopper.provider import HopperProvider

    register(HopperProvider())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.hopper.settings import SETTINGS

    for spec in SETTINGS:
        register(spec)
