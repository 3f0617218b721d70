"""Plugin loading (the ``rea`` entry-point group) and the registries of what plugins contribute."""

from __future__ import annotations

import importlib
import os
import threading
import traceback
import types
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

import msgspec
import pluggy

from rea import hookspecs
from rea.catalog.tool import ToolDef
from rea.errors import ReaError

if TYPE_CHECKING:
    from rea.cache import AnalysisCache
    from rea.catalog.manifest import PluginSpecs
    from rea.catalog.manifest import ToolEntry
    from rea.catalog.manifest import ToolSpec
    from rea.catalog.projection import Projection
    from rea.catalog.prompt import PromptDef
    from rea.catalog.resource import ResourceSpec
    from rea.config import Settings
    from rea.config import SettingSpec
    from rea.providers import AnalysisProvider
    from rea.scenarios import ScenarioDriver
    from rea.target import Target
    from rea.target import TargetView
    from rea.unpackers import Unpacker

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
    "binary",
    "navigation",
    "notebook",
    "artifacts",
    "managed",
    "android",
    "apple",
    "javascript",
    "browser",
    "runtime",
    "dynamic",
    "debug",
    "emulation",
    "evidence",
    "scripting",
    "investigation",
    "corpus",
    "firmware",
    "evm",
    "sqlite",
    "golang",
    "crash",
    "wasm",
)
# Toolsets a connection enables when it needs them (enable_toolsets, or calling one of their tools) rather than
# carrying their definitions in every request: families for one kind of target that binary_overview's and
# inspect_artifact's views point to (.NET, Android, JavaScript applications, web pages), programs run or observed,
# the cursor a person steps through a program with (an agent names addresses), and long workflows over many
# inputs. Hosts warn above about 80 listed tools; search_tools with call_tool_by_name reach the others without a
# list change.
ON_DEMAND_TOOLSETS = (
    "managed",
    "android",
    "apple",
    "javascript",
    "browser",
    "runtime",
    "dynamic",
    "debug",
    "emulation",
    "navigation",
    "corpus",
    "investigation",
    "firmware",
    "evm",
    "sqlite",
    "golang",
    "crash",
    "wasm",
)


# The registration hooks, in the order the registry collects them (errors and broken plugins are reported in it).
KINDS: tuple[tuple[str, str], ...] = (
    ("rea_register_analysis_providers", "provider"),
    ("rea_register_unpackers", "unpacker"),
    ("rea_register_scenario_drivers", "scenario driver"),
    ("rea_register_projections", "projection"),
    ("rea_register_tools", "tool"),
    ("rea_register_settings", "setting"),
    ("rea_register_prompts", "prompt"),
    ("rea_register_resources", "resource"),
)
TOOLS_HOOK = "rea_register_tools"


