"""map_javascript_location: a generated file's line and column to its original source, line, column and name."""

from __future__ import annotations

import hashlib
import os
import posixpath

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import read_regular
from rea_plugins.javascript import appgraph
from rea_plugins.javascript import patterns
from rea_plugins.javascript import sourcemaps
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.model import SourceMap
from rea_plugins.javascript.results import GeneratedPosition
from rea_plugins.javascript.results import LocationMapping
from rea_plugins.javascript.results import MappedFunction
from rea_plugins.javascript.results import OriginalPosition
from rea_plugins.javascript.trace import innermost

MAX_LINE_CHARS = 240


def _start(node_id: str) -> tuple[int, int]:
    line, _, column = node_id.rpartition("@")[2].partition(":")
    return int(line), int(column)


def _generated(loaded: appgraph.Loaded, path: str) -> Module:
    found = loaded.index.module(path)
    files = {m.node_id: m for m in found if m.container is None}
    for m in found:
        if m.container is not None and m.container in loaded.index.modules:
            files.setdefault(m.container, loaded.index.modules[m.container])
    if len(files) != 1:
        raise appgraph.not_found(
            "module",
            f"{len(files)} generated files match {path!r}" + ("; pass a node_id" if files else ""),
            sorted(files),
        )
    return next(iter(files.values()))


def _map_of(loaded: appgraph.Loaded, generated: Module) -> SourceMap:
    maps = [sm for sm in loaded.app.source_maps if sm.generated == generated.node_id]
    if not maps:
        raise appgraph.not_found("module", f"{generated.path} has no source map in the analysis")
    decoded = [sm for sm in maps if sm.mappings_decoded]
    if not decoded:
        why = "; ".join(d.message for sm in maps for d in sm.diagnostics) or "not decoded"
        raise appgraph.not_found("module", f"the source map of {generated.path} was not decoded: {why}")
    return decoded[0]


def _read(root: str, rel: str, what: str) -> bytes:
    full = os.path.join(root, *rel.split("/"))
    try:
        return read_regular(full, sourcemaps.MAX_MAP_BYTES, code="target_unavailable", what=what)
    except OSError as exc:
        raise ReaError(
            "target_unavailable",
            f"{what} {full} cannot be read: {exc.strerror}",
            remediation="Rerun analyze_javascript_application where the application is, then map the location.",
            details={"path": full},
        ) from None


def _map_bytes(ev: Evidence, generated: Module, sm: SourceMap) -> bytes:
    """The map's bytes, read again from the analyzed input and checked to be those analyzed."""
    subject = ev.subject
    if subject is None or subject.format != "directory":
        raise ReaError(
            "unsupported_target",
            "a location is mapped from an analyzed directory; this analysis read "
            + (subject.format if subject is not None else "no recorded input"),
            remediation="Extract the archive (extract_artifact) and analyze the directory, then map the location.",
            details={"format": subject.format if subject is not None else None},
        )
    root = subject.local_path
    if sm.location == "inline":
        url = patterns.source_mapping_url(_read(root, generated.path, "generated file"))
        data = sourcemaps.decode_data_url(url) if url is not None and url.startswith("data:") else None
    else:
        data = _read(root, sm.map_path or "", "source map")
    if data is None or hashlib.sha256(data).hexdigest() != sm.sha256:
        raise ReaError(
            "artifact_changed",
            f"the source map of {generated.path} changed since it was analyzed",
            remediation="Rerun analyze_javascript_application, then map the location with the new analysis.",
            details={"source_map": sm.node_id},
        )
    return data


def map_location(call: ToolCall) -> Evidence:
    loaded = appgraph.load(call, "application")
    line, column = arg_int(call.args, "line", 1), arg_int(call.args, "column", 1)  # both required by the schema
    module_arg = arg_str(call.args, "module", "")
    generated = _generated(loaded, module_arg)
    sm = _map_of(loaded, generated)
    data = _map_bytes(loaded.evidence, generated, sm)
    decoded = sourcemaps.decode(data)
    if not isinstance(decoded, sourcemaps.Decoded):
        raise appgraph.not_found("module", f"the source map of {generated.path} does not decode: {decoded.message}")
    token = decoded.lookup(line - 1, column - 1)
    original = None
    if token is not None:
        parsed = sourcemaps.parse(data, posixpath.dirname(sm.map_path or generated.path))
        raw = next((r for r in parsed.sources if r.source == token.source), None)
        text = None
        if raw is not None and raw.content is not None:
            lines = raw.content.splitlines()
            text = lines[token.line][:MAX_LINE_CHARS] if token.line < len(lines) else None
        original = OriginalPosition(
            source=raw.path if raw is not None else token.source,
            line=token.line + 1,
            column=token.column + 1,
            name=token.name,
            text=text,
        )
    holders = [generated] + [loaded.index.modules[b] for b in generated.bundled_modules if b in loaded.index.modules]
    function = None
    for module in holders:
        found = innermost(module, line, column)
        # Of the holders' innermost functions (a file's and its bundled modules'), the one that starts last.
        if found is not None and (function is None or _start(found.node_id) > _start(function.node_id)):
            function = MappedFunction(
                node_id=found.node_id, name=found.name, module=module.node_id, original=found.original
            )
    result = LocationMapping(
        generated=GeneratedPosition(module=generated.node_id, path=generated.path, line=line, column=column),
        source_map=sm.node_id,
        original=original,
        function=function,
    )
    params: JSONObject = {
        "application": appgraph.reference(loaded),
        "module": module_arg,
        "line": line,
        "column": column,
    }
    return appgraph.derive(
        "map_javascript_location",
        params,
        msgspec.to_builtins(result),
        [loaded],
        [
            "The closest mapping segment at or before the column on its line answers (a source map maps segments, "
            "not every character); columns are the generated file's byte columns."
        ],
    )
