"""``rea setup`` against a temporary home for every client: it writes what doctor calls aligned, a second run
changes nothing, and a file it replaces is backed up first."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import doctor
from rea.cli import setup
from rea.errors import ReaError
from rea.registry import Registry

CLIENTS = list(setup.CLIENT_IDS)
VECTOR = {"command": sys.executable, "args": ["-m", "rea", "serve"]}


def _path(client: str, home: Path) -> Path:
    spec = next(s for s in setup.SPECS if s.id == client)
    return Path(doctor.config_paths_for(str(home), str(home / "project"))[spec.path_key])


def _run(home: Path, **kwargs: Any) -> setup.SetupReport:
    kwargs.setdefault("write", True)
    return setup.setup_report(home=str(home), project_dir=str(home / "project"), **kwargs)


def _changes(report: setup.SetupReport, client: str) -> list[setup.FileChange]:
    return next(p for p in report.clients if p.client == client).changes


def _doctor_state(registry: Registry, home: Path, client: str) -> dict[str, Any]:
    report = doctor.doctor_report(
        registry, home=str(home), project_dir=str(home / "project"), environ={"PATH": os.environ["PATH"]}
    )
    return next(r for r in report["clients"]["registrations"] if r["client"] == client and r["scope"] == "user")


def _servers(client: str, path: Path) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads(path.read_text())["mcp_servers"])
    doc = json.loads(path.read_text())
    return dict(doc["servers" if client == "vscode" else "mcpServers"])


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".rea-backup-*"))


@pytest.mark.parametrize("client", CLIENTS)
def test_a_new_registration_is_aligned_and_a_second_run_changes_nothing(
    registry: Registry, home: Path, client: str
) -> None:
    path = _path(client, home)
    assert _doctor_state(registry, home, client)["state"] == "missing"
    first = _run(home, clients=[client])
    [change, *extra] = _changes(first, client)
    assert change.action == "create" and change.path == str(path) and change.state_after == "aligned", change
    assert path.is_file() and _backups(path) == []
    entry = _servers(client, path)["rea"]
    assert {k: entry[k] for k in ("command", "args")} == VECTOR
    assert _doctor_state(registry, home, client)["state"] == "aligned"
    written = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}

    second = _run(home, clients=[client])
    assert [c.action for c in _changes(second, client)] == ["unchanged"] * (1 + len(extra))
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == written, "the second run wrote"
    # No other client was touched.
    assert all(p.changes == [] for p in second.clients if p.client != client)


@pytest.mark.parametrize("client", CLIENTS)
def test_an_existing_file_keeps_its_other_servers_and_is_backed_up(registry: Registry, home: Path, client: str) -> None:
    path = _path(client, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    stale = {"command": "/nonexistent/python", "args": ["-m", "rea", "serve"]}
    if client == "codex":
        original = (
            '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "node"\nargs = ["x.js"]\n\n'
            '[mcp_servers.rea]\ncommand = "/nonexistent/python"\nargs = ["-m", "rea", "serve"]\n\n'
            '[mcp_servers.rea.env]\nMY_VAR = "1"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
        )
    else:
        table = "servers" if client == "vscode" else "mcpServers"
        other = {"command": "node", "args": ["x.js"]}
        original = json.dumps({"theme": "dark", table: {"other": other, "rea": {**stale, "env": {"MY_VAR": "1"}}}})
    path.write_text(original)
    assert _doctor_state(registry, home, client)["state"] == "stale"

    dry = _run(home, write=False)  # the file exists, so the client is found without --client
    change = _changes(dry, client)[0]
    assert change.action == "update" and "was stale" in change.reason and change.backup is None
    assert path.read_text() == original, "a dry run wrote"

    change = _changes(_run(home), client)[0]
    assert change.action == "update" and change.backup is not None
    assert Path(change.backup).read_text() == original
    servers = _servers(client, path)
    assert servers["other"] == {"command": "node", "args": ["x.js"]}
    assert {k: servers["rea"][k] for k in ("command", "args")} == VECTOR
    assert servers["rea"]["env"] == {"MY_VAR": "1"}, "the entry's own env is kept"
    assert _doctor_state(registry, home, client)["state"] == "aligned"
    if client == "codex":
        doc = tomllib.loads(path.read_text())
        assert doc["model"] == "o3" and doc["profiles"] == {"fast": {"model": "o4-mini"}}
        assert path.read_text().startswith("# my settings\n")
        assert servers["rea"]["tool_timeout_sec"] == setup.TOOL_TIMEOUT_S
        assert servers["rea"]["startup_timeout_sec"] == setup.STARTUP_TIMEOUT_S
    else:
        assert json.loads(path.read_text())["theme"] == "dark"

    again = _changes(_run(home), client)[0]
    assert again.action == "unchanged" and len(_backups(path)) == 1


def test_toolsets_are_the_servers_env_and_default_removes_them(home: Path) -> None:
    path = _path("cursor", home)
    _run(home, clients=["cursor"], toolsets="binary,evidence")
    assert _servers("cursor", path)["rea"]["env"] == {"REA_MCP_TOOLSETS": "binary,evidence"}
    assert _changes(_run(home, clients=["cursor"], toolsets="binary,evidence"), "cursor")[0].action == "unchanged"
    _run(home, clients=["cursor"], toolsets="default")
    assert "env" not in _servers("cursor", path)["rea"]
    with pytest.raises(ReaError) as info:
        _run(home, clients=["cursor"], toolsets="binary,nonsense")
    assert info.value.code == "configuration_invalid"


def test_claude_codes_timeouts_go_to_its_settings_env_and_a_users_value_is_kept(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "env": {"MCP_TOOL_TIMEOUT": "900000"}}))
    changes = _changes(_run(home), "claude-code")  # ~/.claude exists: Claude Code is found
    assert [c.path for c in changes] == [str(home / ".claude.json"), str(settings)]
    doc = json.loads(settings.read_text())
    assert doc["model"] == "opus"
    assert doc["env"] == {"MCP_TOOL_TIMEOUT": "900000", "MCP_TIMEOUT": str(setup.STARTUP_TIMEOUT_S * 1000)}
    assert _servers("claude-code", home / ".claude.json")["rea"]["type"] == "stdio"


def test_a_file_that_does_not_parse_is_refused_and_left_alone(home: Path) -> None:
    path = _path("cursor", home)
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {')
    report = _run(home)
    change = _changes(report, "cursor")[0]
    assert change.action == "refused" and "cannot parse" in change.reason
    assert path.read_text() == '{"mcpServers": {' and _backups(path) == []


def test_nothing_is_found_in_an_empty_home_and_a_dry_run_writes_nothing(home: Path) -> None:
    report = _run(home, write=False, clients=CLIENTS, agents_file=str(home / "AGENTS.md"))
    assert not report.written and all(p.detected is False for p in report.clients)
    assert {c.action for p in report.clients for c in p.changes} == {"create"}
    assert list(home.iterdir()) == []
    assert _run(home, write=False).clients[0].changes == []


def test_the_agents_file_is_short_idempotent_and_backed_up(home: Path) -> None:
    path = home / "AGENTS.md"
    assert len(setup.AGENTS_TEXT.encode()) <= setup.AGENTS_LIMIT
    for tool in ("binary_session", "open_binary", "search_tools", "call_tool_by_name", "run_analysis_script"):
        assert tool in setup.AGENTS_TEXT
    assert "evidence_id" in setup.AGENTS_TEXT and "decompile" in setup.AGENTS_TEXT
    path.write_text("# my notes\n")
    first = _run(home, agents_file=str(path)).agents_file
    assert first is not None and first.action == "update" and first.backup is not None
    assert Path(first.backup).read_text() == "# my notes\n" and path.read_text() == setup.AGENTS_TEXT
    second = _run(home, agents_file=str(path)).agents_file
    assert second is not None and second.action == "unchanged" and len(_backups(path)) == 1


def test_every_tool_the_agents_file_names_is_registered(registry: Registry) -> None:
    import re

    named = set(re.findall(r"`([a-z_]+)(?: \{[^`]*)?`", setup.AGENTS_TEXT))
    tools = set(registry.tool_info())
    assert {n for n in named if "_" in n} - tools - {"evidence_id", "next_offset", "provider_id"} == set()


def test_the_cli_shows_then_writes(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rea.cli.main import main

    for var in ("CODEX_HOME", "APPDATA", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    (home / ".codex").mkdir()
    assert main(["setup"]) == 0
    out = capsys.readouterr().out
    assert "would create" in out and "Nothing was written" in out and "tool_timeout_sec" in out
    assert not (home / ".codex" / "config.toml").exists()
    assert main(["setup", "--write", "--json"]) == 0
    report = msgspec.convert(json.loads(capsys.readouterr().out), setup.SetupReport)
    assert report.written and _changes(report, "codex")[0].state_after == "aligned"
    assert (home / ".codex" / "config.toml").is_file()


def test_a_remote_registration_becomes_this_local_process(registry: Registry, home: Path) -> None:
    path = _path("windsurf", home)
    path.parent.mkdir(parents=True)
    remote = {"serverUrl": "http://127.0.0.1:9/mcp", "headers": {"A": "b"}, "type": "http", "disabled": False}
    path.write_text(json.dumps({"mcpServers": {"rea": remote}}))
    assert _changes(_run(home), "windsurf")[0].action == "update"
    assert _servers("windsurf", path)["rea"] == {**VECTOR, "disabled": False}
    assert _doctor_state(registry, home, "windsurf")["state"] == "aligned"
