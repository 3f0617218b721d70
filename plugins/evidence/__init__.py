"""The evidence plugin: registers the Evidence tools (defined in ``rea.catalog.evidence_defs``, imported when the
hook runs, so loading the plugin stays cheap)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rea import hookimpl

if TYPE_CHECKING:
    from rea.catalog.resource import ResourceSpec
    from rea.catalog.tool import ToolDef


@hookimpl
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    from rea.catalog.evidence_defs import TOOLS

    for tool in TOOLS:
        register(tool)


@hookimpl
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    from rea.catalog.resource import ResourceTemplateDef
    from rea.presentation import PROVENANCE_URI, read_provenance

    register(
        ResourceTemplateDef(
            uri_template=PROVENANCE_URI,
            name="provenance",
            title="A record's provenance",
            description="The artifact, provider and complete analysis profile a lean record's provenance id names.",
            reader=read_provenance,
        )
    )


def __getattr__(name: str) -> Any:
    # What this module defined before its tools moved (inspect_evidence_bundle, the ToolDefs) stays importable.
    from rea.catalog import evidence_defs

    try:
        return getattr(evidence_defs, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
