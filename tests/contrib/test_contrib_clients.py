"""The ready-to-copy client configurations parse and are aligned with this environment's rea."""

from __future__ import annotations

import json
import os
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import pytest
from contrib_support import CLIENTS_DIR

from rea import doctor
from rea import registry as registry_mod

FILES = {
    "claude-desktop": CLIENTS_DIR / "claude-desktop" / "claude_desktop_config.json",
    "claude-code": CLIENTS_DIR / "claude-code" / ".mcp.json",
    "cursor": CLIENTS_DIR / "cursor" / "mcp.json",
    "codex": CLIENTS_DIR / "codex" / "config.toml",
    "vscode": CLIENTS_DIR / "vscode" / "mcp.json",
    "windsurf": CLIENTS_DIR / "windsurf" / "mcp_config.json",
}


def _servers(path: Path) -> dict[str, Any]:
    if path.suffix == ".toml":
        table: dict[str, Any] = tomllib.loads(path.read_text())["mcp_servers"]
        return table
    doc = json.loads(path.read_text())
    servers: dict[str, Any] = doc["servers" if path.parent.name == "vscode" else "mcpServers"]
    return servers


@pytest.mark.parametrize("client", sorted(FILES))
def test_each_configuration_parses_and_runs_rea_serve(client: str) -> None:
    servers = _servers(FILES[client])
    assert list(servers) == ["rea"]
    assert servers["rea"]["command"] == "rea"
    assert servers["rea"]["args"] == ["serve"]


def test_the_readme_names_every_file() -> None:
    readme = (CLIENTS_DIR / "README.md").read_text()
    for path in FILES.values():
        assert str(path.relative_to(CLIENTS_DIR)) in readme


def test_doctor_finds_them_aligned_with_this_environment(tmp_path: Path) -> None:
    scripts = sysconfig.get_path("scripts")
    if not os.path.isfile(os.path.join(scripts, "rea")):
        pytest.skip(f"rea is not installed as a console script in {scripts} (run `pip install -e .`)")
    # "This environment": its scripts directory first on PATH, as an activated virtualenv has it.
    env = {"PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")])}
    paths = {
        "claude-desktop": str(FILES["claude-desktop"]),
        "claude-code": str(FILES["claude-code"]),
        "claude-code-project": str(FILES["claude-code"]),
        "cursor": str(FILES["cursor"]),
        "codex": str(FILES["codex"]),
        "vscode": str(FILES["vscode"]),
        "windsurf": str(FILES["windsurf"]),
    }
    report = doctor.doctor_report(
        registry_mod.load(), config_paths=paths, home=str(tmp_path), project_dir=str(tmp_path), environ=env
    )
    states = {(r["client"], r["scope"]): r for r in report["clients"]["registrations"]}
    for key in [
        ("claude-desktop", "user"),
        ("claude-code", "user"),
        ("claude-code", "project"),
        ("cursor", "user"),
        ("codex", "user"),
        ("vscode", "user"),
        ("windsurf", "user"),
    ]:
        assert states[key]["state"] == "aligned", states[key]
        assert states[key]["entry"] == {"command": "rea", "args": ["serve"]}
        assert os.path.samefile(states[key]["resolved_command"], os.path.join(scripts, "rea"))
    # The project-local scope lives only in ~/.claude.json's "projects" table, which a copied file lacks.
    assert states[("claude-code", "local")]["state"] == "missing"
