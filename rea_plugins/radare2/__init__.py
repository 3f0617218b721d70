"""The radare2 analysis provider: radare2 runs in a worker process rea owns (never in the server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import AnalysisProvider
    from rea.plugin import SettingSpec


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.radare2.provider import Radare2Provider

    register(Radare2Provider())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.radare2.options import SETTINGS

    for spec in SETTINGS:
        register(spec)