class Registry:
    """Everything the loaded plugins registered, keyed by stable id, with the plugin that owns it.

    Plugins are imported at load; each kind of registration is collected the first time it is read (``rea
    --version`` calls no registration hook, ``rea providers list`` no tool module). Tools may come from the
    manifest the registry keeps in the analysis cache (``rea.catalog.manifest``): then their names, schemas and
    owners are known without importing a tool module, and a plugin's real ``ToolDef``s are built the first time
    one of them is read from ``tools``.
    """

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.plugins: dict[str, PluginInfo] = {}
        # Plugins that failed to import (the registration stages add theirs as they are collected).
        self._import_broken: list[BrokenPlugin] = []
        self._stage_broken: dict[str, list[BrokenPlugin]] = {hook: [] for hook, _ in KINDS}
        self._stage_errors: dict[str, list[ReaError]] = {hook: [] for hook, _ in KINDS}
        self._broken: list[BrokenPlugin] | None = None
        self._errors: list[ReaError] | None = None
        # One table per hook, each of its own kind (providers, unpackers, drivers, ...): the typed properties
        # below (``providers`` and the others) give each table its type, so the shared store holds Any.
        self._tables: dict[str, dict[str, Any]] = {hook: {} for hook, _ in KINDS if hook != TOOLS_HOOK}
        self._tools = ToolTable(self)
        self._owner: dict[tuple[str, str], str] = {}
        self._pending: list[str] = [hook for hook, _ in KINDS]
        self._collecting = threading.RLock()
        # Where the tool manifest lives (None: tools are always collected by calling the hooks).
        self._manifest_cache: Any = None
        self._manifest_identity: list[Any] = []
        # The sources of the kept values this registry read: a value computed from them depends on them too.
        self._sources_read: list[tuple[str, int, int]] = []

    # -- the tables, each collected on first use ------------------------------------------------------

    def _table(self, hook: str) -> dict[str, Any]:
        self._ensure(hook)
        return self._tables[hook]

    @property
    def providers(self) -> dict[str, AnalysisProvider]:
        return self._table("rea_register_analysis_providers")

    @property
    def unpackers(self) -> dict[str, Unpacker]:
        return self._table("rea_register_unpackers")

    @property
    def drivers(self) -> dict[str, ScenarioDriver]:
        return self._table("rea_register_scenario_drivers")

    @property
    def projections(self) -> dict[str, Projection]:
        return self._table("rea_register_projections")

    @property
    def tools(self) -> ToolTable:
        self._ensure(TOOLS_HOOK)
        return self._tools

    @property
    def settings(self) -> dict[str, SettingSpec]:
        return self._table("rea_register_settings")

    @property
    def prompts(self) -> dict[str, PromptDef]:
        return self._table("rea_register_prompts")

    @property
    def resources(self) -> dict[str, ResourceSpec]:
        """Keyed by URI (fixed resources) or URI template."""
        return self._table("rea_register_resources")

    @property
    def broken(self) -> list[BrokenPlugin]:
        """Plugins that failed to import, then those a registration hook refused, in hook order (one list, once
        every kind is collected: what a caller appends stays)."""
        self._ensure_all()
        if self._broken is None:
            self._broken = [*self._import_broken, *(b for hook, _ in KINDS for b in self._stage_broken[hook])]
        return self._broken

    @property
    def errors(self) -> list[ReaError]:
        self._ensure_all()
        if self._errors is None:
            self._errors = [e for hook, _ in KINDS for e in self._stage_errors[hook]]
        return self._errors

    @property
    def owner(self) -> dict[tuple[str, str], str]:
        self._ensure_all()
        return self._owner

    def owner_of(self, label: str, key: str) -> str | None:
        """The plugin that registered ``key`` of kind ``label`` ("provider", "tool", ...), collecting only that kind."""
        hook = next(h for h, lab in KINDS if lab == label)
        self._ensure(hook)
        return self._owner.get((label, key))

    def _ensure(self, hook: str) -> None:
        if hook not in self._pending:
            return
        with self._collecting:
            if hook in self._pending:
                _collect_kind(self, hook)
                self._pending.remove(hook)

    def _ensure_all(self) -> None:
        for hook, _ in KINDS:
            self._ensure(hook)

    # -- queries ----------------------------------------------------------------------------------------

    def provider(self, provider_id: str) -> AnalysisProvider | None:
        return self.providers.get(provider_id)

    def tool(self, name: str) -> ToolDef | None:
        return self.tools.get(name)

    def tool_specs(self) -> dict[str, ToolSpec]:
        """Every tool as data (``rea.catalog.manifest.ToolSpec``) with its advertised output schemas, by name."""
        return self.tools.specs()

    def derived(self, name: str, value_type: type[T], compute: Callable[[], T]) -> T:
        """A value computed from the registrations, kept in the analysis cache beside the tool manifest (when this
        registry has one) and valid while every source it came from is unchanged; ``compute`` on a miss."""
        cache = self._manifest_cache
        if cache is None:
            return compute()
        from rea.catalog.manifest import MANIFEST_KIND
        from rea.catalog.manifest import decode_raw
        from rea.catalog.manifest import load_derived
        from rea.catalog.manifest import manifest_key
        from rea.catalog.manifest import store_derived

        key = manifest_key(self._manifest_identity, f"{MANIFEST_KIND}:{name}")
        try:
            found = load_derived(cache, key)
            if found is not None:
                value = decode_raw(found.value, value_type)
                self._sources_read.extend(found.sources)
                return value
        except Exception:  # an unreadable or mistyped entry is a miss
            pass
        value = compute()
        try:
            store_derived(cache, key, value, self._sources_read)
        except Exception:  # not kept: computed again next time
            pass
        return value

    def tool_info(self) -> dict[str, ToolDef | ToolEntry]:
        """Every tool by name, as whatever is at hand without importing a tool module: its ``ToolDef`` when built,
        else its spec (both carry the data fields: name, description, cli and toolset names, requirements)."""
        return self.tools.info()

    def target_views(self, target: Target) -> list[TargetView]:
        """Every other reading of ``target`` the plugins offer (``rea_target_views``), naming registered tools only.

        A plugin whose hook raises is left out of the answer, never the cause of a failed call."""
        from rea.target import TargetView
        from rea.unpackers import read_head

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
        from rea.config import load_settings

        return load_settings(
            env,
            projections=tuple(sorted(self.projections)),
            declared=self.settings,
            toolsets=self.toolsets(),
            on_demand=ON_DEMAND_TOOLSETS,
        )

    def toolsets(self) -> tuple[str, ...]:
        """Every toolset a registered tool belongs to: the first-party ones in their order, then the rest."""
        present = {t.toolset_id for t in self.tool_info().values()}
        return (*(n for n in TOOLSET_ORDER if n in present), *sorted(present - set(TOOLSET_ORDER)))


