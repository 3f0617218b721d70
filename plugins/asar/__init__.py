"""The asar plugin: Electron ASAR archives as an artifact unpacker, with integrity verification."""

from __future__ import annotations

from collections.abc import Callable

from rea_plugins.asar.unpacker import UNPACKER

from rea import hookimpl
from rea.target import Target
from rea.unpackers import Unpacker


@hookimpl
def rea_register_unpackers(register: Callable[[Unpacker], None]) -> None:
    register(UNPACKER)


@hookimpl
def rea_select_unpacker(target: Target, head: bytes) -> Unpacker | None:
    return UNPACKER if UNPACKER.claims(target, head) else None
