"""The scripting plugin: ``run_analysis_script`` ("code mode"), a Python script over the read-only tools.

The script runs in an owned, sandboxed worker and reaches the session only through the worker's pipe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import SettingSpec

TOOL_MODULES = ("rea_plugins.scripting.tool",)


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.scripting.settings import SETTINGS

    for spec in SETTINGS:
        register(spec)
