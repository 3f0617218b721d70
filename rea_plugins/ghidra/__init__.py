"""The Ghidra analysis provider: Ghidra runs headless (pyghidra) in a worker rea owns, started on first query."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import AnalysisProvider
    from rea.plugin import SettingSpec


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.ghidra.provider import GhidraProvider

    register(GhidraProvider())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.ghidra.settings import SETTINGS

    for spec in SETTINGS:
        register(spec)
