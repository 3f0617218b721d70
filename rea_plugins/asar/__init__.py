"""The asar plugin: Electron ASAR archives as an artifact unpacker, with integrity verification."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea.plugin import Unpacker


@hookimpl
def rea_register_unpackers(register: Callable[[Unpacker], None]) -> None:
    from rea_plugins.asar.unpacker import UNPACKER

    register(UNPACKER)


@hookimpl
def rea_select_unpacker(target: Target, head: bytes) -> Unpacker | None:
    from rea_plugins.asar.unpacker import UNPACKER

    return UNPACKER if UNPACKER.claims(target, head) else None