class ToolTable(Mapping[str, ToolDef]):
    """The registered tools by name. Names and entries are known up front; a ``ToolDef`` that came from the manifest
    is built on first read, by calling its plugin's ``rea_register_tools`` (once per plugin)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._defs: dict[str, ToolDef] = {}
        # Every registered name, in registration order, with its manifest entry (None: a ToolDef built here).
        self._entries: dict[str, ToolEntry | None] = {}
        self._specs: dict[str, ToolSpec] = {}
        self._computed: dict[int, tuple[ToolDef, ToolSpec]] = {}
        self._owner: dict[str, str] = {}
        # The module that declared each tool of a plugin with TOOL_MODULES (so one tool is built by importing one).
        self._module_of: dict[str, str] = {}
        # Plugins whose tools are known from the manifest only.
        self._deferred: set[str] = set()
        # The specs kept in the analysis cache, by plugin, until decoded.
        self._raw_specs: dict[str, PluginSpecs] = {}
        self._specs_tried = self._specs_found = self._specs_stored = False
        self._lock = threading.RLock()

    def _add(self, name: str, plugin: str, item: ToolDef | ToolEntry) -> None:
        self._owner[name] = plugin
        if isinstance(item, ToolDef):
            self._entries[name] = None
            self._defs[name] = item
        else:
            self._entries[name] = item
            self._deferred.add(plugin)

    def __getitem__(self, name: str) -> ToolDef:
        found = self._defs.get(name)
        if found is not None:
            return found
        if name not in self._entries:
            raise KeyError(name)
        self._materialize(self._owner[name], name)
        return self._defs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"ToolTable({sorted(self._entries)})"

    def spec(self, name: str) -> ToolSpec:
        """The tool as data with its advertised output schemas (from the specs kept in the analysis cache, or
        computed once from its ToolDef)."""
        found = self._specs.get(name)
        if found is not None:
            return found
        with self._lock:
            self._load_specs()
            record = self._raw_specs.pop(self._owner[name], None)
            if record is not None:
                for spec in record.decode():
                    self._specs.setdefault(spec.name, spec)
            if name not in self._specs:
                self._specs[name] = self.spec_for(self[name])
            return self._specs[name]

    def specs(self) -> dict[str, ToolSpec]:
        """Every tool's spec; the first process that computes them all keeps them for the next."""
        with self._lock:
            self._load_specs()
            computing = not self._specs_found
            out = {name: self.spec(name) for name in list(self._entries)}
            cache = self._registry._manifest_cache
            if computing and cache is not None and not self._specs_stored:
                self._specs_stored = True
                from rea.catalog.manifest import SPECS_KIND
                from rea.catalog.manifest import manifest_key
                from rea.catalog.manifest import store_specs

                by_plugin: dict[str, list[ToolSpec]] = {}
                for name, spec in out.items():
                    by_plugin.setdefault(self._owner[name], []).append(spec)
                try:
                    key = manifest_key(self._registry._manifest_identity, SPECS_KIND)
                    store_specs(cache, key, by_plugin, self._registry._sources_read)
                except Exception:  # not kept: the next process computes them again
                    pass
            return out

    def _load_specs(self) -> None:
        """Read the kept specs once (only beside a manifest: a registry built by calling the hooks computes)."""
        cache = self._registry._manifest_cache
        if self._specs_tried or cache is None:
            return
        self._specs_tried = True
        from rea.catalog.manifest import SPECS_KIND
        from rea.catalog.manifest import load_specs
        from rea.catalog.manifest import manifest_key

        try:
            found = load_specs(cache, manifest_key(self._registry._manifest_identity, SPECS_KIND))
        except Exception:  # an unreadable entry is a miss
            found = None
        if found is None or sorted(p.plugin for p in found.plugins) != sorted(set(self._owner.values())):
            return
        self._raw_specs = {p.plugin: p for p in found.plugins}
        self._specs_found = True
        self._registry._sources_read.extend(found.sources)

    def spec_for(self, tool: ToolDef) -> ToolSpec:
        """``tool``'s spec, computed once per ToolDef."""
        found = self._computed.get(id(tool))
        if found is None or found[0] is not tool:
            from rea.catalog.manifest import spec_of

            found = self._computed[id(tool)] = (tool, spec_of(tool))
        return found[1]

    def info(self) -> dict[str, ToolDef | ToolEntry]:
        out: dict[str, ToolDef | ToolEntry] = {}
        for name, entry in list(self._entries.items()):
            out[name] = entry if entry is not None else self._defs[name]
        return out

    def _materialize(self, plugin: str, wanted: str | None = None) -> None:
        """Build ``plugin``'s real tools as on a first start: only the module that declared ``wanted`` when the
        plugin lists its tool modules (``TOOL_MODULES``), else its registration hook (through pluggy) and all of
        its modules."""
        with self._lock:
            if plugin not in self._deferred:
                return
            module = self._module_of.get(wanted) if wanted is not None else None
            if module is not None:
                try:
                    built = _module_tools(module)
                except Exception as exc:
                    raise _unbuilt(plugin, exc) from exc
                for tool in built:
                    if isinstance(tool, ToolDef) and self._owner.get(tool.name) == plugin:
                        self._defs.setdefault(tool.name, tool)
                if wanted in self._defs:
                    return
            mine = [name for name, owner in self._owner.items() if owner == plugin and name not in self._defs]
            result = _plugin_tools(self._registry, plugin)
            if isinstance(result, Exception):
                raise _unbuilt(plugin, result) from result
            staged = result[0]
            real = {t.name: t for t in staged if isinstance(t, ToolDef)}
            for name in mine:
                if name in real:
                    self._defs[name] = real[name]
            self._deferred.discard(plugin)
            missing = [name for name in mine if name not in self._defs]
            if missing:
                raise ReaError(
                    "execution_failure",
                    f"plugin {plugin} did not register {', '.join(missing)} this time, though its manifest names them",
                    remediation="Run `rea cache clear`, then the command again.",
                    details={"plugin": plugin, "tools": missing},
                )


