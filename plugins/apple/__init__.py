"""The Apple plugin: Mach-O slices and load commands, code signatures, plists, keyed archives, Objective-C metadata
and bundle dylib resolution, read from the bytes on any host (LIEF, plistlib, bpylist2, signify)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target, TargetView, ToolDef

# The tool modules (and LIEF, bpylist2, signify through them) are imported when a hook runs, never at plugin load.

_MACHO = (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.apple.tools import TOOLS

    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    """A Mach-O file (thin or universal; a Java class file shares 0xcafebabe but lists few slices and a version)."""
    if target.is_directory or head[:4] not in _MACHO:
        return None
    if head[:4] == b"\xca\xfe\xba\xbe" and int.from_bytes(head[4:8], "big") > 64:
        return None  # a Java class file: 0xcafebabe followed by its version
    from rea_plugins.apple.tools import TOOLS

    from rea.plugin import TargetView

    return [
        TargetView(
            kind="apple-macho",
            summary="An Apple Mach-O: slices, load commands, code signature, Objective-C classes and bundle dylibs.",
            tools=[t.name for t in TOOLS],
        )
    ]
