"""CLI output: JSON for machines, readable text for people, canonical errors for both."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import msgspec

from rea.errors import ReaError


def emit_json(value: Any, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    stream.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
    stream.flush()


def emit_error(err: ReaError, fmt: str) -> None:
    """JSON ``{"error": ...}`` on stdout with ``--format json``; a readable message on stderr otherwise."""
    if fmt == "json":
        emit_json({"error": err.projection()})
        return
    lines = [f"rea: error [{err.code}] {err.message}"]
    issues = err.details.get("issues") if isinstance(err.details, dict) else None
    for item in issues or []:
        lines.append(f"  - {item.get('path')}: {item.get('message')} ({item.get('reason')})")
    if err.remediation:
        lines.append(f"  remediation: {err.remediation}")
    print("\n".join(lines), file=sys.stderr)


def table(rows: list[list[str]], headers: list[str]) -> str:
    """A plain aligned text table."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def render_text(value: Any) -> str:
    """Human rendering for tool results: indented JSON is the honest default."""
    return json.dumps(value, indent=2, ensure_ascii=False)
