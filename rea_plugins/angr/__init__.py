"""The angr analysis provider: angr runs in a worker process rea owns (angr is never imported here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import AnalysisProvider
    from rea.plugin import SettingSpec


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.angr.provider import AngrProvider

    register(AngrProvider())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.angr.options import settings

    for spec in settings().values():
        register(spec)
