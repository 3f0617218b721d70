"""Each client registration classified aligned, stale, missing or invalid, for every client kind."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from doctor_support import KINDS
from doctor_support import config_path
from doctor_support import write_raw
from doctor_support import write_servers

from rea import doctor
from rea.registry import Registry

KIND_IDS = [f"{c}-{s}" for c, s in KINDS]
MODULE_VECTOR: dict[str, Any] = {"command": sys.executable, "args": ["-m", "rea", "serve"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _registrations(
    registry: Registry, home: Path, project: Path, environ: dict[str, str] | None = None
) -> dict[tuple[str, str], dict[str, Any]]:
    report = doctor.doctor_report(
        registry,
        home=str(home),
        project_dir=str(project),
        environ=environ if environ is not None else {"PATH": os.environ["PATH"]},
    )
    regs = report["clients"]["registrations"]
    assert [(r["client"], r["scope"]) for r in regs] == KINDS
    return {(r["client"], r["scope"]): r for r in regs}


def _only(regs: dict[tuple[str, str], dict[str, Any]], kind: tuple[str, str]) -> dict[str, Any]:
    """The registration of ``kind``; every other kind must be missing (the home holds one file)."""
    for other, reg in regs.items():
        if other != kind and config_path(other, Path("/"), Path("/")) != config_path(kind, Path("/"), Path("/")):
            assert reg["state"] == "missing", reg
    return regs[kind]


# --- aligned -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_aligned_interpreter_vector(registry: Registry, home: Path, project: Path, kind: tuple[str, str]) -> None:
    write_servers(kind, home, project, {"other": {"command": "node", "args": ["x.js"]}, "rea": MODULE_VECTOR})
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "aligned", reg
    assert reg["reason_code"] == "aligned"
    assert reg["entry"] == MODULE_VECTOR
    assert reg["remediation"] is None
    assert reg["path"] == str(config_path(kind, home, project))


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_aligned_console_script_vector(registry: Registry, home: Path, project: Path, kind: tuple[str, str]) -> None:
    script = doctor.console_script()
    if script is None:
        pytest.skip("rea is not installed as a console script in this environment")
    write_servers(kind, home, project, {"rea": {"command": script, "args": ["serve"], "env": {"X": "1"}}})
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "aligned", reg
    assert reg["resolved_command"] == script


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_aligned_bare_name_resolved_on_path(
    registry: Registry, home: Path, project: Path, kind: tuple[str, str]
) -> None:
    bindir, name = os.path.split(sys.executable)
    write_servers(kind, home, project, {"rea": {"command": name, "args": ["-m", "rea", "serve"]}})
    reg = _only(_registrations(registry, home, project, environ={"PATH": bindir}), kind)
    assert reg["state"] == "aligned", reg
    assert reg["resolved_command"] == sys.executable


# --- stale ---------------------------------------------------------------------------------


def _other_interpreter(tmp: Path) -> str:
    # A virtualenv's python is a symlink to the base interpreter in another directory.
    venv_bin = tmp / "other-venv" / "bin"
    venv_bin.mkdir(parents=True)
    link = venv_bin / "python3"
    link.symlink_to(os.path.realpath(sys.executable))
    return str(link)


STALE_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "missing-file": ({"command": "/nonexistent/venv/bin/python3", "args": ["-m", "rea", "serve"]}, "command_not_found"),
    "not-on-path": ({"command": "rea-definitely-not-installed", "args": ["serve"]}, "command_not_found"),
    "other-interpreter": ({"command": "<venv>", "args": ["-m", "rea", "serve"]}, "other_interpreter"),
    "other-program": ({"command": "/bin/sh", "args": ["-c", "rea serve"]}, "other_program"),
    "wrong-args": ({"command": sys.executable, "args": ["-m", "rea", "mcp"]}, "wrong_args"),
    "extra-args": ({"command": sys.executable, "args": ["-m", "rea", "serve", "--stdio"]}, "wrong_args"),
    "relative": ({"command": "venv/bin/rea", "args": ["serve"]}, "relative_command"),
    "remote": ({"url": "http://127.0.0.1:8765/mcp"}, "remote_server"),
}


@pytest.mark.parametrize("case", sorted(STALE_CASES))
@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_stale(registry: Registry, home: Path, project: Path, tmp_path: Path, kind: tuple[str, str], case: str) -> None:
    entry, code = STALE_CASES[case]
    entry = dict(entry)
    if entry.get("command") == "<venv>":
        entry["command"] = _other_interpreter(tmp_path)
    write_servers(kind, home, project, {"rea": entry})
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "stale", reg
    assert reg["reason_code"] == code
    assert sys.executable in reg["remediation"]


# --- missing -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_missing_file(registry: Registry, home: Path, project: Path, kind: tuple[str, str]) -> None:
    reg = _registrations(registry, home, project)[kind]
    assert reg["state"] == "missing"
    assert reg["reason_code"] == "file_missing"
    assert reg["entry"] is None
    assert " ".join([sys.executable, "-m", "rea", "serve"]) in reg["remediation"]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_missing_rea_entry(registry: Registry, home: Path, project: Path, kind: tuple[str, str]) -> None:
    write_servers(kind, home, project, {"REA": MODULE_VECTOR, "other": {"command": "node", "args": []}})
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "missing"
    assert reg["reason_code"] == "entry_missing"


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_missing_servers_table(registry: Registry, home: Path, project: Path, kind: tuple[str, str]) -> None:
    text = 'model = "o3"\n' if kind[0] == "codex" else '{"theme": "dark"}'
    write_raw(kind, home, project, text)
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "missing"
    assert reg["reason_code"] == "entry_missing"


def test_local_scope_of_another_project_is_missing(
    registry: Registry, home: Path, project: Path, tmp_path: Path
) -> None:
    write_servers(("claude-code", "local"), home, tmp_path / "elsewhere", {"rea": MODULE_VECTOR})
    reg = _registrations(registry, home, project)[("claude-code", "local")]
    assert reg["state"] == "missing"
    assert str(project) in reg["reason"]


# --- invalid -------------------------------------------------------------------------------

JSON_INVALID = {
    "unparseable": ('{"mcpServers": {"rea": {"command": "rea",}', "parse_error"),
    "top-level-list": ('[{"mcpServers": {}}]', "bad_shape"),
    "servers-not-object": ('{"mcpServers": ["rea"]}', "bad_shape"),
    "entry-not-object": ('{"mcpServers": {"rea": "python -m rea serve"}}', "bad_shape"),
    "args-not-list": ('{"mcpServers": {"rea": {"command": "rea", "args": "serve"}}}', "bad_shape"),
    "env-not-strings": ('{"mcpServers": {"rea": {"command": "rea", "args": [], "env": {"N": 1}}}}', "bad_shape"),
    "command-not-string": ('{"mcpServers": {"rea": {"command": ["rea"], "args": []}}}', "bad_shape"),
    "not-utf8": ('{"mcpServers": {"\udcff": {}}}', "parse_error"),
    "too-deep": ('{"mcpServers": ' + "[" * 100_000, "parse_error"),
}
TOML_INVALID = {
    "unparseable": ('[mcp_servers.rea\ncommand = "rea"\n', "parse_error"),
    "servers-not-table": ("mcp_servers = 3\n", "bad_shape"),
    "entry-not-table": ('[mcp_servers]\nrea = "python -m rea serve"\n', "bad_shape"),
    "args-not-list": ('[mcp_servers.rea]\ncommand = "rea"\nargs = "serve"\n', "bad_shape"),
    "env-not-strings": ('[mcp_servers.rea]\ncommand = "rea"\nargs = []\nenv = { N = 1 }\n', "bad_shape"),
    "command-missing": ('[mcp_servers.rea]\nargs = ["serve"]\n', "bad_shape"),
    "not-utf8": ('[mcp_servers.rea]\ncommand = "\udcff"\n', "parse_error"),
    "too-deep": ("[mcp_servers.rea]\nargs = " + "[" * 100_000, "parse_error"),
}


def _invalid_cases() -> list[Any]:
    cases = []
    for kind, kid in zip(KINDS, KIND_IDS, strict=True):
        table = TOML_INVALID if kind[0] == "codex" else JSON_INVALID
        for name, (text, code) in sorted(table.items()):
            if kind == ("claude-code", "local") and text.startswith('{"mcpServers"'):
                text = '{"projects": {"<project>": ' + text + "}}"
            if kind[0] == "vscode":  # VS Code's table of servers is `servers`
                text = text.replace('"mcpServers"', '"servers"')
            cases.append(pytest.param(kind, text, code, id=f"{kid}-{name}"))
    return cases


@pytest.mark.parametrize(("kind", "text", "code"), _invalid_cases())
def test_invalid(registry: Registry, home: Path, project: Path, kind: tuple[str, str], text: str, code: str) -> None:
    text = text.replace("<project>", str(project))
    path = config_path(kind, home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    reg = _only(_registrations(registry, home, project), kind)
    assert reg["state"] == "invalid", reg
    assert reg["reason_code"] == code
    assert reg["remediation"].startswith("Fix the file")


def test_unreadable_file_is_invalid(registry: Registry, home: Path, project: Path) -> None:
    # A directory where the file should be cannot be read, even by root (unlike a chmod 0 file).
    config_path(("cursor", "user"), home, project).mkdir(parents=True)
    reg = _registrations(registry, home, project)[("cursor", "user")]
    assert reg["state"] == "invalid"
    assert reg["reason_code"] == "unreadable"


def test_oversized_file_is_invalid(registry: Registry, home: Path, project: Path) -> None:
    path = config_path(("cursor", "user"), home, project)
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        fh.truncate(doctor.MAX_CONFIG_BYTES + 1)
    reg = _registrations(registry, home, project)[("cursor", "user")]
    assert (reg["state"], reg["reason_code"]) == ("invalid", "too_large")


# --- locations -----------------------------------------------------------------------------


def test_default_locations_per_platform(tmp_path: Path) -> None:
    home, project = str(tmp_path / "h"), str(tmp_path / "p")
    linux = doctor.config_paths_for(home, project, system="linux")
    mac = doctor.config_paths_for(home, project, system="darwin")
    assert linux["claude-desktop"] == f"{home}/.config/Claude/claude_desktop_config.json"
    assert mac["claude-desktop"] == f"{home}/Library/Application Support/Claude/claude_desktop_config.json"
    for paths in (linux, mac):
        assert paths["claude-code"] == f"{home}/.claude.json"
        assert paths["claude-code-project"] == f"{project}/.mcp.json"
        assert paths["cursor"] == f"{home}/.cursor/mcp.json"
        assert paths["codex"] == f"{home}/.codex/config.toml"
    assert doctor.config_paths_for(home, project, env={"CODEX_HOME": "/opt/codex"})["codex"] == "/opt/codex/config.toml"


def test_config_paths_override_one_file(registry: Registry, home: Path, project: Path, tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere" / "cursor.json"
    custom.parent.mkdir()
    custom.write_text(json.dumps({"mcpServers": {"rea": MODULE_VECTOR}}))
    report = doctor.doctor_report(
        registry, config_paths={"cursor": str(custom)}, home=str(home), project_dir=str(project), environ={}
    )
    regs = {(r["client"], r["scope"]): r for r in report["clients"]["registrations"]}
    assert regs[("cursor", "user")]["path"] == str(custom)
    assert regs[("cursor", "user")]["state"] == "aligned"
    assert regs[("codex", "user")]["path"] == str(home / ".codex" / "config.toml")


def test_home_override_ignores_codex_home(
    registry: Registry, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", "/nonexistent/codex-home")
    report = doctor.doctor_report(registry, home=str(home), project_dir=str(project))
    codex = next(r for r in report["clients"]["registrations"] if r["client"] == "codex")
    assert codex["path"] == str(home / ".codex" / "config.toml")
