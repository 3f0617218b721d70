"""The emulation plugin: ``emulate_procedure`` and ``emulate_range`` over the open binary's load image.

Unicorn (the ``unicorn`` wheel, extra ``rea-reverse[emulation]``) is imported only in the emulation worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import SettingSpec
    from rea.plugin import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.emulation.tool import EMULATE_PROCEDURE
    from rea_plugins.emulation.tool import EMULATE_RANGE

    register(EMULATE_PROCEDURE)
    register(EMULATE_RANGE)


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.emulation.tool import MEMORY_LIMIT

    register(MEMORY_LIMIT)
