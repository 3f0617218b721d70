"""``rea doctor``: host checks, provider readiness, plugin health and MCP client registrations.

The JSON shape, the alignment rule and the exit-status rule are documented in docs/doctor.md.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
import sysconfig
import tempfile
import tomllib
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import Literal

import msgspec

import rea
from rea.config import annotations_dir
from rea.errors import ErrorProjection
from rea.errors import ReaError
from rea.providers import Feature
from rea.records import JSONObject
from rea.records import JSONValue
from rea.registry import Registry
from rea.selection import ENV_VAR
from rea.selection import candidates
from rea.selection import parse_provider_choice

SCHEMA_VERSION = 1
DEFAULT_PROVIDER = "native"
FIRST_PARTY_DISTRIBUTION = rea.DISTRIBUTION
SERVER_NAME = "rea"
MIN_PYTHON = (3, 11)
# Client files are small; a larger one is refused instead of read whole.
MAX_CONFIG_BYTES = 16 << 20

CheckStatus = Literal["pass", "warn", "fail"]
ClientState = Literal["aligned", "stale", "missing", "invalid"]
ClientId = Literal["claude-desktop", "claude-code", "cursor", "vscode", "codex", "windsurf"]
Scope = Literal["user", "local", "project"]


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One host or plugin check; ``fail`` only for a required check, ``warn`` for an optional one."""

    id: str
    status: CheckStatus
    required: bool
    summary: str
    remediation: str | None = None


class HostInfo(msgspec.Struct, frozen=True, kw_only=True):
    python_version: str
    python_implementation: str
    python_executable: str
    platform: str
    system: str
    machine: str
    rea_version: str
    rea_package_path: str
    temp_dir: str
    # The annotation store's directory (None while REA_ANNOTATIONS_DIR is invalid).
    annotations_dir: str | None
    # The analysis cache's directory (None while REA_CACHE_DIR or REA_CACHE_MAX_BYTES is invalid).
    cache_dir: str | None


