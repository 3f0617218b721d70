"""CLI output: JSON for machines, readable text for people, canonical errors for both."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Mapping
from typing import Any
from typing import TextIO

import msgspec

from rea.errors import ReaError
from rea.records import JSONObject


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
    issues = err.details.get("issues")
    for item in issues if isinstance(issues, list | tuple) else ():
        if isinstance(item, Mapping):
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


# Below this many columns text is not wrapped narrower (a pipe gets the fallback width).
MIN_WIDTH = 60
FALLBACK_WIDTH = 100
MIN_COLUMN = 12


def _width() -> int:
    return max(MIN_WIDTH, shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns)


def _scalar(value: Any) -> str:
    """One value as text: strings as they are (control characters escaped), the rest as JSON."""
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii") if not value.isprintable() else value
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


_CELL_ITEMS = 8  # scalars one cell holds (call sites, names); more become a nested list
_CELL_ROWS = 2  # small records one cell holds (an instruction's symbols); more become a nested table


def _is_flat(value: Any) -> bool:
    """A value one table cell can hold readably: a scalar, a few scalars, or one or two small records."""
    if isinstance(value, dict):
        return all(_is_scalar(v) for v in value.values())
    if isinstance(value, list):
        if all(_is_scalar(v) for v in value):
            return len(value) <= _CELL_ITEMS
        return len(value) <= _CELL_ROWS and all(
            isinstance(v, dict) and all(_is_scalar(x) for x in v.values()) for v in value
        )
    return True


def _cell(value: Any) -> str:
    """A flat value as one cell: list items joined by "; ", a mapping's members as key=value."""
    if isinstance(value, dict):
        return " ".join(f"{k}={'-' if v is None else _scalar(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_cell(v) for v in value)
    return _scalar(value)


def _wrap(first: str, rest: str, text: str, width: int) -> list[str]:
    """``text`` after the prefix ``first``, wrapped (never cut) with continuation lines under ``rest``."""
    lines = textwrap.wrap(
        text,
        width=max(width - len(first), MIN_COLUMN),
        break_long_words=True,
        break_on_hyphens=False,
        replace_whitespace=False,
        drop_whitespace=False,
    ) or [""]
    return [first + lines[0].rstrip()] + [rest + line.strip() for line in lines[1:]]


def _count(n: int) -> str:
    return f"{n} item{'' if n == 1 else 's'}"


class _Renderer:
    """Writes a result document (JSON: what msgspec.to_builtins makes of any record) as text."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.out: list[str] = []

    def member(self, key: str, value: Any, indent: int) -> None:
        pad = " " * indent
        if isinstance(value, dict):
            if not value:
                self.out.append(f"{pad}{key}: {{}}")
                return
            self.out.append(f"{pad}{key}:")
            self.mapping(value, indent + 2)
        elif isinstance(value, list):
            self.out.append(f"{pad}{key}: " + (_count(len(value)) if value else "(none)"))
            self.items(value, indent + 2)
        elif isinstance(value, str) and "\n" in value:
            # Text (pseudocode, a listing): shown line by line as it is.
            self.out.append(f"{pad}{key}: |")
            self.out.extend(f"{pad}  {line}".rstrip() for line in value.split("\n"))
        else:
            self.out.extend(_wrap(f"{pad}{key}: ", pad + "    ", _scalar(value), self.width))

    def mapping(self, value: JSONObject, indent: int) -> None:
        for key, sub in value.items():
            self.member(str(key), sub, indent)

    def items(self, items: list[Any], indent: int) -> None:
        if not items:
            return
        pad = " " * indent
        if all(isinstance(i, dict) and i and all(_is_flat(v) for v in i.values()) for i in items):
            self.table(items, indent)
            return
        if all(isinstance(i, (int, float, str)) and not isinstance(i, bool) for i in items):
            texts = [_scalar(i) for i in items]
            if max(len(t) for t in texts) <= 24 and not any(" " in t for t in texts):
                # Short words (addresses, names): packed into wrapped lines, not one per line.
                self.out.extend(_wrap(pad, pad, "  ".join(texts), self.width))
                return
        for item in items:
            if isinstance(item, dict):
                flat = {k: v for k, v in item.items() if _is_scalar(v)}
                nested = {k: v for k, v in item.items() if not _is_scalar(v)}
                line = "  ".join(f"{k}={_scalar(v)}" for k, v in flat.items())
                self.out.extend(_wrap(pad + "- ", pad + "    ", line, self.width) if flat else [pad + "-"])
                self.mapping(nested, indent + 2)
            elif isinstance(item, list):
                self.out.append(f"{pad}- " + _count(len(item)))
                self.items(item, indent + 2)
            else:
                self.out.extend(_wrap(pad + "- ", pad + "  ", _scalar(item), self.width))

    def table(self, rows: list[JSONObject], indent: int) -> None:
        """Rows of scalars as aligned columns; a column too wide for the terminal wraps its cells."""
        headers: dict[str, None] = {}
        for row in rows:
            headers.update(dict.fromkeys(row))
        names = list(headers)
        cells = [[("-" if row[k] is None else _cell(row[k])) if k in row else "" for k in names] for row in rows]
        widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
        budget = self.width - indent - 2 * (len(names) - 1)
        while sum(widths) > budget:
            widest = max(range(len(widths)), key=lambda i: widths[i])
            floor = max(MIN_COLUMN, len(names[widest]))
            if widths[widest] <= floor:
                break  # too many columns to fit: the terminal wraps the lines, nothing is cut
            widths[widest] = max(floor, widths[widest] - (sum(widths) - budget))
        pad = " " * indent

        def emit(row: list[str]) -> None:
            parts = [
                [c]
                if len(c) <= widths[i]
                else textwrap.wrap(c, widths[i], break_long_words=True, break_on_hyphens=False) or [""]
                for i, c in enumerate(row)
            ]
            for n in range(max(len(p) for p in parts)):
                line = "  ".join((p[n] if n < len(p) else "").ljust(widths[i]) for i, p in enumerate(parts))
                self.out.append((pad + line).rstrip())

        emit(names)
        self.out.append(pad + "  ".join("-" * w for w in widths))
        for cell_row in cells:
            emit(cell_row)


def render_text(value: Any, width: int | None = None) -> str:
    """All of a result, readably: tables for rows, nested members indented, long values wrapped, nothing cut.

    Evidence gets a header naming its identity, target, provider and analysis profile (by digest: the whole
    profile is in ``--json`` output and in ``open_binary``'s binding).
    """
    r = _Renderer(width or _width())
    if isinstance(value, dict) and "evidence_id" in value and "normalized_result" in value:
        subject = value.get("subject") or {}
        provider = value.get("provider") or {}
        profile = value.get("analysis_profile") or {}
        r.out.append(f"{value.get('operation')}  {value['evidence_id']}")
        if subject:
            r.out.append(
                f"target: {subject.get('local_path')}  ({subject.get('format')}, "
                f"{subject.get('architecture')}, {subject.get('size')} bytes)"
            )
            r.out.append(f"sha256: {(subject.get('digest') or {}).get('sha256')}")
        r.out.append(
            f"provider: {provider.get('id')} {provider.get('version')}"
            + (f"  (analysis profile {profile.get('digest')})" if profile else "")
        )
        r.out.append(f"confidence: {value.get('confidence')}  authority: {value.get('authority')}")
        if value.get("parameters"):
            r.member("parameters", value["parameters"], 0)
        for limitation in value.get("limitations") or []:
            r.out.extend(_wrap("limitation: ", "    ", limitation, r.width))
        for link in value.get("evidence_links") or []:
            r.out.append(f"linked: {link}")
        r.out.append("")
        body = value["normalized_result"]
        if isinstance(body, dict):
            r.mapping(body, 0)
        else:
            r.member("result", body, 0)
        if value.get("locations"):
            r.member("locations", value["locations"], 0)
        if value.get("raw_result") is not None:
            r.member("raw_result", value["raw_result"], 0)
    elif isinstance(value, dict):
        r.mapping(value, 0)
    else:
        r.member("result", value, 0)
    return "\n".join(r.out)
