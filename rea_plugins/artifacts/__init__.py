"""The artifacts plugin: directory and ZIP-family unpackers, and the artifact tools."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea.plugin import Unpacker

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.artifacts.tools",)


@functools.cache
def unpackers() -> tuple[Unpacker, Unpacker]:
    """The directory and ZIP unpackers (one of each per process), imported when first needed."""
    from rea_plugins.artifacts.directory import DirectoryUnpacker
    from rea_plugins.artifacts.zipformat import ZipUnpacker

    return DirectoryUnpacker(), ZipUnpacker()


@hookimpl
def rea_register_unpackers(register: Callable[[Unpacker], None]) -> None:
    for unpacker in unpackers():
        register(unpacker)


@hookimpl(trylast=True)
def rea_select_unpacker(target: Target, head: bytes) -> Unpacker | None:
    # Built-in fallbacks: a plugin with a more specific reader for the same bytes answers first.
    for unpacker in unpackers():
        if unpacker.claims(target, head):
            return unpacker
    return None