def _unbuilt(plugin: str, exc: BaseException) -> ReaError:
    return ReaError(
        "execution_failure",
        f"plugin {plugin} could not build its tools: {_describe(exc)}",
        remediation="Run `rea providers list`; reinstall or disable the plugin.",
        details={"plugin": plugin},
    )


def tool_modules(plugin: object) -> tuple[str, ...] | None:
    """The modules a plugin declares its tools in (its ``TOOL_MODULES``: each has ``tools() -> list[ToolDef]``), or
    None. Read from the module's own namespace, so a plugin's lazy ``__getattr__`` imports nothing to answer."""
    space = plugin.__dict__ if isinstance(plugin, types.ModuleType) else {}
    found = space.get("TOOL_MODULES") if space else getattr(plugin, "TOOL_MODULES", None)
    if found is None:
        return None
    if not isinstance(found, (tuple, list)) or not all(isinstance(m, str) and m for m in found):
        raise ValueError(f"TOOL_MODULES must be a tuple of module names, not {found!r}")
    return tuple(found)


def _module_tools(module_name: str) -> list[Any]:
    tools = getattr(importlib.import_module(module_name), "tools", None)
    if not callable(tools):
        raise TypeError(f"{module_name} is listed in TOOL_MODULES but has no tools() function")
    return list(tools())


