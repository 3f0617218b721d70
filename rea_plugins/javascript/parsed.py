"""One script parsed into its modules' records: what the build keeps of a file, and what a parse worker sends back."""

from __future__ import annotations

import hashlib

import msgspec

from rea.plugin import CallContext
from rea_plugins.javascript import facts
from rea_plugins.javascript import syntax
from rea_plugins.javascript.facts import PendingImport
from rea_plugins.javascript.model import EMPTY
from rea_plugins.javascript.model import Diagnostic
from rea_plugins.javascript.model import Integrity
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.model import Span
from rea_plugins.javascript.model import bundled_node_id
from rea_plugins.javascript.model import file_node_id
from rea_plugins.javascript.patterns import PathHint


class ParsedUnit(msgspec.Struct, kw_only=True):
    """What the later phases need of one module once its file is parsed: its record is built but for its imports."""

    node_id: str
    path: str
    imports: list[PendingImport]
    hints: list[PathHint]
    uses_electron: bool
    module: Module


class ParsedFile(msgspec.Struct, kw_only=True):
    """A parsed script, compact: the file's bytes and its syntax tree are released, its modules' records kept."""

    path: str
    sha256: str
    units: list[ParsedUnit]
    unit_edges: list[tuple[int, int, str, str, int]]  # (from unit, to unit, kind, name, line)
    source_mapping_url: str | None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _region_bytes(lines: list[bytes], ranges: list[Span]) -> bytes:
    return b"\n".join(b"\n".join(lines[r.start_line - 1 : r.end_line]) for r in ranges)


def _parse_status(diags: list[Diagnostic]) -> str:
    # A file past the parse bound was not parsed at all: its facts are as partial as a syntax error's.
    unparsed = any(d.kind == "limit" and "not parsed" in d.message for d in diags)
    return "error" if unparsed or any(d.kind in ("parse-error", "missing-node") for d in diags) else "ok"


def parse_file(
    path: str, integrity: Integrity, language: syntax.Language, data: bytes, ctx: CallContext | None = None
) -> ParsedFile:
    """Parse one script and build its modules' records (all but the import edges, which need every path)."""
    found = facts.extract(path, language, data, ctx)
    file_id = file_node_id(path)
    file_sha = _sha(data)
    lines = data.split(b"\n") if len(found.units) > 1 else []
    unit_ids = [file_id] + [bundled_node_id(path, u.path) for u in found.units[1:]]
    funcs_by_unit: dict[int, list[int]] = {}
    for idx, unit_idx in enumerate(found.function_unit):
        funcs_by_unit.setdefault(unit_idx, []).append(idx)
    generated = found.bundle_format is not None or found.source_mapping_url is not None
    in_dependency = "node_modules/" in path or path.startswith("node_modules")
    units: list[ParsedUnit] = []
    for unit_idx, unit in enumerate(found.units):
        ranges = facts.unit_ranges(unit) if unit_idx else []
        if unit_idx:
            region = _region_bytes(lines, ranges)
            diags = [
                d
                for d in found.diagnostics
                if d.line is not None and any(r.start_line <= d.line <= r.end_line for r in ranges)
            ]
            size, sha = len(region), _sha(region)
        else:
            diags = list(found.diagnostics)
            if found.truncated:
                diags.append(Diagnostic(kind="limit", message=f"more than {facts.MAX_FUNCTIONS} functions"))
            size, sha = len(data), file_sha
        record = Module(
            node_id=unit_ids[unit_idx],
            path=unit.path if unit_idx else path,
            kind=("bundled" if unit_idx else "asset" if generated else "source"),
            container=file_id if unit_idx else None,
            language=language,
            size=size,
            sha256=sha,
            integrity=integrity,
            span=Span(start_line=min(r.start_line for r in ranges), end_line=max(r.end_line for r in ranges))
            if ranges
            else None,
            ranges=ranges or EMPTY,
            parse=_parse_status(diags),  # type: ignore[arg-type]
            bundle_format=found.bundle_format if not unit_idx else None,  # type: ignore[arg-type]
            in_dependency=in_dependency,
            imports=EMPTY,  # filled in by the build, once every module's path is known
            exports=found.exports[unit_idx],
            strings=found.strings[unit_idx],
            functions=[found.functions[i] for i in funcs_by_unit.get(unit_idx, [])],
            diagnostics=diags or EMPTY,
            ipc=unit.ipc or EMPTY,
            bundled_modules=sorted(unit_ids[1:]) if len(unit_ids) > 1 and not unit_idx else EMPTY,
            truncated=found.truncated and not unit_idx,
        )
        units.append(
            ParsedUnit(
                node_id=unit_ids[unit_idx],
                path=unit.path,
                imports=unit.imports,
                hints=unit.hints,
                uses_electron=unit.uses_electron,
                module=record,
            )
        )
    return ParsedFile(
        path=path,
        sha256=file_sha,
        units=units,
        unit_edges=found.unit_edges,
        source_mapping_url=found.source_mapping_url,
    )
