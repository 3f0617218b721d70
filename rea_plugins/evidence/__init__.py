"""The evidence plugin: registers the Evidence tools (defined in ``rea_plugins.evidence.tools``, imported when the
hook runs, so loading the plugin stays cheap) and the provenance resource."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ResourceSpec, ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea_plugins.evidence.tools import TOOLS

    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    from rea.plugin import PROVENANCE_URI, ResourceTemplateDef, read_provenance

    register(
        ResourceTemplateDef(
            uri_template=PROVENANCE_URI,
            name="provenance",
            title="A record's provenance",
            description="The artifact, provider and complete analysis profile a lean record's provenance id names.",
            reader=read_provenance,
        )
    )