def _plugin_tools(reg: Registry, plugin: str) -> tuple[list[Any], dict[str, str]] | Exception:
    """One plugin's tools, from its registration hook and then its ``TOOL_MODULES`` (with the module of each of
    the latter), or the exception that stopped them."""
    staged: list[Any] = []
    for _, result in per_plugin(reg.pm, TOOLS_HOOK, _staged_registration, only=plugin):
        if isinstance(result, Exception):
            return result
        staged.extend(result)
    where: dict[str, str] = {}
    try:
        for module in tool_modules(reg.pm.get_plugin(plugin)) or ():
            for tool in _module_tools(module):
                staged.append(tool)
                if isinstance(tool, ToolDef):
                    where[tool.name] = module
    except Exception as exc:
        return exc
    return staged, where


def _tool_plugins(reg: Registry) -> list[str]:
    """The plugins that contribute tools, in registration order: those implementing the tools hook and those
    declaring ``TOOL_MODULES``."""
    hooked = [name for name, _ in per_plugin(reg.pm, TOOLS_HOOK, lambda caller: None)]
    ordered = [n for n in hooked if n not in reg.plugins]
    for name in reg.plugins:
        plugin = reg.pm.get_plugin(name)
        if plugin is None:
            continue
        try:
            declares = tool_modules(plugin) is not None
        except ValueError:
            declares = True  # listed, so that its staging reports the error
        if name in hooked or declares:
            ordered.append(name)
    return ordered


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
    pm: pluggy.PluginManager | None = None,
    *,
    entry_points: bool = True,
    extra: list[tuple[str, object]] | None = None,
    cache: AnalysisCache | None = None,
) -> Registry:
    """Load plugins from the ``rea`` entry-point group (plus ``extra``); their registrations are collected on use.

    ``REA_DISABLE_PLUGINS=a,b`` blocks plugins by name; ``REA_LOAD_PLUGINS=a,b`` is an allow-list of
    entry-point names; ``REA_PLUGIN_MODULES=pkg.mod`` also loads modules that are not installed.
    A plugin that fails to import or whose hook raises is reported as broken; the rest keep working.
    With ``cache`` (an analysis cache), tools come from the manifest kept there (``rea.catalog.manifest``)
    when it is current, and the manifest is written when it is not; never with ``extra`` plugins.
    """
    pm = pm or make_plugin_manager()
    blocked = set(_split_env("REA_DISABLE_PLUGINS") or [])
    allowed = _split_env("REA_LOAD_PLUGINS")
    for name in blocked:
        pm.set_blocked(name)
    reg = Registry(pm)
    candidates: list[tuple[str, str | None, str | None, Callable[[], object]]] = []
    if entry_points:
        for name, value, dist, version in _entry_points(cache if not extra else None):
            candidates.append((name, dist, version, lambda value=value: _load_entry_point(value)))  # type: ignore[misc]
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
            _check_api(plugin)
            pm.register(plugin, name=name)
        except Exception as exc:
            reg._import_broken.append(BrokenPlugin(name=name, distribution=dist, stage="import", error=_describe(exc)))
            continue
        named = {h.name for h in pm.get_hookcallers(plugin) or []}
        try:
            if tool_modules(plugin) is not None:
                named.add(TOOLS_HOOK)  # its tools are data the kernel reads, not a hook it calls
        except ValueError:
            pass  # reported when its tools are collected
        hooks = tuple(sorted(named))
        module = getattr(plugin, "__name__", type(plugin).__name__)
        reg.plugins[name] = PluginInfo(name=name, distribution=dist, version=version, module=module, hooks=hooks)
    pm.check_pending()
    if cache is not None and not extra:
        reg._manifest_cache = cache
        reg._manifest_identity = [
            [msgspec.to_builtins(reg.plugins[n]) for n in sorted(reg.plugins)],
            [msgspec.to_builtins(b) for b in reg._import_broken],
            sorted(blocked),
            allowed,
            # A plugin may read rea's settings while it registers: another environment, another manifest.
            sorted((k, v) for k, v in os.environ.items() if k.startswith("REA_")),
        ]
    return reg


def _load_entry_point(value: str) -> object:
    """What an entry point's ``module:attr.path`` names (importlib.metadata's ``EntryPoint.load``, without importing
    importlib.metadata and the email package it brings when the scan was kept)."""
    module, _, attrs = value.partition("[")[0].partition(":")  # a legacy "[extras]" suffix names no object
    found: object = importlib.import_module(module.strip())
    for attr in filter(None, attrs.strip().split(".")):
        found = getattr(found, attr)
    return found


