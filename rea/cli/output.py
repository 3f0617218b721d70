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


def table(rows: list[list[str]], headers: list[str], *, indent: str = "", rule: bool = True) -> str:
    """A plain aligned text table (optionally indented, with a dashed rule under the headers)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: list[str]) -> str:
        return indent + "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    out = [line(headers)] + ([line(["-" * w for w in widths])] if rule else [])
    out.extend(line(r) for r in rows)
    return "\n".join(out)


LIST_PREVIEW = 12


def _item(value: Any) -> str:
    if isinstance(value, dict):
        return "  ".join(f"{k}={_scalar(v)}" for k, v in value.items() if not isinstance(v, (dict, list)))
    return _scalar(value)


def _scalar(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "..."


def _outline(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict):
                out.append(f"{pad}{key}:")
                _outline(sub, indent + 2, out)
            elif isinstance(sub, list):
                out.append(f"{pad}{key}: {len(sub)} item{'s' if len(sub) != 1 else ''}")
                for item in sub[:LIST_PREVIEW]:
                    out.append(f"{pad}  - {_item(item)}")
                if len(sub) > LIST_PREVIEW:
                    out.append(f"{pad}  ... {len(sub) - LIST_PREVIEW} more (use --format json for all)")
            else:
                out.append(f"{pad}{key}: {_scalar(sub)}")
    else:
        out.append(pad + _scalar(value))


def render_text(value: Any) -> str:
    """A readable outline of a result; Evidence gets a header naming its identity and provider."""
    out: list[str] = []
    if isinstance(value, dict) and "evidence_id" in value and "normalized_result" in value:
        subject = value.get("subject") or {}
        provider = value.get("provider") or {}
        out.append(f"{value['operation']}  {value['evidence_id']}")
        if subject:
            out.append(f"target: {subject.get('local_path')}  ({subject.get('format')}, "
                       f"{subject.get('architecture')}, {subject.get('size')} bytes, sha256 "
                       f"{subject.get('digest', {}).get('sha256', '')[:16]}...)")
        out.append(f"provider: {provider.get('id')} {provider.get('version')}")
        for limitation in value.get("limitations") or []:
            out.append(f"limitation: {limitation}")
        out.append("")
        _outline(value["normalized_result"], 0, out)
    else:
        _outline(value, 0, out)
    return "\n".join(out)
