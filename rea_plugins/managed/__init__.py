"""The managed (.NET) plugin: pure static reading of assemblies with dnfile and dncil, and workflows over it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea.plugin import TargetView

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.managed.tools",)

# IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR: the CLI header of a managed assembly.
_CLI_HEADER = 14


@hookimpl
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    """A PE whose optional header points at a CLI header is a .NET assembly (pefile reads the headers only)."""
    if not head.startswith(b"MZ"):
        return None
    import pefile  # type: ignore[import-untyped]

    try:
        pe = pefile.PE(data=head, fast_load=True)
        directories = pe.OPTIONAL_HEADER.DATA_DIRECTORY
        managed = len(directories) > _CLI_HEADER and directories[_CLI_HEADER].VirtualAddress != 0
    except (pefile.PEFormatError, AttributeError, IndexError):
        return None
    if not managed:
        return None
    from rea.plugin import TargetView
    from rea_plugins.managed.tools import TOOLS

    return [
        TargetView(
            kind="managed-assembly",
            summary=(
                "A .NET assembly: types, methods and their IL, string literals and who uses what, P/Invoke "
                "boundaries, without running it."
            ),
            tools=[t.name for t in TOOLS],
        )
    ]
