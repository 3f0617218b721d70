"""Settings read once at startup from the environment, validated strictly.

The kernel's own settings live here; a plugin declares its settings (``SettingSpec``) through
``rea_register_settings``, and ``load_settings`` validates every declared one at startup, whether or
not the plugin's engine is installed, so a bad value is never silently ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal

import msgspec

from rea.errors import ReaError
from rea.errors import configuration_invalid
from rea.records import JSONValue

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
ENVELOPE_RESERVE_BYTES = 1024
MAX_SAFE_INTEGER = 2**53 - 1
COMPACT_INPUT_SCHEMA_BUDGET_BYTES = 13 * 1024

SchemaProfile = Literal["full", "compact"]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    input_schema_profile: str = "full"
    # Where the annotation store keeps its per-target files (None: resolved from the environment on use).
    annotations_dir: str | None = None
    # The analysis cache (rea.cache): its directory (None: resolved on use) and size bound (0: off).
    cache_dir: str | None = None
    cache_max_bytes: int = 0
    # How results are presented (not what they are): lean records (the default), complete or compact ones
    # (rea.presentation).
    result_presentation: str = "lean"
    # The toolsets a server advertises at first (REA_MCP_TOOLSETS); None: every toolset.
    toolsets: tuple[str, ...] | None = None
    # Whether a connection may enable the other toolsets (the default selection), or the operator chose (a list).
    toolsets_on_demand: bool = False

    @property
    def response_budget(self) -> int:
        """Bytes available to one result, after the JSON-RPC envelope reserve."""
        return self.max_response_bytes - ENVELOPE_RESERVE_BYTES


def _max_response_bytes(env: Mapping[str, str]) -> int:
    raw = env.get("REA_MCP_MAX_RESPONSE_BYTES")
    if raw is None:
        return DEFAULT_MAX_RESPONSE_BYTES
    constraint = f"a decimal integer from {DEFAULT_MAX_RESPONSE_BYTES} to {MAX_SAFE_INTEGER}"
    if not re.fullmatch(r"[1-9][0-9]*", raw):
        raise configuration_invalid("REA_MCP_MAX_RESPONSE_BYTES", constraint, raw)
    value = int(raw)
    if not DEFAULT_MAX_RESPONSE_BYTES <= value <= MAX_SAFE_INTEGER:
        raise configuration_invalid("REA_MCP_MAX_RESPONSE_BYTES", constraint, raw)
    return value


class SettingSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A setting a plugin reads from the environment: its name, constraint and parser."""

    name: str
    constraint: str
    # Parses the raw value; raises ValueError when it breaks the constraint.
    parse: Callable[[str], Any]
    description: str = ""
    default: Any = None

    def read(self, env: Mapping[str, str] | None = None) -> Any:
        """The parsed value (``default`` when unset); ``configuration_invalid`` naming the setting otherwise."""
        env = os.environ if env is None else env
        raw = env.get(self.name)
        if raw is None:
            return self.default
        try:
            return self.parse(raw)
        except ValueError:
            raise configuration_invalid(self.name, self.constraint, raw) from None


MAX_INT32 = 2_147_483_647


def _absolute_directory(raw: str) -> str:
    if not raw or "\0" in raw or len(raw) > 4096 or not os.path.isabs(raw):
        raise ValueError(raw)
    return os.path.normpath(raw)


ANNOTATIONS_DIR = SettingSpec(
    name="REA_ANNOTATIONS_DIR",
    constraint="an absolute directory path",
    parse=_absolute_directory,
    description="Where the annotation store keeps names, comments and bookmarks (one file per target SHA-256); "
    "default $XDG_DATA_HOME/rea/annotations, else ~/.local/share/rea/annotations.",
)


def annotations_dir(env: Mapping[str, str] | None = None) -> str:
    """The annotation store's directory: ``REA_ANNOTATIONS_DIR``, else the XDG data home's ``rea/annotations``."""
    env = os.environ if env is None else env
    explicit = ANNOTATIONS_DIR.read(env)
    if explicit is not None:
        return str(explicit)
    # XDG: a relative XDG_DATA_HOME is invalid and ignored.
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = xdg
    else:
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "share")
    return os.path.join(os.path.normpath(base), "rea", "annotations")