def _check_api(plugin: object) -> None:
    """Refuse a plugin built for a later plugin API than this rea offers (its ``REQUIRES_API`` attribute)."""
    # A module's own attribute only: a plugin module's lazy ``__getattr__`` must not import its tools to answer.
    space = plugin.__dict__ if isinstance(plugin, types.ModuleType) else {}
    required = space.get("REQUIRES_API") if space else getattr(plugin, "REQUIRES_API", None)
    if required is None:
        return
    if not isinstance(required, int) or isinstance(required, bool) or required < 1:
        raise ValueError(f"REQUIRES_API must be a positive integer, not {required!r}")
    offered = hookspecs.PLUGIN_API_VERSION
    if required > offered:
        raise ValueError(f"built for rea plugin API {required}; this rea offers API {offered}: upgrade rea-reverse")


EntryPointRow = tuple[str, str, str | None, str | None]


def _scan_entry_points() -> tuple[list[EntryPointRow], list[tuple[str, int, int]]]:
    """Every ``rea`` entry point (name, value, distribution, version), by name, and the files that say so."""
    # Here, not at the top: importlib.metadata brings the email package (~15 ms), and a kept scan needs neither.
    from importlib import metadata

    rows: list[EntryPointRow] = []
    files: list[tuple[str, int, int]] = []
    # Reading a distribution's metadata parses its METADATA file: once per distribution, not per plugin.
    seen: dict[str, tuple[str, str]] = {}
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = version = None
        if ep.dist is not None:
            where = getattr(ep.dist, "_path", None)
            key = str(where if where is not None else id(ep.dist))
            if key not in seen:
                seen[key] = (ep.dist.name, ep.dist.version)
                if where is not None:
                    files.extend(_stats([os.path.join(str(where), "entry_points.txt")]))
            dist, version = seen[key]
        rows.append((ep.name, ep.value, dist, version))
    return rows, files


def _stats(paths: list[str]) -> list[tuple[str, int, int]]:
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append((path, -1, -1))
        else:
            out.append((path, st.st_mtime_ns, st.st_size))
    return out


def _entry_points(cache: AnalysisCache | None) -> list[EntryPointRow]:
    """The ``rea`` entry points; with ``cache``, as kept there while no directory on sys.path and no file that
    declared one changed (installing or removing a distribution changes its directory)."""
    if cache is None:
        return _scan_entry_points()[0]
    import sys

    from rea.catalog.manifest import ENTRY_POINTS_KIND
    from rea.catalog.manifest import decode_raw
    from rea.catalog.manifest import load_derived
    from rea.catalog.manifest import manifest_key
    from rea.catalog.manifest import store_derived
    from rea.catalog.manifest import sys_path_sources

    key = manifest_key([sys.path], ENTRY_POINTS_KIND)
    try:
        found = load_derived(cache, key)
        if found is not None:
            return decode_raw(found.value, list[EntryPointRow])
    except Exception:  # an unreadable entry is a miss
        pass
    directories = sys_path_sources()
    rows, files = _scan_entry_points()
    try:
        store_derived(cache, key, rows, [], sources=sorted(directories + files))
    except Exception:  # not kept: scanned again next time
        pass
    return rows


def collect_all(reg: Registry) -> Registry:
    """Call every registration hook now (what ``load`` did eagerly before registrations were collected on use)."""
    reg._ensure_all()
    return reg


