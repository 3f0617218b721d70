"""The evidence plugin: registers the Evidence tools (declared in ``rea_plugins.evidence.tools``, imported when a
tool is built, so loading the plugin stays cheap) and the provenance resource."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import ResourceSpec

TOOL_MODULES = ("rea_plugins.evidence.tools",)


@hookimpl
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    from rea.plugin import PROVENANCE_URI
    from rea.plugin import ResourceTemplateDef
    from rea.plugin import read_provenance

    register(
        ResourceTemplateDef(
            uri_template=PROVENANCE_URI,
            name="provenance",
            title="A record's provenance",
            description="The artifact, provider and complete analysis profile a lean record's provenance id names.",
            reader=read_provenance,
        )
    )