CACHE_DIR = SettingSpec(
    name="REA_CACHE_DIR",
    constraint="an absolute directory path",
    parse=_absolute_directory,
    description="Where the analysis cache keeps providers' whole-program analyses and the CLI's Evidence; "
    "default $XDG_CACHE_HOME/rea, else ~/.cache/rea.",
)
DEFAULT_CACHE_MAX_BYTES = 1 << 30
MIN_CACHE_MAX_BYTES = 1 << 20


def _cache_bound(raw: str) -> int:
    # 0 turns the cache off; otherwise at least 1 MiB, so one analysis of a small binary fits.
    if raw == "0":
        return 0
    if not re.fullmatch(r"[1-9][0-9]*", raw) or not MIN_CACHE_MAX_BYTES <= int(raw) <= MAX_SAFE_INTEGER:
        raise ValueError(raw)
    return int(raw)


CACHE_MAX_BYTES = SettingSpec(
    name="REA_CACHE_MAX_BYTES",
    constraint=f"0 (off) or a decimal integer from {MIN_CACHE_MAX_BYTES} to {MAX_SAFE_INTEGER} (bytes)",
    parse=_cache_bound,
    default=DEFAULT_CACHE_MAX_BYTES,
    description="Size bound of the analysis cache; the least recently used entries are evicted beyond it.",
)
PRESENTATIONS = ("lean", "complete", "compact")


def choice_setting(name: str, choices: Iterable[str], default: str, description: str = "") -> SettingSpec:
    """A setting that is one of a few words (``REA_DEBUG_ATTACH=own``), spelled exactly; its constraint lists them
    in order, and ``default`` holds when it is unset."""
    allowed = tuple(choices)

    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(raw)
        return raw

    return SettingSpec(
        name=name, constraint="one of " + ", ".join(allowed), parse=parse, description=description, default=default
    )


RESULT_PRESENTATION = choice_setting(
    "REA_RESULT_PRESENTATION",
    PRESENTATIONS,
    "lean",
    "lean (default for rea serve): Evidence results carry their provenance by a short id, said once by "
    "open_binary, and only the envelope fields that say something; complete: whole Evidence records (the default "
    "of the CLI); compact: the analysis profile by its digest. Identity is unchanged (docs/results.md).",
)


def cache_dir(env: Mapping[str, str] | None = None) -> str:
    """The analysis cache's directory: ``REA_CACHE_DIR``, else the XDG cache home's ``rea``."""
    env = os.environ if env is None else env
    explicit = CACHE_DIR.read(env)
    if explicit is not None:
        return str(explicit)
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = xdg
    else:
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".cache")
    return os.path.join(os.path.normpath(base), "rea")


def integer_setting(name: str, low: int, high: int, default: int, unit: str, description: str = "") -> SettingSpec:
    """A decimal integer setting: no sign, no leading zero, no spaces, exponent or fraction."""

    def parse(raw: str) -> int:
        if not re.fullmatch(r"0|[1-9][0-9]*", raw) or not low <= int(raw) <= high:
            raise ValueError(raw)
        return int(raw)

    return SettingSpec(
        name=name,
        constraint=f"a decimal integer from {low} to {high} ({unit})",
        parse=parse,
        description=description,
        default=default,
    )


