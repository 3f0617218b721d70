"""Write each known MCP client's configuration file into a temporary home, as the client would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rea import doctor

# (client, scope) pairs doctor reports, in its fixed order.
KINDS = [
    ("claude-desktop", "user"),
    ("claude-code", "user"),
    ("claude-code", "local"),
    ("claude-code", "project"),
    ("cursor", "user"),
    ("vscode", "user"),
    ("codex", "user"),
    ("windsurf", "user"),
]
_PATH_KEY = {
    ("claude-desktop", "user"): "claude-desktop",
    ("claude-code", "user"): "claude-code",
    ("claude-code", "local"): "claude-code",
    ("claude-code", "project"): "claude-code-project",
    ("cursor", "user"): "cursor",
    ("vscode", "user"): "vscode",
    ("codex", "user"): "codex",
    ("windsurf", "user"): "windsurf",
}


def config_path(kind: tuple[str, str], home: Path, project: Path) -> Path:
    """Where doctor looks for ``kind`` under ``home`` (platform-specific for Claude Desktop)."""
    return Path(doctor.config_paths_for(str(home), str(project))[_PATH_KEY[kind]])


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    # JSON strings, integers and lists of them are valid TOML for the ASCII values the tests use.
    return json.dumps(value)


def _toml(servers: dict[str, Any]) -> str:
    lines = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            lines += ["[mcp_servers]", f"{json.dumps(name)} = {_toml_value(entry)}"]
            continue
        lines.append(f"[mcp_servers.{json.dumps(name)}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def write_servers(kind: tuple[str, str], home: Path, project: Path, servers: dict[str, Any]) -> Path:
    """Write a file for ``kind`` whose server table is ``servers``; returns its path."""
    path = config_path(kind, home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind[0] == "codex":
        path.write_text(_toml(servers))
    elif kind == ("claude-code", "local"):
        doc = {"numStartups": 3, "projects": {str(project): {"mcpServers": servers, "allowedTools": []}}}
        path.write_text(json.dumps(doc))
    elif kind[0] == "vscode":
        path.write_text(json.dumps({"servers": servers, "inputs": []}))
    else:
        path.write_text(json.dumps({"mcpServers": servers}))
    return path


def write_raw(kind: tuple[str, str], home: Path, project: Path, text: str) -> Path:
    path = config_path(kind, home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
