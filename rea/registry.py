"""Plugin loading (the ``rea`` entry-point group) and the registries of what plugins contribute."""

from __future__ import annotations

import importlib
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from typing import Any, TypeVar

import msgspec
import pluggy

from rea import hookspecs
from rea.catalog.projection import Projection
from rea.catalog.prompt import PromptDef
from rea.catalog.resource import ResourceSpec
from rea.catalog.tool import ToolDef
from rea.config import Settings, SettingSpec, load_settings
from rea.errors import ReaError
from rea.providers import AnalysisProvider
from rea.scenarios import ScenarioDriver
from rea.target import Target, TargetView
from rea.unpackers import Unpacker, read_head

ENTRY_POINT_GROUP = "rea"
PROVIDER_ID_MAX = 64


class PluginInfo(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    distribution: str | None
    version: str | None
    module: str
    hooks: tuple[str, ...]


class BrokenPlugin(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    distribution: str | None
    stage: str
    error: str


T = TypeVar("T")


# The first-party toolsets in the order they are listed (REA_MCP_TOOLSETS, binary_session, rea doctor).
TOOLSET_ORDER = (
    "session",
    "native",
    "notebook",
    "artifacts",
    "managed",
    "android",
    "javascript",
    "browser",
    "dynamic",
    "evidence",
    "investigation",
    "corpus",
)
# Toolsets a connection enables when it needs them (enable_toolsets, or calling one of their tools) rather than
# carrying their definitions in every request: families for one kind of target that binary_overview's and
# inspect_artifact's views point to, and long workflows over many inputs.
ON_DEMAND_TOOLSETS = ("managed", "android", "corpus", "investigation")


class Registry:
    """Everything the loaded plugins registered, keyed by stable id, with the plugin that owns it."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.plugins: dict[str, PluginInfo] = {}
        self.broken: list[BrokenPlugin] = []
        self.errors: list[ReaError] = []
        self.providers: dict[str, AnalysisProvider] = {}
        self.unpackers: dict[str, Unpacker] = {}
        self.drivers: dict[str, ScenarioDriver] = {}
        self.projections: dict[str, Projection] = {}
        self.tools: dict[str, ToolDef] = {}
        self.settings: dict[str, SettingSpec] = {}
        self.prompts: dict[str, PromptDef] = {}
        # Keyed by URI (fixed resources) or URI template.
        self.resources: dict[str, ResourceSpec] = {}
        self.owner: dict[tuple[str, str], str] = {}

    def provider(self, provider_id: str) -> AnalysisProvider | None:
        return self.providers.get(provider_id)

    def tool(self, name: str) -> ToolDef | None:
        return self.tools.get(name)

    def target_views(self, target: Target) -> list[TargetView]:
        """Every other reading of ``target`` the plugins offer (``rea_target_views``), naming registered tools only.

        A plugin whose hook raises is left out of the answer, never the cause of a failed call."""
        try:
            head = read_head(target)
        except ReaError:
            return []
        views: list[TargetView] = []
        answers = per_plugin(self.pm, "rea_target_views", lambda caller: caller(target=target, head=head))
        for _, found in answers:
            if isinstance(found, Exception):
                continue
            for view in (v for answer in found for v in answer or []):
                tools = [t for t in getattr(view, "tools", ()) if t in self.tools]
                if isinstance(view, TargetView) and tools:
                    views.append(msgspec.structs.replace(view, tools=tools))
        return sorted(views, key=lambda v: v.kind)

    def server_settings(self, env: Mapping[str, str]) -> Settings:
        """The MCP server's settings, validated against what the plugins registered (``rea serve``, ``rea doctor``)."""
        return load_settings(
            env,
            projections=tuple(sorted(self.projections)),
            declared=self.settings,
            toolsets=self.toolsets(),
            on_demand=ON_DEMAND_TOOLSETS,
        )

    def toolsets(self) -> tuple[str, ...]:
        """Every toolset a registered tool belongs to: the first-party ones in their order, then the rest."""
        present = {t.toolset_id for t in self.tools.values()}
        return (*(n for n in TOOLSET_ORDER if n in present), *sorted(present - set(TOOLSET_ORDER)))


def make_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("rea")
    pm.add_hookspecs(hookspecs)
    return pm


def _split_env(name: str) -> list[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def load(
    pm: pluggy.PluginManager | None = None, *, entry_points: bool = True, extra: list[tuple[str, object]] | None = None
) -> Registry:
    """Load plugins from the ``rea`` entry-point group (plus ``extra``) and collect their registrations.

    ``REA_DISABLE_PLUGINS=a,b`` blocks plugins by name; ``REA_LOAD_PLUGINS=a,b`` is an allow-list of
    entry-point names; ``REA_PLUGIN_MODULES=pkg.mod`` also loads modules that are not installed.
    A plugin that fails to import or whose hook raises is reported as broken; the rest keep working.
    """
    pm = pm or make_plugin_manager()
    blocked = set(_split_env("REA_DISABLE_PLUGINS") or [])
    allowed = _split_env("REA_LOAD_PLUGINS")
    for name in blocked:
        pm.set_blocked(name)
    reg = Registry(pm)
    candidates: list[tuple[str, str | None, str | None, Callable[[], object]]] = []
    if entry_points:
        # Reading a distribution's metadata parses its METADATA file: once per distribution, not per plugin.
        seen: dict[str, tuple[str, str]] = {}
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = version = None
            if ep.dist is not None:
                key = str(getattr(ep.dist, "_path", id(ep.dist)))
                if key not in seen:
                    seen[key] = (ep.dist.name, ep.dist.version)
                dist, version = seen[key]
            candidates.append((ep.name, dist, version, ep.load))
    for name, obj in extra or []:
        candidates.append((name, None, None, lambda obj=obj: obj))  # type: ignore[misc]
    # REA_PLUGIN_MODULES=pkg.mod,... loads uninstalled plugin modules (plugin development and tests).
    for module_name in _split_env("REA_PLUGIN_MODULES") or []:
        candidates.append(
            (module_name, None, None, lambda module_name=module_name: importlib.import_module(module_name))  # type: ignore[misc]
        )
    for name, dist, version, loader in candidates:
        if name in blocked or (allowed is not None and name not in allowed):
            continue
        if pm.has_plugin(name):  # idempotent: already loaded into this manager
            continue
        try:
            plugin = loader()
            pm.register(plugin, name=name)
        except Exception as exc:
            reg.broken.append(BrokenPlugin(name=name, distribution=dist, stage="import", error=_describe(exc)))
            continue
        hooks = tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or []))
        module = getattr(plugin, "__name__", type(plugin).__name__)
        reg.plugins[name] = PluginInfo(name=name, distribution=dist, version=version, module=module, hooks=hooks)
    pm.check_pending()
    _collect(reg)
    return reg


def _describe(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _collect(reg: Registry) -> None:
    kinds: list[tuple[str, str, type, dict[str, Any], Callable[[Any], str]]] = [
        ("rea_register_analysis_providers", "provider", AnalysisProvider, reg.providers, lambda p: p.descriptor.id),
        ("rea_register_unpackers", "unpacker", Unpacker, reg.unpackers, lambda u: u.descriptor.id),
        ("rea_register_scenario_drivers", "scenario driver", ScenarioDriver, reg.drivers, lambda d: d.descriptor.id),
        ("rea_register_projections", "projection", Projection, reg.projections, lambda p: p.descriptor.id),
        ("rea_register_tools", "tool", ToolDef, reg.tools, lambda t: t.name),
        ("rea_register_settings", "setting", SettingSpec, reg.settings, lambda s: s.name),
        ("rea_register_prompts", "prompt", PromptDef, reg.prompts, lambda p: p.name),
        ("rea_register_resources", "resource", ResourceSpec, reg.resources, lambda r: r.key),
    ]
    for hook_name, label, kind, table, key_of in kinds:
        for plugin_name, staged in _call_each(reg, hook_name):
            wrong = next((item for item in staged if not isinstance(item, kind)), None)
            if wrong is not None:
                # All or nothing per plugin and hook: half a plugin's tools would be a catalog nobody wrote.
                _broken(
                    reg, plugin_name, hook_name, f"registered a {type(wrong).__name__} where a {kind.__name__} belongs"
                )
                continue
            try:
                keyed = [(key_of(item), item) for item in staged]
            except Exception as exc:
                _broken(reg, plugin_name, hook_name, _describe(exc))
                continue
            for key, item in keyed:
                if label == "provider" and not valid_provider_id(key):
                    reg.errors.append(
                        ReaError(
                            "configuration_invalid",
                            f"plugin {plugin_name} registered provider id {key!r}, which is not ^[a-z][a-z0-9-]*$",
                            details={"settings": [{"setting": f"plugin:{plugin_name}", "constraint": "provider id"}]},
                        )
                    )
                    continue
                previous = reg.owner.get((label, key))
                if previous is not None:
                    reg.errors.append(
                        ReaError(
                            "configuration_invalid",
                            f"duplicate {label} id {key!r}: registered by plugin {previous} "
                            f"and by plugin {plugin_name}",
                            remediation=f"Disable one of them with REA_DISABLE_PLUGINS={plugin_name}.",
                            details={"kind": label, "id": key, "plugins": [previous, plugin_name]},
                        )
                    )
                    continue
                reg.owner[(label, key)] = plugin_name
                table[key] = item


def _call_each(reg: Registry, hook_name: str) -> list[tuple[str, list[Any]]]:
    """Call one registration hook once per implementing plugin; a plugin that raises is named as broken."""
    out: list[tuple[str, list[Any]]] = []
    for plugin_name, staged in per_plugin(reg.pm, hook_name, _staged_registration):
        if isinstance(staged, Exception):
            _broken(reg, plugin_name, hook_name, _describe(staged))
        else:
            out.append((plugin_name, staged))
    return out


def _staged_registration(caller: Callable[..., Any]) -> list[Any]:
    staged: list[Any] = []
    caller(register=staged.append)
    return staged


def per_plugin(
    pm: pluggy.PluginManager, hook_name: str, call: Callable[[Callable[..., Any]], T]
) -> Iterator[tuple[str, T | Exception]]:
    """``call`` with the hook's caller narrowed to one implementing plugin at a time (through pluggy: wrappers
    apply, arguments are pruned to what the implementation declares), and its result or the exception it raised."""
    impls = getattr(pm.hook, hook_name).get_hookimpls()
    plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]
    for impl in plain:
        others = [other.plugin for other in plain if other.plugin is not impl.plugin]
        try:
            result: T | Exception = call(pm.subset_hook_caller(hook_name, remove_plugins=others))
        except Exception as exc:
            result = exc
        yield pm.get_name(impl.plugin) or "?", result


def _broken(reg: Registry, plugin_name: str, stage: str, error: str) -> None:
    info = reg.plugins.get(plugin_name)
    reg.broken.append(
        BrokenPlugin(name=plugin_name, distribution=info.distribution if info else None, stage=stage, error=error)
    )


def valid_provider_id(value: str) -> bool:
    import re

    return (
        isinstance(value, str)
        and len(value) <= PROVIDER_ID_MAX
        and value != "auto"
        and re.fullmatch(r"[a-z][a-z0-9-]*", value) is not None
    )


_DEFAULT: Registry | None = None
_LOCK = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry, loaded once (idempotent)."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is None:
            _DEFAULT = load()
        return _DEFAULT


def reset_default_registry() -> None:
    global _DEFAULT
    with _LOCK:
        _DEFAULT = None
