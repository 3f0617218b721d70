"""``rea setup``: register rea with the MCP clients on this machine, and write an agent instructions file.

The command vector written is the one ``rea doctor`` expects (``rea.doctor.expected_vectors``: this interpreter with
``-m rea serve``), so doctor reports every file setup wrote as aligned. Nothing is written without ``--write``; a
file that changes is backed up first, and a second run changes nothing. A file that does not parse is never
overwritten: its client is refused with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from collections.abc import Mapping
from typing import Literal

import msgspec

from rea import doctor
from rea.cli.args import ArgumentParser
from rea.cli.output import emit_json
from rea.config import read_toolsets
from rea.errors import ReaError
from rea.records import JSONObject
from rea.records import JSONValue
from rea.registry import ON_DEMAND_TOOLSETS
from rea.registry import TOOLSET_ORDER

SCHEMA_VERSION = 1
SERVER = doctor.SERVER_NAME
# A call may take minutes: whole-program analysis of a large binary, batch decompilation, compare_binaries on two
# library versions (80 s measured on libLLVM 14 vs 15), corpus triage. Clients stop waiting after 60 s by default;
# 600 s covers rea's own bounded operations (they end with a typed error or a partial answer before it) while a
# hung call still ends. The first start builds the tool manifest: 60 s instead of Codex's 10.
TOOL_TIMEOUT_S = 600
STARTUP_TIMEOUT_S = 60

Action = Literal["create", "update", "unchanged", "refused"]


class ClientSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where one client keeps its servers and what its entry carries besides the command vector."""

    id: doctor.ClientId
    name: str
    path_key: str  # a key of doctor.config_paths_for
    fmt: Literal["json", "toml"]
    table: tuple[str, ...]
    # What the client's entry carries besides the command vector, in the client's own configuration vocabulary.
    extra: JSONObject = {}
    timeout: str  # what setup does about the client's call timeout, and why


SPECS: tuple[ClientSpec, ...] = (
    ClientSpec(
        id="claude-code",
        name="Claude Code",
        path_key="claude-code",
        fmt="json",
        table=("mcpServers",),
        extra={"type": "stdio"},
        timeout=(
            f"MCP_TOOL_TIMEOUT={TOOL_TIMEOUT_S * 1000} and MCP_TIMEOUT={STARTUP_TIMEOUT_S * 1000} (ms) in the env "
            "of ~/.claude/settings.json (a value already there is kept)"
        ),
    ),
    ClientSpec(
        id="claude-desktop",
        name="Claude Desktop",
        path_key="claude-desktop",
        fmt="json",
        table=("mcpServers",),
        timeout="none: Claude Desktop has no timeout setting",
    ),
    ClientSpec(
        id="cursor",
        name="Cursor",
        path_key="cursor",
        fmt="json",
        table=("mcpServers",),
        timeout="none: Cursor's mcp.json has no timeout setting",
    ),
    ClientSpec(
        id="vscode",
        name="VS Code",
        path_key="vscode",
        fmt="json",
        table=("servers",),
        extra={"type": "stdio"},
        timeout="none: VS Code's mcp.json has no timeout setting",
    ),
    ClientSpec(
        id="codex",
        name="Codex",
        path_key="codex",
        fmt="toml",
        table=("mcp_servers",),
        extra={"startup_timeout_sec": STARTUP_TIMEOUT_S, "tool_timeout_sec": TOOL_TIMEOUT_S},
        timeout=f"startup_timeout_sec = {STARTUP_TIMEOUT_S}, tool_timeout_sec = {TOOL_TIMEOUT_S} (defaults 10 and 60)",
    ),
    ClientSpec(
        id="windsurf",
        name="Windsurf",
        path_key="windsurf",
        fmt="json",
        table=("mcpServers",),
        timeout="none: Windsurf's mcp_config.json has no timeout setting",
    ),
)
CLIENT_IDS = tuple(s.id for s in SPECS)


