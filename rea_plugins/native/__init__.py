"""The ``native`` provider plugin: embedded LIEF + capstone analysis of ELF, PE and Mach-O.

Importing this module stays cheap: LIEF and capstone load on first use, inside the provider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import SettingSpec


@hookimpl
def rea_register_analysis_providers(register: Callable[[Any], None]) -> None:
    from rea_plugins.native.provider import NativeProvider

    register(NativeProvider())


@hookimpl
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    from rea_plugins.native.decompile import DECOMPILE_MEMORY_LIMIT
    from rea_plugins.native.decompile import DECOMPILE_TIMEOUT
    from rea_plugins.native.provider import MEMORY_LIMIT

    register(MEMORY_LIMIT)
    register(DECOMPILE_MEMORY_LIMIT)
    register(DECOMPILE_TIMEOUT)
