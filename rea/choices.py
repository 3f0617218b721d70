"""A setting that is one of a few words (``REA_DEBUG_ATTACH=own``), spelled exactly; beside ``integer_setting``."""

from __future__ import annotations

from collections.abc import Iterable

from rea.config import SettingSpec


def choice_setting(name: str, choices: Iterable[str], default: str, description: str = "") -> SettingSpec:
    """The setting ``name``: one of ``choices`` (its constraint lists them in order), ``default`` when unset."""
    allowed = tuple(choices)

    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(raw)
        return raw

    return SettingSpec(
        name=name, constraint="one of " + ", ".join(allowed), parse=parse, description=description, default=default
    )
