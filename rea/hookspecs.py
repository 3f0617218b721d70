"""Every hook a rea plugin may implement. Plugins write ``from rea.plugin import hookimpl``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

# The version of the plugin API (rea.plugin re-exports it as API_VERSION): a plugin may require a later one.
PLUGIN_API_VERSION = 1

if TYPE_CHECKING:
    from rea.catalog.projection import Projection
    from rea.catalog.prompt import PromptDef
    from rea.catalog.resource import ResourceSpec
    from rea.catalog.tool import ToolDef
    from rea.config import SettingSpec
    from rea.providers import AnalysisProvider
    from rea.scenarios import ScenarioDriver
    from rea.target import Target
    from rea.target import TargetView
    from rea.unpackers import Unpacker

hookspec = pluggy.HookspecMarker("rea")

# ---------------------------------------------------------------------------
# registration: each hook hands the plugin a ``register`` callable keyed by stable id
# ---------------------------------------------------------------------------


@hookspec
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    """Register analysis providers (static, deep or dynamic engines).

    :param register: call once per provider; a duplicate provider id is a registry error.

    .. versionadded:: 0.1
    """


@hookspec
def rea_register_unpackers(register: Callable[[Unpacker], None]) -> None:
    """Register artifact unpackers (archive readers such as ZIP or ASAR).

    :param register: call once per unpacker; a duplicate unpacker id is a registry error.

    .. versionadded:: 0.1
    """


@hookspec
def rea_register_scenario_drivers(register: Callable[[ScenarioDriver], None]) -> None:
    """Register browser or process scenario drivers.

    :param register: call once per driver; a duplicate driver id is a registry error.

    .. versionadded:: 0.1
    """


@hookspec
def rea_register_projections(register: Callable[[Projection], None]) -> None:
    """Register input-schema projections (``full``, ``compact``, ...).

    :param register: call once per projection; a duplicate projection id is a registry error.

    .. versionadded:: 0.1
    """


@hookspec
def rea_register_prompts(register: Callable[[PromptDef], None]) -> None:
    """Contribute MCP prompts: named workflows over the plugin's tools, as ``PromptDef`` values.

    A prompt is listed only while every tool it names is registered.

    :param register: call once per prompt; a duplicate prompt name is a registry error.

    .. versionadded:: 0.2
    """


@hookspec
def rea_register_resources(register: Callable[[ResourceSpec], None]) -> None:
    """Contribute MCP resources: ``ResourceDef`` (a fixed URI) or ``ResourceTemplateDef`` (a URI template) values.

    The server answers ``resources/list``, ``resources/templates/list`` and ``resources/read`` from them.

    :param register: call once per resource; a duplicate URI or URI template is a registry error.

    .. versionadded:: 0.3
    """


@hookspec
def rea_register_settings(register: Callable[[SettingSpec], None]) -> None:
    """Declare environment settings the plugin reads; rea validates each at startup.

    A setting is validated whether or not the plugin's engine is installed, so a bad value fails
    ``rea serve`` and ``rea doctor`` with ``configuration_invalid`` instead of being ignored.

    :param register: call once per setting; a duplicate setting name is a registry error.

    .. versionadded:: 0.2
    """


@hookspec
def rea_register_tools(register: Callable[[ToolDef], None]) -> None:
    """Contribute MCP tools (and their CLI commands) as ``ToolDef`` values.

    :param register: call once per tool; a duplicate tool name is a registry error.

    .. versionadded:: 0.1
    """


# ---------------------------------------------------------------------------
# dispatch: pick-one hooks
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def rea_select_unpacker(target: Target, head: bytes) -> Unpacker | None:
    """Choose the unpacker for an artifact; return None to pass.

    Stops at first non-None result.

    :param target: the identified artifact.
    :param head: its first bytes (empty for directories).

    .. versionadded:: 0.1
    """


# ---------------------------------------------------------------------------
# description: what else a target is
# ---------------------------------------------------------------------------


@hookspec
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    """Say which other reading of ``target`` the plugin offers (a .NET assembly in a PE, an Android package in
    a ZIP); ``binary_overview`` and ``inspect_artifact`` list every view with its tools.

    :param target: the identified file.
    :param head: its first bytes (up to 4 KiB; empty for directories).
    :return: the views, or None (or an empty list) when the plugin has no other reading of it.

    .. versionadded:: 0.3
    """