class FileChange(msgspec.Struct, frozen=True, kw_only=True):
    """One file setup would write (or wrote), and what it holds for rea afterwards."""

    client: str
    path: str
    action: Action
    reason: str
    # The rea entry after the change (the settings' env for Claude Code's settings file): the client's JSON.
    entry: JSONObject | None = None
    backup: str | None = None
    # doctor's verdict on the entry after the change: "aligned" when it runs this rea.
    state_after: str | None = None


class ClientPlan(msgspec.Struct, frozen=True, kw_only=True):
    client: str
    name: str
    detected: bool
    timeout: str
    changes: list[FileChange]


class SetupReport(msgspec.Struct, frozen=True, kw_only=True):
    schema_version: int
    written: bool
    command: list[str]
    toolsets: str | None
    clients: list[ClientPlan]
    agents_file: FileChange | None = None


class _Refused(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------------
# the server entry
# ---------------------------------------------------------------------------------------------------------------


def _entry(spec: ClientSpec, old: JSONValue, toolsets: str | None) -> JSONObject:
    """The entry setup writes: the old one's other keys kept (a user's own env), the vector and extras set."""
    expected, _ = doctor.expected_vectors()
    entry: JSONObject = dict(old) if isinstance(old, dict) else {}
    # A remote registration (url, Windsurf's serverUrl, their headers and transport type) becomes this local process.
    for key in ("url", "serverUrl", "headers"):
        entry.pop(key, None)
    if entry.get("type") not in (None, "stdio"):
        del entry["type"]
    entry.update(spec.extra)
    entry.pop("command", None)
    entry.pop("args", None)
    entry = {"command": expected.command, "args": list(expected.args), **entry}
    old_env = entry.get("env")
    env: JSONObject = dict(old_env) if isinstance(old_env, dict) else {}
    if toolsets is not None:
        if toolsets == "default":
            env.pop("REA_MCP_TOOLSETS", None)
        else:
            env["REA_MCP_TOOLSETS"] = toolsets
    if env:
        entry["env"] = env
    else:
        entry.pop("env", None)
    return entry


def _read(path: str, parse: Callable[[bytes], JSONValue]) -> JSONObject | None:
    """The parsed file, None when it does not exist; a file that is unusable is refused, never overwritten."""
    try:
        return doctor._load(path, parse)
    except doctor._Unusable as why:
        if why.code == "file_missing":
            return None
        raise _Refused(f"{why.reason}; fix it by hand, then run rea setup again") from None


def _walk(doc: JSONObject, keys: tuple[str, ...], create: bool) -> JSONObject | None:
    node = doc
    for key in keys:
        child = node.get(key)
        if child is None and create:
            created: JSONObject = {}
            child = node[key] = created
        if not isinstance(child, dict):
            if child is None:
                return None
            raise _Refused(f"{'.'.join(keys)} is {type(child).__name__}, not an object; fix it by hand")
        node = child
    return node


# -- TOML (Codex): the rea table is replaced as text, the rest of the file kept byte for byte ------------------

_REA_HEADER = re.compile(r"""^\s*\[\s*mcp_servers\s*\.\s*(?:rea|"rea"|'rea')\s*(?:\]|\.)""")
_ANY_HEADER = re.compile(r"^\s*\[")


def _toml_value(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string (its escapes are TOML's)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise _Refused(f"cannot write a {type(value).__name__} value in TOML; edit the file by hand")


def _toml_text(old_text: str, entry: JSONObject) -> str:
    kept: list[str] = []
    inside = False
    for line in old_text.splitlines(keepends=True):
        if _ANY_HEADER.match(line):
            inside = bool(_REA_HEADER.match(line))
        if not inside:
            kept.append(line)
    body = "".join(kept).rstrip("\n")
    block = f"[mcp_servers.{SERVER}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())
    return (body + "\n\n" if body else "") + block


# ---------------------------------------------------------------------------------------------------------------
# planning and writing one file
# ---------------------------------------------------------------------------------------------------------------


class _Pending(msgspec.Struct, kw_only=True):
    change: FileChange
    text: str | None = None  # what to write, when the action writes


def _plan_server(spec: ClientSpec, path: str, toolsets: str | None, env: Mapping[str, str]) -> _Pending:
    parse = doctor._toml if spec.fmt == "toml" else doctor._json
    try:
        doc = _read(path, parse)
        old_doc = doc if doc is not None else {}
        table = _walk(old_doc, spec.table, create=False)
        old = table.get(SERVER) if table is not None else None
        entry = _entry(spec, old, toolsets)
        if old == entry:
            return _Pending(
                change=_done(spec, path, "unchanged", "already registered as rea setup writes it", entry, env)
            )
        if spec.fmt == "toml":
            old_text = _text(path) if doc is not None else ""
            text = _toml_text(old_text, entry)
            _check_toml(text, old_doc, entry)
        else:
            new_doc: JSONObject = json.loads(json.dumps(old_doc))
            servers = _walk(new_doc, spec.table, create=True)
            assert servers is not None
            servers[SERVER] = entry
            text = json.dumps(new_doc, indent=2, ensure_ascii=False) + "\n"
    except _Refused as refused:
        return _Pending(change=FileChange(client=spec.id, path=path, action="refused", reason=str(refused)))
    action: Action = "create" if doc is None else "update"
    why = "no configuration file yet" if doc is None else _why(old, env)
    return _Pending(change=_done(spec, path, action, why, entry, env), text=text)


def _why(old: JSONValue, env: Mapping[str, str]) -> str:
    if old is None:
        return f"the file has no {SERVER!r} server"
    verdict = doctor.classify_entry(old, env)
    if verdict.state == "aligned":
        return "runs this rea; its timeouts or toolsets change"
    return f"was {verdict.state}: {verdict.reason}"


def _done(
    spec: ClientSpec, path: str, action: Action, reason: str, entry: JSONObject, env: Mapping[str, str]
) -> FileChange:
    state = doctor.classify_entry(entry, env).state
    return FileChange(client=spec.id, path=path, action=action, reason=reason, entry=entry, state_after=state)


def _check_toml(text: str, old_doc: JSONObject, entry: JSONObject) -> None:
    """The rewritten file parses, holds exactly ``entry`` for rea, and everything else as before."""
    try:
        new_doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _Refused(f"the rea table is not one [mcp_servers.rea] table ({exc}); edit it by hand") from None
    servers = new_doc.get("mcp_servers", {})
    rest_new = {**new_doc, "mcp_servers": {k: v for k, v in servers.items() if k != SERVER}}
    old_servers = _walk(old_doc, ("mcp_servers",), create=False) or {}
    rest_old = {**old_doc, "mcp_servers": {k: v for k, v in old_servers.items() if k != SERVER}}
    if servers.get(SERVER) != entry or rest_new != rest_old:
        raise _Refused("the file defines rea in a form setup cannot replace safely; edit it by hand")


def _plan_claude_settings(home: str) -> _Pending:
    """Claude Code reads its call and start timeouts from its environment: the ``env`` of its settings file."""
    path = os.path.join(home, ".claude", "settings.json")
    wanted = {"MCP_TOOL_TIMEOUT": str(TOOL_TIMEOUT_S * 1000), "MCP_TIMEOUT": str(STARTUP_TIMEOUT_S * 1000)}
    try:
        doc = _read(path, doctor._json)
        new_doc: JSONObject = json.loads(json.dumps(doc if doc is not None else {}))
        env = _walk(new_doc, ("env",), create=True)
        assert env is not None
        missing = {k: v for k, v in wanted.items() if k not in env}
        if not missing:
            return _Pending(
                change=FileChange(
                    client="claude-code", path=path, action="unchanged", reason="timeouts already set", entry=env
                )
            )
        env.update(missing)
    except _Refused as why:
        return _Pending(change=FileChange(client="claude-code", path=path, action="refused", reason=str(why)))
    return _Pending(
        change=FileChange(
            client="claude-code",
            path=path,
            action="create" if doc is None else "update",
            reason="sets " + ", ".join(f"{k}={v}" for k, v in missing.items()),
            entry=env,
        ),
        text=json.dumps(new_doc, indent=2, ensure_ascii=False) + "\n",
    )


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _backup_name(path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    name, n = f"{path}.rea-backup-{stamp}", 1
    while os.path.exists(name):
        n += 1
        name = f"{path}.rea-backup-{stamp}-{n}"
    return name


def _write(pending: _Pending) -> FileChange:
    """Write ``pending.text`` over its file atomically, after copying what it replaces beside it."""
    change = pending.change
    if pending.text is None or change.action in ("unchanged", "refused"):
        return change
    path = change.path
    backup = None
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        mode = 0o600  # client files may hold tokens: a new one is the user's alone
        if os.path.exists(path):
            backup = _backup_name(path)
            shutil.copy2(path, backup)
            mode = os.stat(path).st_mode & 0o7777
        tmp = f"{path}.rea-setup-{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(pending.text)
        os.replace(tmp, path)
    except OSError as exc:
        raise ReaError(
            "execution_failure",
            f"cannot write {path}: {exc.strerror or exc}",
            remediation="Check the folder's permissions, or register rea by hand with the entry rea setup shows.",
            details={"path": path, "backup": backup},
        ) from None
    return msgspec.structs.replace(change, backup=backup)


# ---------------------------------------------------------------------------------------------------------------
# the agent instructions file
# ---------------------------------------------------------------------------------------------------------------

AGENTS_TEXT = """\
# Reverse engineering with rea

The `rea` MCP server analyses binaries (ELF, PE, Mach-O), .NET, Android and JavaScript apps. Work in this order:

1. `binary_session`: what is open, the providers and toolsets available.
2. `open_binary {"path": ...}`: open the target (the best engine is chosen; `provider_id` picks one).
3. Find before you read: `binary_overview`, `search_strings`, `search_procedures` or `list_procedures`,
   `search_immediates`, `identify_crypto`.
4. Read one function: `analyze_function` (calls, strings, references), then `decompile_at` or
   `procedure_pseudo_code` for C.
5. A tool you do not see listed: `search_tools {"query": "..."}`, then
   `call_tool_by_name {"name": ..., "arguments": {...}}`.
6. A question that needs many calls (every caller of X, a loop over functions): one `run_analysis_script`
   whose Python script calls rea's tools.

Results are lean: each has an `evidence_id`. Cite it with every finding, and pass it to tools that take one
instead of asking again. Page long lists (`offset`, `limit`, `next_offset`) rather than asking for all.
Errors are typed: follow their `remediation`. Decompiled C is the engine's reading, not the source.
"""
AGENTS_LIMIT = 2048


def _plan_agents(path: str) -> _Pending:
    path = os.path.abspath(path)
    try:
        old = _text(path)
    except FileNotFoundError:
        old = None
    except (OSError, UnicodeDecodeError) as exc:
        return _Pending(change=FileChange(client="agents", path=path, action="refused", reason=f"cannot read: {exc}"))
    if old == AGENTS_TEXT:
        return _Pending(change=FileChange(client="agents", path=path, action="unchanged", reason="already written"))
    reason = "new file" if old is None else "replaces the file (kept as a backup)"
    action: Action = "create" if old is None else "update"
    return _Pending(change=FileChange(client="agents", path=path, action=action, reason=reason), text=AGENTS_TEXT)


# ---------------------------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------------------------


def detected(spec: ClientSpec, path: str, home: str) -> bool:
    """A client is installed here when its file, or the folder of its own that holds it, exists."""
    folder = os.path.dirname(path)
    if os.path.exists(path) or (os.path.normpath(folder) != os.path.normpath(home) and os.path.isdir(folder)):
        return True
    # ~/.claude.json sits in the home itself: Claude Code's own folder says it is installed.
    return spec.id == "claude-code" and os.path.isdir(os.path.join(home, ".claude"))


def setup_report(
    *,
    home: str | None = None,
    project_dir: str | None = None,
    clients: list[str] | None = None,
    toolsets: str | None = None,
    agents_file: str | None = None,
    write: bool = False,
    environ: Mapping[str, str] | None = None,
) -> SetupReport:
    """Plan (and with ``write``, make) each client's registration; ``home`` replaces ``~`` as in doctor."""
    env = os.environ if environ is None else environ
    if toolsets is not None:
        # The server's own reader validates the value, so setup never writes one rea serve would refuse.
        read_toolsets({"REA_MCP_TOOLSETS": toolsets}, TOOLSET_ORDER, ON_DEMAND_TOOLSETS)
    # An explicit home is a sandbox, as in doctor: CODEX_HOME and APPDATA from the real environment stay out.
    sandboxed = home is not None
    home = home or os.path.expanduser("~")
    paths = doctor.config_paths_for(home, os.path.abspath(project_dir or os.getcwd()), env={} if sandboxed else env)
    plans = []
    for spec in SPECS:
        path = paths[spec.path_key]
        found = detected(spec, path, home)
        chosen = spec.id in clients if clients else found
        pending = [_plan_server(spec, path, toolsets, env)] if chosen else []
        if chosen and spec.id == "claude-code":
            pending.append(_plan_claude_settings(home))
        changes = [_write(p) if write else p.change for p in pending]
        plans.append(ClientPlan(client=spec.id, name=spec.name, detected=found, timeout=spec.timeout, changes=changes))
    agents = None
    if agents_file is not None:
        planned = _plan_agents(agents_file)
        agents = _write(planned) if write else planned.change
    expected, _ = doctor.expected_vectors()
    return SetupReport(
        schema_version=SCHEMA_VERSION,
        written=write,
        command=[expected.command, *expected.args],
        toolsets=toolsets,
        clients=plans,
        agents_file=agents,
    )


def format_report(report: SetupReport) -> str:
    verb = {"create": "creates", "update": "updates", "unchanged": "unchanged", "refused": "refused"}
    if not report.written:
        verb = {"create": "would create", "update": "would update", "unchanged": "unchanged", "refused": "refused"}
    lines = [f"rea setup: the server command is {' '.join(report.command)}"]
    for plan in report.clients:
        if not plan.changes:
            lines.append(f"\n{plan.name}: not found (choose it with --client {plan.client})")
            continue
        lines.append(f"\n{plan.name}{'' if plan.detected else ' (not found; chosen with --client)'}")
        lines.append(f"  call timeout: {plan.timeout}")
        for c in plan.changes:
            lines.append(f"  {verb[c.action]} {c.path}: {c.reason}")
            if c.entry is not None and c.action in ("create", "update"):
                for line in json.dumps(c.entry, indent=2).splitlines():
                    lines.append(f"    {line}")
            if c.backup:
                lines.append(f"    backup: {c.backup}")
    if report.agents_file is not None:
        a = report.agents_file
        lines.append(f"\nagent instructions: {verb[a.action]} {a.path}: {a.reason}")
    if not report.written:
        lines.append(
            "\nNothing was written. Run again with --write to make these changes (each replaced file is backed up)."
        )
    else:
        lines.append("\nRestart each client (or reload its MCP servers); `rea doctor` shows what is registered where.")
    return "\n".join(lines)


def run(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(
        prog=f"{prog} setup",
        description=(
            "Register rea with the MCP clients found on this machine (Claude Code, Claude Desktop, Cursor, VS Code, "
            "Codex, Windsurf). Shows the changes; --write makes them, backing up each file it replaces."
        ),
    )
    parser.add_argument("--write", action="store_true", help="write the changes (default: show them only)")
    parser.add_argument(
        "--client",
        action="append",
        choices=CLIENT_IDS,
        help="register this client even if it was not found (repeatable; default: every client found)",
    )
    parser.add_argument(
        "--toolsets",
        help="REA_MCP_TOOLSETS for the server: default, all, or a comma-separated list of " + ", ".join(TOOLSET_ORDER),
    )
    parser.add_argument("--agents-file", metavar="PATH", help="also write agent instructions (AGENTS.md form) there")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    ns = parser.parse_args(argv)
    report = setup_report(clients=ns.client, toolsets=ns.toolsets, agents_file=ns.agents_file, write=ns.write)
    if ns.json:
        emit_json(report)
    else:
        print(format_report(report))
    refused = any(c.action == "refused" for p in report.clients for c in p.changes)
    return 1 if refused or (report.agents_file is not None and report.agents_file.action == "refused") else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1:], "rea"))