def default_memory_limit_mb() -> int:
    """A worker's default address-space bound: three quarters of physical memory, at least 2 GiB, so a hostile
    or huge input ends in a typed error in the worker before the host swaps or its OOM killer picks a victim."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16_384
    return max(2048, int(total * 3 / 4) >> 20)


def memory_limit_setting(name: str, engine: str) -> SettingSpec:
    """The ``REA_<ENGINE>_MEMORY_LIMIT_MB`` setting of one worker (256 MiB to 1 TiB)."""
    return integer_setting(
        name,
        256,
        1_048_576,
        default_memory_limit_mb(),
        "MiB",
        f"Address-space bound of the {engine} worker; exceeding it is resource_constraint and "
        "the next call starts a fresh worker.",
    )


# Former toolset names, accepted for one release where a toolset is named (REA_MCP_TOOLSETS, enable_toolsets,
# rea serve --toolsets): the binary tools' toolset was called "native", like the embedded provider.
TOOLSET_ALIASES = {"native": "binary"}


def read_toolsets(
    env: Mapping[str, str], known: tuple[str, ...], on_demand: tuple[str, ...] = ()
) -> tuple[tuple[str, ...] | None, bool]:
    """``REA_MCP_TOOLSETS`` as (the toolsets advertised first, whether a connection may enable the others).

    ``default`` (or unset): every toolset but the ``on_demand`` ones, which a connection enables when it needs
    them; ``all``: every toolset; a comma-separated list: exactly those (``session`` always among them)."""
    raw = env.get("REA_MCP_TOOLSETS", "default").strip()
    if raw in ("", "default"):
        return tuple(n for n in known if n not in on_demand), True
    if raw == "all":
        return None, False
    names = [TOOLSET_ALIASES.get(n.strip(), n.strip()) for n in raw.split(",") if n.strip()]
    if not names or any(n not in known for n in names):
        raise configuration_invalid(
            "REA_MCP_TOOLSETS", "default, all, or a comma-separated list of " + ", ".join(known), raw
        )
    return tuple(n for n in known if n in names or n == "session"), False


def load_settings(
    env: Mapping[str, str] | None = None,
    projections: tuple[str, ...] = ("full", "compact"),
    declared: Mapping[str, SettingSpec] | None = None,
    toolsets: tuple[str, ...] | None = None,
    on_demand: tuple[str, ...] = (),
) -> Settings:
    """Validate every setting, the plugins' ``declared`` ones too; an invalid one is ``configuration_invalid``."""
    env = os.environ if env is None else env
    profile = env.get("REA_MCP_INPUT_SCHEMA_PROFILE", "full")
    if profile not in projections:
        raise configuration_invalid("REA_MCP_INPUT_SCHEMA_PROFILE", "one of " + ", ".join(sorted(projections)), profile)
    problems: list[ReaError] = []
    store = cache = None
    cache_bound = DEFAULT_CACHE_MAX_BYTES
    presentation = str(RESULT_PRESENTATION.default)
    selected: tuple[str, ...] | None = None
    demand = False
    try:
        selected, demand = read_toolsets(env, toolsets, on_demand) if toolsets else (None, False)
    except ReaError as exc:
        problems.append(exc)
    try:
        store = annotations_dir(env)
    except ReaError as exc:
        problems.append(exc)
    try:
        cache = cache_dir(env)
    except ReaError as exc:
        problems.append(exc)
    try:
        cache_bound = CACHE_MAX_BYTES.read(env)
    except ReaError as exc:
        problems.append(exc)
    try:
        presentation = RESULT_PRESENTATION.read(env)
    except ReaError as exc:
        problems.append(exc)
    for spec in (declared or {}).values():
        try:
            spec.read(env)
        except ReaError as exc:
            problems.append(exc)
    if problems:
        first = problems[0]
        if len(problems) > 1:
            first.details["settings"] = [s for p in problems for s in _settings_of(p)]
            first.message += f" (and {len(problems) - 1} more invalid setting{'s' if len(problems) > 2 else ''})"
        raise first
    return Settings(
        max_response_bytes=_max_response_bytes(env),
        input_schema_profile=profile,
        annotations_dir=store,
        cache_dir=cache,
        cache_max_bytes=cache_bound,
        result_presentation=presentation,
        toolsets=selected,
        toolsets_on_demand=demand,
    )


def _settings_of(err: ReaError) -> Sequence[JSONValue]:
    """The settings a ``configuration_invalid`` error names (``details.settings``)."""
    found = err.details.get("settings")
    return found if isinstance(found, list) else []
