"""The JavaScript application plugin: static application graphs and the workflows over them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import PromptDef
    from rea.plugin import SettingSpec

TOOL_MODULES = ("rea_plugins.javascript.tools",)


@hookimpl
def rea_register_prompts(register: Callable[[PromptDef], None]) -> None:
    from rea_plugins.javascript.prompts import prompts

    for prompt in prompts():
        register(prompt)


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.javascript.settings import WAKARU_MEMORY_MB
    from rea_plugins.javascript.settings import WAKARU_PATH
    from rea_plugins.javascript.settings import WORKERS

    for setting in (WORKERS, WAKARU_PATH, WAKARU_MEMORY_MB):
        register(setting)
