"""What the registry knows about tools without importing the plugins that define them.

A ``ToolSpec`` is a tool's definition as data: every field of its ``ToolDef`` but the callables, and the output
schema it advertises under each result presentation (built from its ``result_type`` once). The registry keeps
the specs of every plugin's tools in the analysis cache (``rea.cache``, authenticated like every entry), under a
key naming the interpreter, rea's version and the loaded plugins, and beside them the size and modification
time of every source file that was imported when they were computed: a changed, added or upgraded module is a
miss, and the next start computes them again. A later process answers ``tools/list``, ``rea providers list`` or
the lookup of a CLI command from the specs, and imports a plugin's tool modules (runs its registration hook)
only when one of its tools is called.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import sys
from collections.abc import Iterable
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import TypeVar

import msgspec

from rea.catalog.schemas import output_schema
from rea.catalog.schemas import shallow_output
from rea.catalog.tool import ToolDef
from rea.catalog.tool import ToolFacts
from rea.records import JSONObject

if TYPE_CHECKING:
    from rea.cache import AnalysisCache
    from rea.cache import CacheKey

T = TypeVar("T")

# 2: every kept value is a Derived (sources, raw payload); sources by (path, mtime_ns, size).
MANIFEST_KIND: Final = "rea-registry-tools/6"
SPECS_KIND: Final = "rea-registry-specs/2"
ENTRY_POINTS_KIND: Final = "rea-registry-entry-points/1"
PRESENTATIONS: Final = ("lean", "complete", "compact")


class ToolEntry(ToolFacts, frozen=True, kw_only=True):
    """What finding and describing a tool takes (a CLI command, a toolset, binary_session's availability rows)."""

    has_images: bool = False


class ToolSpec(ToolEntry, frozen=True, kw_only=True):
    """A tool's definition as data (``ToolDef`` without its callables), with its advertised output schemas."""

    # JSON Schema documents and the examples' arguments, as in ToolDef (JSON, not rea records).
    input_schema: JSONObject
    output_schema: JSONObject | None = None
    # The output schema advertised under each result presentation (rea.presentation), computed from result_type.
    advertised_output: dict[str, JSONObject] = {}
    examples: tuple[JSONObject, ...] = ()
    unadvertised_examples: tuple[JSONObject, ...] = ()


# ToolDef fields a spec carries as they are.
_DATA_FIELDS: Final = tuple(f for f in ToolSpec.__struct_fields__ if f not in ("advertised_output", "has_images"))
_ENTRY_FIELDS: Final = ToolEntry.__struct_fields__


def spec_of(tool: ToolDef) -> ToolSpec:
    """The spec of a registered tool (its output schemas computed here, as tools/list advertises them)."""
    from rea.presentation import output_schema_for

    complete = output_schema(tool)
    # tools/list advertises the shallow form (rea.catalog.schemas.shallow_output); the catalog keeps the complete one.
    advertised = {
        mode: shallow_output(output_schema_for(tool.output_schema, complete, mode, tool.result_type))
        for mode in PRESENTATIONS
    }
    fields = {name: getattr(tool, name) for name in _DATA_FIELDS}
    return ToolSpec(**fields, advertised_output=advertised, has_images=tool.images is not None)


def entry_of(tool: ToolDef) -> ToolEntry:
    """A registered tool's entry (no schema is built)."""
    fields = {name: getattr(tool, name) for name in _ENTRY_FIELDS if name != "has_images"}
    return ToolEntry(**fields, has_images=tool.images is not None)


class PluginTools(msgspec.Struct, frozen=True, kw_only=True):
    """One plugin's ``rea_register_tools`` outcome: its tools' entries, or why the registry refused them."""

    plugin: str
    entries: list[ToolEntry] = []
    error: str | None = None
    # Tool name -> the module (of the plugin's TOOL_MODULES) that declares it: building that tool imports only it.
    modules: dict[str, str] = {}


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    """Every plugin's tools as entries: cheap to compute at a miss (no schema is built), read at every start."""

    # (path, st_mtime_ns, st_size) of every non-standard-library source file loaded when it was computed.
    sources: list[tuple[str, int, int]]
    plugins: list[PluginTools]


class PluginSpecs(msgspec.Struct, frozen=True, kw_only=True):
    plugin: str
    # list[ToolSpec], decoded when one of the plugin's specs is asked for.
    specs: msgspec.Raw

    def decode(self) -> list[ToolSpec]:
        return decode_raw(self.specs, list[ToolSpec])


class SpecsManifest(msgspec.Struct, frozen=True, kw_only=True):
    """Every tool's spec (schemas and advertised output schemas): written by the first process that builds them
    all (``rea serve``'s tools/list, the catalog digest), read by the next."""

    sources: list[tuple[str, int, int]]
    plugins: list[PluginSpecs]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection while a kept value is read: decoding creates many containers at once, and in a process
    that has already imported its libraries (a server) a full collection then costs more than the decoding."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_raw(raw: msgspec.Raw, value_type: type[T]) -> T:
    with paused_gc():
        return msgspec.msgpack.decode(raw, type=value_type)


def manifest_key(identity: Iterable[Any], kind: str = MANIFEST_KIND) -> CacheKey:
    """The cache key of the manifest (or the specs) for this interpreter, rea version and set of loaded plugins."""
    from rea import __version__
    from rea.cache import CacheKey

    digest = hashlib.sha256(
        msgspec.json.encode([sys.version, sys.prefix, sys.executable, __version__, list(identity)])
    ).hexdigest()
    return CacheKey(kind=kind, target_sha256=digest, provider_id="rea", provider_version=__version__, profile_digest="")


def _stdlib_dirs() -> tuple[str, ...]:
    base = os.path.dirname(os.__file__)
    return (base + os.sep,)


def loaded_sources() -> list[tuple[str, int, int]]:
    """Every loaded module's source (outside the standard library) with its modification time and size."""
    stdlib = _stdlib_dirs()
    seen: set[str] = set()
    out: list[tuple[str, int, int]] = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or path in seen:
            continue
        seen.add(path)
        if path.startswith(stdlib) and "-packages" + os.sep not in path:
            continue
        if (stamp := _stamp(path)) is not None:
            out.append(stamp)
    out.sort()
    return out


def _stamp(path: str) -> tuple[str, int, int] | None:
    """``path`` with its modification time and size, None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size)


def sys_path_sources() -> list[tuple[str, int, int]]:
    """Every directory on sys.path with its modification time and size: installing, upgrading or removing a
    distribution changes one, so a value kept with these as its sources is computed again after any of them."""
    stamps = (_stamp(path) for path in sys.path if path and os.path.isdir(path))
    return sorted(stamp for stamp in stamps if stamp is not None)


def sources_current(sources: list[tuple[str, int, int]]) -> bool:
    for path, mtime_ns, size in sources:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            return False
    return True


def load_manifest(cache: AnalysisCache, key: CacheKey) -> Manifest | None:
    """The stored manifest when every source it was computed from is unchanged (None: compute it again)."""
    found = load_derived(cache, key)
    if found is None:
        return None
    return Manifest(sources=found.sources, plugins=decode_raw(found.value, list[PluginTools]))


def load_specs(cache: AnalysisCache, key: CacheKey) -> SpecsManifest | None:
    found = load_derived(cache, key)
    if found is None:
        return None
    return SpecsManifest(sources=found.sources, plugins=decode_raw(found.value, list[PluginSpecs]))


def merged_sources(*groups: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The sources a value computed now depends on: what is loaded, and what the kept values it read came from."""
    merged = {path: (path, mtime, size) for group in groups for path, mtime, size in group}
    return sorted(merged.values())


def store_manifest(
    cache: AnalysisCache, key: CacheKey, plugins: list[PluginTools], read: list[tuple[str, int, int]]
) -> None:
    store_derived(cache, key, plugins, read)


def store_specs(
    cache: AnalysisCache, key: CacheKey, specs: dict[str, list[ToolSpec]], read: list[tuple[str, int, int]]
) -> None:
    plugins = [PluginSpecs(plugin=p, specs=msgspec.Raw(msgspec.msgpack.encode(s))) for p, s in specs.items()]
    store_derived(cache, key, plugins, read)


class Derived(msgspec.Struct, frozen=True, kw_only=True):
    """A kept value (the manifest, the specs, a tools/list in one projection and presentation): valid while its
    sources are unchanged. Its payload stays raw until asked for, so the cache's check of the entry's type is
    of this small struct, not of the value's."""

    sources: list[tuple[str, int, int]]
    value: msgspec.Raw


def load_derived(cache: AnalysisCache, key: CacheKey) -> Derived | None:
    with paused_gc():
        found = cache.load(key, Derived)
    if found is None or not sources_current(found.sources):
        return None
    return found


def store_derived(
    cache: AnalysisCache,
    key: CacheKey,
    value: Any,
    read: list[tuple[str, int, int]],
    sources: list[tuple[str, int, int]] | None = None,
) -> None:
    """Keep ``value``; its sources are what is loaded now and what the kept values it came from were read from
    (``sources``: exactly these instead)."""
    raw = msgspec.Raw(msgspec.msgpack.encode(value))
    kept = merged_sources(loaded_sources(), read) if sources is None else sources
    cache.store(key, Derived(sources=kept, value=raw))