class ProviderReadiness(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    version: str
    kind: str
    plugin: str | None
    auto_priority: int
    formats: list[str]
    required: bool
    status: Literal["available", "unavailable"]
    code: str | None
    reason: str
    remediation: str | None
    features: list[Feature] = msgspec.field(default_factory=list)


class LoadedPlugin(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    distribution: str | None
    version: str | None
    module: str
    hooks: list[str]
    first_party: bool


class BrokenPluginReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    distribution: str | None
    stage: str
    error: str
    first_party: bool


class PluginsReport(msgspec.Struct, frozen=True, kw_only=True):
    loaded: list[LoadedPlugin]
    broken: list[BrokenPluginReport]
    # Registry errors (duplicate or malformed ids) as canonical error projections.
    errors: list[ErrorProjection]


class CommandVector(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    args: list[str]


class ClientRegistration(msgspec.Struct, frozen=True, kw_only=True):
    """The ``rea`` server entry of one client configuration file, classified."""

    client: ClientId
    scope: Scope
    path: str
    state: ClientState
    reason_code: str
    reason: str
    entry: CommandVector | None = None
    resolved_command: str | None = None
    remediation: str | None = None


class ClientsReport(msgspec.Struct, frozen=True, kw_only=True):
    expected: CommandVector
    accepted: list[CommandVector]
    registrations: list[ClientRegistration]


class CacheReport(msgspec.Struct, frozen=True, kw_only=True):
    """The analysis cache as ``rea cache info`` sees it (read-only: doctor creates nothing)."""

    directory: str
    enabled: bool
    max_bytes: int
    entries: int
    bytes: int
    # Why entries cannot be authenticated (then the cache reads nothing): see rea.cache_key.
    key_problem: str | None = None


class DoctorReport(msgspec.Struct, frozen=True, kw_only=True):
    schema_version: int
    ok: bool
    exit_status: int
    failures: list[str]
    host: HostInfo
    checks: list[Check]
    providers: list[ProviderReadiness]
    plugins: PluginsReport
    clients: ClientsReport
    # None while the cache settings are invalid (the settings check says why).
    cache: CacheReport | None = None
    live_server: Literal["unknown"] = "unknown"


# ---------------------------------------------------------------------------
# host, provider and plugin checks
# ---------------------------------------------------------------------------


def _host(store: str | None, cache: CacheReport | None) -> HostInfo:
    return HostInfo(
        python_version=platform.python_version(),
        python_implementation=platform.python_implementation(),
        python_executable=sys.executable,
        platform=platform.platform(),
        system=platform.system(),
        machine=platform.machine(),
        rea_version=rea.__version__,
        rea_package_path=os.path.dirname(os.path.abspath(rea.__file__)),
        temp_dir=tempfile.gettempdir(),
        annotations_dir=store,
        cache_dir=cache.directory if cache else None,
    )


def _annotations_dir(env: Mapping[str, str], home: str | None) -> str | None:
    try:
        return annotations_dir({**env, "HOME": home} if home is not None else env)
    except ReaError:
        return None  # the settings check reports the invalid value


def _annotations_check(store: str | None) -> Check:
    # Optional: reads work without the directory; only annotation writes need it. Nothing is created here.
    if store is None:
        return Check(
            id="annotations-dir",
            status="warn",
            required=False,
            summary="REA_ANNOTATIONS_DIR is invalid (see the settings check)",
            remediation="Set REA_ANNOTATIONS_DIR to an absolute directory path, or unset it.",
        )
    existing = store
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK):
        state = "exists" if existing == store else "created on the first annotation"
        return Check(id="annotations-dir", status="pass", required=False, summary=f"{store} ({state})")
    return Check(
        id="annotations-dir",
        status="warn",
        required=False,
        summary=f"{store} is not writable: annotation writes will fail",
        remediation="Make it writable, or point REA_ANNOTATIONS_DIR at a writable directory.",
    )


def _cache_report(env: Mapping[str, str], home: str | None) -> CacheReport | None:
    from rea.cache import AnalysisCache
    from rea.config import CACHE_MAX_BYTES
    from rea.config import cache_dir

    try:
        where = cache_dir({**env, "HOME": home} if home is not None else env)
        bound = int(CACHE_MAX_BYTES.read(env))
    except ReaError:
        return None  # the settings check reports the invalid value
    info = AnalysisCache(where, bound).info()
    return CacheReport(
        directory=info.directory,
        enabled=info.enabled,
        max_bytes=info.max_bytes,
        entries=info.entries,
        bytes=info.bytes,
        key_problem=info.key_problem,
    )


def _cache_check(cache: CacheReport | None) -> Check:
    # Optional: without a usable cache every call analyses from scratch, and the CLI cannot name earlier Evidence.
    if cache is None:
        return Check(
            id="analysis-cache",
            status="warn",
            required=False,
            summary="REA_CACHE_DIR or REA_CACHE_MAX_BYTES is invalid (see the settings check)",
            remediation="Set REA_CACHE_DIR to an absolute directory path and REA_CACHE_MAX_BYTES to 0 or "
            "at least 1048576, or unset them.",
        )
    if not cache.enabled:
        return Check(
            id="analysis-cache",
            status="pass",
            required=False,
            summary=f"off (REA_CACHE_MAX_BYTES=0): {cache.directory} is not used",
        )
    existing = cache.directory
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    usage = f"{cache.entries} entries, {cache.bytes} of {cache.max_bytes} bytes"
    if cache.key_problem:
        return Check(
            id="analysis-cache",
            status="warn",
            required=False,
            summary=f"{cache.directory}: no entry is read ({cache.key_problem})",
            remediation="Remove the key file (rea creates a fresh private one) or make it yours with mode "
            "0600; existing entries then become misses.",
        )
    if os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK):
        state = usage if existing == cache.directory else "created on the first analysis"
        return Check(id="analysis-cache", status="pass", required=False, summary=f"{cache.directory} ({state})")
    return Check(
        id="analysis-cache",
        status="warn",
        required=False,
        summary=f"{cache.directory} is not writable: analyses are not kept between calls",
        remediation="Make it writable, or point REA_CACHE_DIR at a writable directory.",
    )


def _python_check() -> Check:
    version = platform.python_version()
    if sys.version_info >= MIN_PYTHON:
        return Check(id="python", status="pass", required=True, summary=f"Python {version} (>= 3.11)")
    return Check(
        id="python",
        status="fail",
        required=True,
        summary=f"Python {version} is older than 3.11",
        remediation="Install rea with Python 3.11 or newer.",
    )


def _temp_check() -> Check:
    where = tempfile.gettempdir()
    try:
        with tempfile.TemporaryFile(dir=where) as fh:
            fh.write(b"rea")
    except OSError as exc:
        return Check(
            id="temp-dir",
            status="fail",
            required=True,
            summary=f"cannot write to {where}: {exc}",
            remediation="Point TMPDIR at a writable directory.",
        )
    return Check(id="temp-dir", status="pass", required=True, summary=f"{where} is writable")


def _env_provider_check(registry: Registry, ready: dict[str, ProviderReadiness], env: Mapping[str, str]) -> Check:
    cid = f"env:{ENV_VAR}"
    raw = env.get(ENV_VAR)
    if raw is None:
        return Check(id=cid, status="pass", required=True, summary="unset (selection is auto)")
    try:
        choice = parse_provider_choice(raw, setting=ENV_VAR)
    except ReaError as exc:
        return Check(id=cid, status="fail", required=True, summary=exc.message, remediation=exc.remediation)
    if choice == "auto":
        return Check(id=cid, status="pass", required=True, summary="auto")
    known = ready.get(choice)
    if known is None:
        return Check(
            id=cid,
            status="fail",
            required=True,
            summary=f"names {choice!r}, which is not registered",
            remediation=f"Set {ENV_VAR} to one of: auto, {', '.join(sorted(registry.providers))}.",
        )
    if known.status != "available":
        return Check(
            id=cid,
            status="fail",
            required=True,
            summary=f"names {choice!r}, which is unavailable: {known.reason}",
            remediation=known.remediation or f"Unset {ENV_VAR} or make {choice} available.",
        )
    return Check(id=cid, status="pass", required=True, summary=f"{choice} (available)")


def _settings_check(registry: Registry, env: Mapping[str, str]) -> Check:
    # `rea serve` validates the same settings at startup and refuses to run when one is invalid.
    try:
        settings = registry.server_settings(env)
    except ReaError as exc:
        return Check(id="settings", status="fail", required=True, summary=exc.message, remediation=exc.remediation)
    advertised = ", ".join(settings.toolsets or ("all",)) + (
        "; the others on demand" if settings.toolsets_on_demand else ""
    )
    return Check(
        id="settings",
        status="pass",
        required=True,
        summary=f"server settings are valid; toolsets advertised: {advertised}",
    )


def _http_check(registry: Registry, env: Mapping[str, str]) -> Check:
    """What ``rea serve --http`` would enforce (token, Host, Origin, CORS, per-session limits), from the environment."""
    from rea.mcp.http import describe
    from rea.mcp.server import max_request_bytes

    try:
        limit = max_request_bytes(registry.server_settings(env))
    except ReaError as exc:
        return Check(id="http", status="warn", required=False, summary=exc.message, remediation=exc.remediation)
    valid, summary, remediation = describe(env, limit)
    return Check(
        id="http", status="pass" if valid else "warn", required=False, summary=summary, remediation=remediation
    )


def _filter_check(env: Mapping[str, str]) -> Check | None:
    shown = [f"{name}={env[name]!r}" for name in ("REA_DISABLE_PLUGINS", "REA_LOAD_PLUGINS") if name in env]
    if not shown:
        return None
    return Check(
        id="plugin-filter",
        status="warn",
        required=False,
        summary="plugins are filtered: " + ", ".join(shown),
        remediation="Unset these variables to load every installed plugin.",
    )


def _is_first_party(distribution: str | None) -> bool:
    if distribution is None:
        return False
    return re.sub(r"[-_.]+", "-", distribution).lower() == FIRST_PARTY_DISTRIBUTION


def _providers(registry: Registry) -> list[ProviderReadiness]:
    out = []
    for cand in candidates(registry):
        avail = cand.availability
        out.append(
            ProviderReadiness(
                id=cand.provider_id,
                name=cand.name,
                version=cand.version,
                kind=cand.kind,
                plugin=registry.owner.get(("provider", cand.provider_id)),
                auto_priority=cand.auto_priority,
                formats=list(cand.formats),
                required=cand.provider_id == DEFAULT_PROVIDER,
                status=avail.status,
                code=avail.code,
                reason=avail.reason,
                remediation=avail.remediation,
                features=list(avail.features),
            )
        )
    return out


def _provider_checks(ready: dict[str, ProviderReadiness]) -> list[Check]:
    checks = []
    if DEFAULT_PROVIDER not in ready:
        checks.append(
            Check(
                id=f"provider:{DEFAULT_PROVIDER}",
                status="fail",
                required=True,
                summary=f"the embedded default provider {DEFAULT_PROVIDER!r} is not registered",
                remediation=(
                    "Reinstall rea (`pip install .`, or `pip install rea-reverse`) and check that "
                    f"REA_DISABLE_PLUGINS and REA_LOAD_PLUGINS do not exclude {DEFAULT_PROVIDER}."
                ),
            )
        )
    for pid in sorted(ready):
        p = ready[pid]
        if p.status == "available":
            checks.append(
                Check(id=f"provider:{pid}", status="pass", required=p.required, summary=f"{pid} available: {p.reason}")
            )
        else:
            checks.append(
                Check(
                    id=f"provider:{pid}",
                    status="fail" if p.required else "warn",
                    required=p.required,
                    summary=f"{pid} unavailable ({p.code}): {p.reason}",
                    remediation=p.remediation,
                )
            )
        # An optional part missing on its own is a warning, never a failure: the provider still answers the rest.
        for f in p.features if p.status == "available" else ():
            ok = f.status == "available"
            checks.append(
                Check(
                    id=f"provider:{pid}:{f.name}",
                    status="pass" if ok else "warn",
                    required=False,
                    summary=f"{pid} {f.name} {'available' if ok else 'unavailable'}: {f.reason}",
                    remediation=None if ok else f.remediation,
                )
            )
    return checks


def _plugins(registry: Registry) -> PluginsReport:
    loaded = [
        LoadedPlugin(
            name=i.name,
            distribution=i.distribution,
            version=i.version,
            module=i.module,
            hooks=list(i.hooks),
            first_party=_is_first_party(i.distribution),
        )
        for i in sorted(registry.plugins.values(), key=lambda i: i.name)
    ]
    broken = [
        BrokenPluginReport(
            name=b.name,
            distribution=b.distribution,
            stage=b.stage,
            error=b.error,
            first_party=_is_first_party(b.distribution),
        )
        for b in sorted(registry.broken, key=lambda b: (b.name, b.stage))
    ]
    return PluginsReport(loaded=loaded, broken=broken, errors=[e.projection() for e in registry.errors])


def _plugin_checks(plugins: PluginsReport) -> list[Check]:
    checks = []
    for b in plugins.broken:
        who = "first-party plugin" if b.first_party else "plugin"
        dist = b.distribution or "no distribution"
        fix = (
            "Reinstall rea (`pip install .`, or `pip install rea-reverse`) and report the error."
            if b.first_party
            else f"Reinstall {b.distribution or 'the plugin'}, or block it with REA_DISABLE_PLUGINS={b.name}."
        )
        checks.append(
            Check(
                id=f"plugin:{b.name}",
                status="fail" if b.first_party else "warn",
                required=b.first_party,
                remediation=fix,
                summary=f"{who} {b.name} ({dist}) is broken at {b.stage}: {b.error}",
            )
        )
    for err in plugins.errors:
        checks.append(
            Check(
                id="registry",
                status="warn",
                required=False,
                summary=err.message,
                remediation=err.remediation.action,
            )
        )
    return checks


# ---------------------------------------------------------------------------
# MCP client registrations
# ---------------------------------------------------------------------------


def expected_vectors() -> tuple[CommandVector, list[CommandVector]]:
    """The vector rea recommends (this interpreter, ``-m rea serve``) and every vector doctor accepts."""
    expected = CommandVector(command=sys.executable, args=["-m", "rea", "serve"])
    accepted = [expected]
    script = console_script()
    if script is not None:
        accepted.append(CommandVector(command=script, args=["serve"]))
    return expected, accepted


def console_script() -> str | None:
    """This environment's ``rea`` console script, when installed."""
    name = "rea.exe" if os.name == "nt" else "rea"
    path = os.path.join(sysconfig.get_path("scripts"), name)
    return path if os.path.isfile(path) else None


def config_paths_for(
    home: str, project_dir: str, *, system: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Default location of each known client file; keys are the ``config_paths`` override keys."""
    system = system or sys.platform
    env = {} if env is None else env
    # VS Code's user profile folder holds its mcp.json (a `servers` table, not `mcpServers`).
    if system == "darwin":
        support = os.path.join(home, "Library", "Application Support")
        desktop = os.path.join(support, "Claude", "claude_desktop_config.json")
        vscode = os.path.join(support, "Code", "User", "mcp.json")
    elif system.startswith("win"):
        appdata = env.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
        desktop = os.path.join(appdata, "Claude", "claude_desktop_config.json")
        vscode = os.path.join(appdata, "Code", "User", "mcp.json")
    else:
        desktop = os.path.join(home, ".config", "Claude", "claude_desktop_config.json")
        vscode = os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "Code", "User", "mcp.json")
    codex_home = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    return {
        "claude-desktop": desktop,
        "claude-code": os.path.join(home, ".claude.json"),
        "claude-code-project": os.path.join(project_dir, ".mcp.json"),
        "cursor": os.path.join(home, ".cursor", "mcp.json"),
        "vscode": vscode,
        "codex": os.path.join(codex_home, "config.toml"),
        # Windsurf's Cascade reads this one file on every system (under %USERPROFILE% on Windows).
        "windsurf": os.path.join(home, ".codeium", "windsurf", "mcp_config.json"),
    }


class _Unusable(Exception):
    """A configuration file that cannot be used, with the registration state it implies."""

    def __init__(self, state: ClientState, code: str, reason: str) -> None:
        super().__init__(reason)
        self.state: ClientState = state
        self.code = code
        self.reason = reason


# A client's configuration file is its own JSON (or TOML) document: read as JSON, not as rea records.


def _load(path: str, parse: Callable[[bytes], JSONValue]) -> JSONObject:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise _Unusable("missing", "file_missing", "configuration file does not exist") from None
    except OSError as exc:
        raise _Unusable("invalid", "unreadable", f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _Unusable("invalid", "too_large", f"file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        doc = parse(data)
    except (ValueError, msgspec.DecodeError) as exc:  # tomllib.TOMLDecodeError and UnicodeDecodeError too
        raise _Unusable("invalid", "parse_error", f"cannot parse the file: {exc}") from None
    except RecursionError:  # both parsers recurse per nesting level
        raise _Unusable("invalid", "parse_error", "cannot parse the file: nesting is too deep") from None
    if not isinstance(doc, dict):
        raise _Unusable("invalid", "bad_shape", f"top level is {type(doc).__name__}, not an object")
    return doc


def _json(data: bytes) -> JSONValue:
    doc: JSONValue = msgspec.json.decode(data)
    return doc


def _toml(data: bytes) -> JSONValue:
    # TOML's dates and times are the only values beyond JSON; a server entry holds none, and none is written back.
    doc: JSONValue = tomllib.loads(data.decode("utf-8"))
    return doc


def _server_entry(doc: JSONObject, keys: tuple[str, ...], table: str) -> JSONValue:
    """Walk ``keys`` to the servers table and return its ``rea`` entry."""
    node: JSONValue = doc
    walked = []
    for key in keys:
        walked.append(key)
        if not isinstance(node, dict) or key not in node:
            raise _Unusable("missing", "entry_missing", f"no {'.'.join(walked)} table in the file")
        node = node[key]
    if not isinstance(node, dict):
        raise _Unusable("invalid", "bad_shape", f"{table} is {type(node).__name__}, not an object")
    if SERVER_NAME not in node:
        raise _Unusable("missing", "entry_missing", f"{table} has no {SERVER_NAME!r} server")
    entry: JSONValue = node[SERVER_NAME]
    return entry


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _same_interpreter(a: str, b: str) -> bool:
    # A venv's python is a symlink to the base interpreter: the directory must match too.
    return _same_file(a, b) and _same_file(os.path.dirname(a), os.path.dirname(b))


def _resolve(command: str, env_path: str | None) -> str | None:
    if os.path.isabs(command):
        return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
    return shutil.which(command, path=env_path)


class EntryVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """How one ``rea`` server entry relates to this rea."""

    state: ClientState
    reason_code: str
    reason: str
    entry: CommandVector | None = None
    resolved_command: str | None = None


def classify_entry(entry: JSONValue, env: Mapping[str, str]) -> EntryVerdict:
    """Classify one server entry (a client's ``{"command", "args", "env"}`` object)."""
    if not isinstance(entry, dict):
        return EntryVerdict(
            state="invalid",
            reason_code="bad_shape",
            reason=f"the {SERVER_NAME!r} entry is {type(entry).__name__}, not an object",
        )
    command, args, entry_env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    if command is None and isinstance(entry.get("url"), str):
        return EntryVerdict(
            state="stale",
            reason_code="remote_server",
            reason=f"registered as a remote server at {entry['url']}, not a local process",
        )
    shape_error = None
    if not isinstance(command, str) or not command:
        shape_error = "the entry has no command string"
    elif not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        shape_error = "args is not a list of strings"
    elif not isinstance(entry_env, dict) or not all(isinstance(v, str) for v in entry_env.values()):
        shape_error = "env is not an object of strings"
    if (
        shape_error is not None
        or not isinstance(command, str)
        or not isinstance(args, list)
        or not isinstance(entry_env, dict)
    ):
        return EntryVerdict(state="invalid", reason_code="bad_shape", reason=shape_error or "bad command")
    vector = CommandVector(command=command, args=[str(a) for a in args])
    if not os.path.isabs(command) and os.sep in command:
        return EntryVerdict(
            state="stale",
            reason_code="relative_command",
            entry=vector,
            reason=f"{command} is relative to the client's unknown working directory",
        )
    entry_path = entry_env.get("PATH")
    resolved = _resolve(command, entry_path if isinstance(entry_path, str) else env.get("PATH"))
    if resolved is None:
        return EntryVerdict(
            state="stale",
            reason_code="command_not_found",
            entry=vector,
            reason=f"{command} is not an executable file on this machine",
        )
    script = console_script()
    if _same_interpreter(resolved, sys.executable):
        expected = ["-m", "rea", "serve"]
    elif script is not None and _same_file(resolved, script):
        expected = ["serve"]
    else:
        python = re.fullmatch(r"python[0-9.]*(\.exe)?", os.path.basename(resolved)) is not None
        return EntryVerdict(
            state="stale",
            reason_code="other_interpreter" if python else "other_program",
            entry=vector,
            resolved_command=resolved,
            reason=f"{command} resolves to {resolved}, not this rea's interpreter or script",
        )
    # Exact arguments: `rea serve` takes no options, so anything else would fail at client start.
    if args != expected:
        return EntryVerdict(
            state="stale",
            reason_code="wrong_args",
            entry=vector,
            resolved_command=resolved,
            reason=f"runs this rea but with arguments {args}, not {expected}",
        )
    return EntryVerdict(
        state="aligned",
        reason_code="aligned",
        entry=vector,
        resolved_command=resolved,
        reason=f"runs this rea ({resolved} {' '.join(expected)})",
    )


# (client, scope, config_paths key, parser, keys to the servers table; "{project}" is the project dir)
_SOURCES: tuple[tuple[ClientId, Scope, str, Callable[[bytes], JSONValue], tuple[str, ...]], ...] = (
    ("claude-desktop", "user", "claude-desktop", _json, ("mcpServers",)),
    ("claude-code", "user", "claude-code", _json, ("mcpServers",)),
    ("claude-code", "local", "claude-code", _json, ("projects", "{project}", "mcpServers")),
    ("claude-code", "project", "claude-code-project", _json, ("mcpServers",)),
    ("cursor", "user", "cursor", _json, ("mcpServers",)),
    ("vscode", "user", "vscode", _json, ("servers",)),
    ("codex", "user", "codex", _toml, ("mcp_servers",)),
    ("windsurf", "user", "windsurf", _json, ("mcpServers",)),
)


def _remediation(state: ClientState, client: str, expected: CommandVector) -> str | None:
    if state == "aligned":
        return None
    vector = " ".join([expected.command, *expected.args])
    if state == "invalid":
        return f"Fix the file so it parses, then register rea for {client} with the command vector: {vector}"
    return f"Register a server named {SERVER_NAME!r} for {client} with the command vector: {vector}"


def client_registrations(
    paths: Mapping[str, str], project_dir: str, env: Mapping[str, str], expected: CommandVector
) -> list[ClientRegistration]:
    """Classify the ``rea`` entry of every known client file, in a fixed order."""
    out = []
    for client, scope, key, parse, keys in _SOURCES:
        path = paths[key]
        walk = tuple(project_dir if k == "{project}" else k for k in keys)
        table = ".".join(keys).replace("{project}", "<project>")
        try:
            entry = _server_entry(_load(path, parse), walk, table)
        except _Unusable as why:
            out.append(
                ClientRegistration(
                    client=client,
                    scope=scope,
                    path=path,
                    state=why.state,
                    reason_code=why.code,
                    reason=why.reason,
                    remediation=_remediation(why.state, client, expected),
                )
            )
            continue
        v = classify_entry(entry, env)
        out.append(
            ClientRegistration(
                client=client,
                scope=scope,
                path=path,
                state=v.state,
                reason_code=v.reason_code,
                reason=v.reason,
                entry=v.entry,
                resolved_command=v.resolved_command,
                remediation=_remediation(v.state, client, expected),
            )
        )
    return out


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------


def doctor_report(
    registry: Registry,
    *,
    config_paths: dict[str, str] | None = None,
    home: str | None = None,
    project_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> JSONObject:
    """Build the doctor report as JSON-able builtins (shape: docs/doctor.md): the JSON ``rea doctor --json`` prints
    and the readers below take.

    ``home`` replaces ``~``; ``config_paths`` overrides single files by key; nothing is started or written.
    """
    env = os.environ if environ is None else environ
    project = os.path.abspath(project_dir or os.getcwd())
    # An explicit home is a sandbox: CODEX_HOME and APPDATA from the real environment must not leak in.
    paths = config_paths_for(home or os.path.expanduser("~"), project, env=env if home is None else {})
    paths.update(config_paths or {})
    providers = _providers(registry)
    ready = {p.id: p for p in providers}
    plugins = _plugins(registry)
    store = _annotations_dir(env, home)
    cache = _cache_report(env, home)
    checks = [
        _python_check(),
        _temp_check(),
        _settings_check(registry, env),
        _http_check(registry, env),
        _env_provider_check(registry, ready, env),
        _annotations_check(store),
        _cache_check(cache),
    ]
    filtered = _filter_check(env)
    if filtered is not None:
        checks.append(filtered)
    checks += _provider_checks(ready) + _plugin_checks(plugins)
    failures = [c.id for c in checks if c.status == "fail"]
    expected, accepted = expected_vectors()
    report = DoctorReport(
        schema_version=SCHEMA_VERSION,
        ok=not failures,
        exit_status=1 if failures else 0,
        failures=failures,
        host=_host(store, cache),
        checks=checks,
        providers=providers,
        plugins=plugins,
        clients=ClientsReport(
            expected=expected, accepted=accepted, registrations=client_registrations(paths, project, env, expected)
        ),
        cache=cache,
    )
    out: JSONObject = msgspec.to_builtins(report)
    return out


def exit_status(report: Mapping[str, Any]) -> int:
    """0 when every required check passed, else 1 (client registrations never fail the doctor)."""
    return 1 if report.get("failures") else 0


# ---------------------------------------------------------------------------
# human output
# ---------------------------------------------------------------------------


def _table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    from rea.cli.output import table

    return table(rows, headers, indent=indent, rule=False).split("\n")


def _cache_line(cache: Mapping[str, Any] | None) -> str:
    if cache is None:
        return "(REA_CACHE_DIR or REA_CACHE_MAX_BYTES is invalid)"
    if not cache["enabled"]:
        return f"{cache['directory']} (off: REA_CACHE_MAX_BYTES=0)"
    return f"{cache['directory']} ({cache['entries']} entries, {cache['bytes']} of {cache['max_bytes']} bytes)"


def format_doctor(report: Mapping[str, Any]) -> str:
    """A readable plain-text rendering of ``doctor_report``'s result."""
    failures = report["failures"]
    verdict = f"FAIL ({len(failures)} required check(s) failed: {', '.join(failures)})" if failures else "OK"
    host = report["host"]
    lines = [f"rea doctor: {verdict}", "", "Host"]
    lines += _table(
        ["ITEM", "VALUE"],
        [
            ["python", f"{host['python_version']} ({host['python_implementation']}) {host['python_executable']}"],
            ["platform", host["platform"]],
            ["rea", f"{host['rea_version']} {host['rea_package_path']}"],
            ["temp dir", host["temp_dir"]],
            ["annotations", host["annotations_dir"] or "(REA_ANNOTATIONS_DIR is invalid)"],
            ["analysis cache", _cache_line(report.get("cache"))],
        ],
    )
    lines += ["", "Checks"]
    lines += _table(
        ["STATUS", "CHECK", "REQUIRED", "SUMMARY"],
        [
            [
                c["status"],
                c["id"],
                "yes" if c["required"] else "no",
                c["summary"] + (f" -> {c['remediation']}" if c["remediation"] and c["status"] != "pass" else ""),
            ]
            for c in report["checks"]
        ],
    )
    lines += ["", "Providers"]
    lines += _table(
        ["ID", "KIND", "PRIORITY", "STATUS", "PLUGIN", "FORMATS", "REASON"],
        [
            [
                p["id"],
                p["kind"],
                str(p["auto_priority"]),
                p["status"] + (f" ({p['code']})" if p["code"] else ""),
                p["plugin"] or "-",
                ",".join(p["formats"]) or "-",
                p["reason"] + (f" -> {p['remediation']}" if p["remediation"] else ""),
            ]
            for p in report["providers"]
        ],
    )
    plugins = report["plugins"]
    lines += ["", "Plugins"]
    lines += _table(
        ["NAME", "DISTRIBUTION", "VERSION", "HOOKS"],
        [
            [p["name"], p["distribution"] or "-", p["version"] or "-", ",".join(p["hooks"]) or "-"]
            for p in plugins["loaded"]
        ],
    )
    for b in plugins["broken"]:
        dist = b["distribution"] or "no distribution"
        lines.append(f"  BROKEN {b['name']} ({dist}) at {b['stage']}: {b['error']}")
    clients = report["clients"]
    expected = clients["expected"]
    lines += [
        "",
        f"MCP clients (expected: {' '.join([expected['command'], *expected['args']])}; "
        f"live server: {report['live_server']})",
    ]
    lines += _table(
        ["CLIENT", "SCOPE", "STATE", "PATH", "REASON"],
        [[r["client"], r["scope"], r["state"], r["path"], r["reason"]] for r in clients["registrations"]],
    )
    return "\n".join(lines)
