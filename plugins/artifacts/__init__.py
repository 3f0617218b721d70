"""The artifacts plugin: directory and ZIP-family unpackers, and the artifact tools."""

from __future__ import annotations

from collections.abc import Callable

from rea_plugins.artifacts.directory import DirectoryUnpacker
from rea_plugins.artifacts.tools import TOOLS
from rea_plugins.artifacts.zipformat import ZipUnpacker

from rea import hookimpl
from rea.catalog.tool import ToolDef
from rea.target import Target
from rea.unpackers import Unpacker

DIRECTORY = DirectoryUnpacker()
ZIP = ZipUnpacker()


@hookimpl
def rea_register_unpackers(register: Callable[[Unpacker], None]) -> None:
    register(DIRECTORY)
    register(ZIP)


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    for tool in TOOLS:
        register(tool)


@hookimpl(trylast=True)
def rea_select_unpacker(target: Target, head: bytes) -> Unpacker | None:
    # Built-in fallbacks: a plugin with a more specific reader for the same bytes answers first.
    for unpacker in (DIRECTORY, ZIP):
        if unpacker.claims(target, head):
            return unpacker
    return None
