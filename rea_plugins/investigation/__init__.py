"""The investigation plugin: an investigation's memory (residual unknowns), reconstruction ledgers and coverage,
and findings across versions. Pure Evidence logic: no engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import ResourceDef
from rea.plugin import ResourceSpec
from rea.plugin import ResourceTemplateDef
from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import PromptDef
    from rea.plugin import Session

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.investigation.tools",)


def _active(session: Session, variables: dict[str, str]) -> str:
    from rea_plugins.investigation import registry_tools

    return registry_tools.read_active(session, variables)


def _one(session: Session, variables: dict[str, str]) -> str:
    from rea_plugins.investigation import registry_tools

    return registry_tools.read_unknown(session, variables)


RESOURCES = (
    ResourceDef(
        uri="rea://unknowns/active",
        name="active_unknowns",
        title="Active residual unknowns",
        description="Unresolved unknown heads of the open target (every target's when none is open).",
        reader=_active,
    ),
    ResourceTemplateDef(
        uri_template="rea://unknown/{unknown_id}",
        name="unknown",
        title="One residual unknown",
        description="An unknown's whole revision history, oldest first.",
        reader=_one,
    ),
)


@hookimpl
def rea_register_prompts(register: Callable[[PromptDef], None]) -> None:
    from rea_plugins.investigation.prompts import PROMPTS

    for prompt in PROMPTS:
        register(prompt)


@hookimpl
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    for resource in RESOURCES:
        register(resource)