def _describe(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


# The type each hook's registrations must have: (module, class), imported when that kind is first collected so a
# command that never lists providers does not import them. Tools are ToolDefs.
_KIND_TYPES: dict[str, tuple[str, str]] = {
    "rea_register_analysis_providers": ("rea.providers", "AnalysisProvider"),
    "rea_register_unpackers": ("rea.unpackers", "Unpacker"),
    "rea_register_scenario_drivers": ("rea.scenarios", "ScenarioDriver"),
    "rea_register_projections": ("rea.catalog.projection", "Projection"),
    "rea_register_settings": ("rea.config", "SettingSpec"),
    "rea_register_prompts": ("rea.catalog.prompt", "PromptDef"),
    "rea_register_resources": ("rea.catalog.resource", "ResourceSpec"),
}


def _kind_type(hook: str) -> type:
    """The type a hook's registrations must have."""
    if hook not in _KIND_TYPES:
        return ToolDef
    module, name = _KIND_TYPES[hook]
    kind: type = getattr(importlib.import_module(module), name)
    return kind


_KEY_OF: dict[str, Callable[[Any], str]] = {
    "rea_register_analysis_providers": lambda p: p.descriptor.id,
    "rea_register_unpackers": lambda u: u.descriptor.id,
    "rea_register_scenario_drivers": lambda d: d.descriptor.id,
    "rea_register_projections": lambda p: p.descriptor.id,
    "rea_register_tools": lambda t: t.name,
    "rea_register_settings": lambda s: s.name,
    "rea_register_prompts": lambda p: p.name,
    "rea_register_resources": lambda r: r.key,
}


def _collect_kind(reg: Registry, hook_name: str) -> None:
    """Collect one kind of registration: every implementing plugin's hook, once, through pluggy."""
    label = dict(KINDS)[hook_name]
    kind = _kind_type(hook_name)
    if hook_name == TOOLS_HOOK and reg._manifest_cache is not None:
        outcomes, from_manifest = _tool_outcomes_from_manifest(reg)
        if from_manifest:
            from rea.catalog.manifest import ToolEntry

            kind = ToolEntry
    elif hook_name == TOOLS_HOOK:
        outcomes = [(name, staged) for name, staged, _ in _tool_staging(reg)]
    else:
        outcomes = _staged_outcomes(reg, hook_name)
    key_of = _KEY_OF[hook_name]
    for plugin_name, staged in outcomes:
        if isinstance(staged, str):
            _broken(reg, plugin_name, hook_name, staged)
            continue
        wrong = next((item for item in staged if not isinstance(item, kind)), None)
        if wrong is not None:
            # All or nothing per plugin and hook: half a plugin's tools would be a catalog nobody wrote.
            _broken(reg, plugin_name, hook_name, f"registered a {type(wrong).__name__} where a {kind.__name__} belongs")
            continue
        try:
            keyed = [(key_of(item), item) for item in staged]
        except Exception as exc:
            _broken(reg, plugin_name, hook_name, _describe(exc))
            continue
        for key, item in keyed:
            if label == "provider" and not valid_provider_id(key):
                reg._stage_errors[hook_name].append(
                    ReaError(
                        "configuration_invalid",
                        f"plugin {plugin_name} registered provider id {key!r}, which is not ^[a-z][a-z0-9-]*$",
                        details={"settings": [{"setting": f"plugin:{plugin_name}", "constraint": "provider id"}]},
                    )
                )
                continue
            previous = reg._owner.get((label, key))
            if previous is not None:
                reg._stage_errors[hook_name].append(
                    ReaError(
                        "configuration_invalid",
                        f"duplicate {label} id {key!r}: registered by plugin {previous} and by plugin {plugin_name}",
                        remediation=f"Disable one of them with REA_DISABLE_PLUGINS={plugin_name}.",
                        details={"kind": label, "id": key, "plugins": [previous, plugin_name]},
                    )
                )
                continue
            reg._owner[(label, key)] = plugin_name
            if hook_name == TOOLS_HOOK:
                reg._tools._add(key, plugin_name, item)
            else:
                reg._tables[hook_name][key] = item


def _staged_outcomes(reg: Registry, hook_name: str) -> list[tuple[str, list[Any] | str]]:
    """Each implementing plugin's registrations for ``hook_name``, or (a str) why its hook failed."""
    return [
        (plugin_name, _describe(staged) if isinstance(staged, Exception) else staged)
        for plugin_name, staged in per_plugin(reg.pm, hook_name, _staged_registration)
    ]


def _tool_staging(reg: Registry) -> list[tuple[str, list[Any] | str, dict[str, str]]]:
    """Each tool-contributing plugin's tools (or why they failed), with the module of each declared in a module
    its ``TOOL_MODULES`` lists (recorded on the registry's tool table)."""
    out: list[tuple[str, list[Any] | str, dict[str, str]]] = []
    for name in _tool_plugins(reg):
        result = _plugin_tools(reg, name)
        if isinstance(result, Exception):
            out.append((name, _describe(result), {}))
            continue
        staged, where = result
        reg._tools._module_of.update(where)
        out.append((name, staged, where))
    return out


def _tool_outcomes_from_manifest(reg: Registry) -> tuple[list[tuple[str, list[Any] | str]], bool]:
    """The tools hook's outcomes, from the manifest when it is current, else by calling the hooks (and storing
    the manifest for the next start). Specs stand in for ToolDefs until a plugin's tools are read."""
    from rea.catalog.manifest import PluginTools
    from rea.catalog.manifest import entry_of
    from rea.catalog.manifest import load_manifest
    from rea.catalog.manifest import manifest_key
    from rea.catalog.manifest import store_manifest

    cache = reg._manifest_cache
    key = manifest_key(reg._manifest_identity)
    implementers = _tool_plugins(reg)
    try:
        manifest = load_manifest(cache, key)
    except Exception:  # a cache that cannot be read is a miss, never a failed start
        manifest = None
    if manifest is not None and [p.plugin for p in manifest.plugins] == implementers:
        reg._sources_read.extend(manifest.sources)
        for p in manifest.plugins:
            reg._tools._module_of.update(p.modules)
        return [(p.plugin, p.error if p.error is not None else list(p.entries)) for p in manifest.plugins], True
    staging = _tool_staging(reg)
    outcomes = [(name, staged) for name, staged, _ in staging]
    record: list[PluginTools] = []
    for plugin_name, staged, where in staging:
        if isinstance(staged, str):
            record.append(PluginTools(plugin=plugin_name, error=staged))
        elif any(not isinstance(item, ToolDef) for item in staged):
            wrong = next(item for item in staged if not isinstance(item, ToolDef))
            record.append(
                PluginTools(
                    plugin=plugin_name,
                    error=f"registered a {type(wrong).__name__} where a {ToolDef.__name__} belongs",
                )
            )
        else:
            try:
                record.append(PluginTools(plugin=plugin_name, entries=[entry_of(t) for t in staged], modules=where))
            except Exception:
                record = []  # a tool that cannot be described as data: no manifest (the hooks run every time)
                break
    if record:
        try:
            store_manifest(cache, key, record, reg._sources_read)
        except Exception:  # not kept: the next start computes it again
            pass
    # This process keeps the real ToolDefs it just built.
    return outcomes, False


def _staged_registration(caller: Callable[..., Any]) -> list[Any]:
    staged: list[Any] = []
    caller(register=staged.append)
    return staged


def per_plugin(
    pm: pluggy.PluginManager, hook_name: str, call: Callable[[Callable[..., Any]], T], *, only: str | None = None
) -> Iterator[tuple[str, T | Exception]]:
    """``call`` with the hook's caller narrowed to one implementing plugin at a time (through pluggy: wrappers
    apply, arguments are pruned to what the implementation declares), and its result or the exception it raised.
    With ``only``, just that plugin's."""
    impls = getattr(pm.hook, hook_name).get_hookimpls()
    plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]
    for impl in plain:
        if only is not None and pm.get_name(impl.plugin) != only:
            continue
        others = [other.plugin for other in plain if other.plugin is not impl.plugin]
        try:
            result: T | Exception = call(pm.subset_hook_caller(hook_name, remove_plugins=others))
        except Exception as exc:
            result = exc
        yield pm.get_name(impl.plugin) or "?", result


def _broken(reg: Registry, plugin_name: str, stage: str, error: str) -> None:
    info = reg.plugins.get(plugin_name)
    reg._stage_broken[stage].append(
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


def default_registry(*, cached: bool = False) -> Registry:
    """The process-wide registry, loaded once (idempotent). ``cached`` (the CLI and ``rea serve``, when they load
    it first): tools come from the manifest in the analysis cache (``rea.catalog.manifest``) when it is current."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is None:
            _DEFAULT = load(cache=_manifest_cache() if cached else None)
        return _DEFAULT


def installed_plugins() -> list[EntryPointRow]:
    """The installed plugins as their entry points declare them (name, module, distribution, version), read
    without importing one (from the analysis cache while nothing installed changed): what ``rea --version`` lists."""
    return _entry_points(_manifest_cache())


def _manifest_cache() -> AnalysisCache | None:
    """The analysis cache the settings name, or None when it is off or misconfigured (the command says so)."""
    from rea.cache import default_cache

    try:
        cache = default_cache()
    except ReaError:
        return None
    return cache if cache.enabled else None


def reset_default_registry() -> None:
    global _DEFAULT
    with _LOCK:
        _DEFAULT = None
