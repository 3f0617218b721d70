"""Source maps (inline ``data:`` and external files): their ``sources`` and ``sourcesContent``, by path, and their
mappings, decoded by Sentry's ``symbolic`` (its Rust ``sourcemap`` crate: VLQ segments, index maps flattened).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass
from dataclasses import field

import msgspec

from rea.plugin import MAX_MAP_BYTES
from rea.plugin import Decoded
from rea.plugin import JSONObject
from rea.plugin import Token
from rea.plugin import decode_data_url
from rea.plugin import sourcemap
from rea_plugins.javascript.model import Diagnostic

__all__ = ["MAX_MAP_BYTES", "Decoded", "Token", "decode", "decode_data_url", "normalize", "parse"]

MAX_SOURCES = 20_000
MAX_SECTIONS = 256
_SCHEMES = ("webpack://", "file://", "ng://", "rollup://", "vite://")


class _RawSection(msgspec.Struct, kw_only=True):
    # The section's own source map, as JSON: converted to _RawMap on its own, so a bad one fails only its section.
    map: JSONObject | None = None


class _RawMap(msgspec.Struct, kw_only=True):
    version: int | None = None
    file: str | None = None
    sourceRoot: str | None = None
    sources: list[str | None] = []
    sourcesContent: list[str | None] | None = None
    sections: list[_RawSection] | None = None


@dataclass
class RawSource:
    source: str
    path: str
    outside_root: bool
    content: str | None


@dataclass
class ParsedMap:
    file: str | None
    source_root: str | None
    sources: list[RawSource] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def normalize(base_dir: str, relative: str) -> tuple[str, bool]:
    """Join ``relative`` to ``base_dir`` inside the input root; paths escaping the root keep their tail."""
    rel = relative
    for scheme in _SCHEMES:
        if rel.startswith(scheme):
            rest = rel[len(scheme) :]
            if scheme == "file://":
                rel = rest
                break
            # webpack://<project>/./src/a.js names a project, then a path from the project root.
            rel = rest.split("/", 1)[1] if "/" in rest else rest
            return posixpath.normpath(rel).lstrip("/").removeprefix("./"), False
    if rel.startswith("/"):
        return posixpath.normpath(rel).lstrip("/"), True
    joined = posixpath.normpath(posixpath.join(base_dir, rel)) if base_dir else posixpath.normpath(rel)
    outside = False
    while joined == ".." or joined.startswith("../"):
        outside = True
        joined = joined[3:] if joined.startswith("../") else ""
    return ("" if joined == "." else joined), outside


def parse(data: bytes, map_dir: str) -> ParsedMap:
    """Read one source map; malformed maps give a diagnostic, never an exception."""
    if len(data) > MAX_MAP_BYTES:
        too_big = Diagnostic(kind="limit", message=f"source map larger than {MAX_MAP_BYTES} bytes")
        return ParsedMap(None, None, diagnostics=[too_big])
    try:
        raw = msgspec.json.decode(data, type=_RawMap)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        bad = Diagnostic(kind="source-map", message=f"not a source map: {exc}")
        return ParsedMap(None, None, diagnostics=[bad])
    out = ParsedMap(file=raw.file, source_root=raw.sourceRoot)
    if raw.version != 3:
        out.diagnostics.append(Diagnostic(kind="source-map", message=f"source map version {raw.version} (expected 3)"))
    maps: list[_RawMap] = [raw]
    if raw.sections:
        for section in raw.sections[:MAX_SECTIONS]:
            if section.map is None:
                out.diagnostics.append(Diagnostic(kind="source-map", message="section by url is not followed"))
                continue
            try:
                maps.append(msgspec.convert(section.map, _RawMap))
            except msgspec.ValidationError as exc:
                out.diagnostics.append(Diagnostic(kind="source-map", message=f"malformed section: {exc}"))
    for one in maps:
        root = one.sourceRoot or ""
        contents = one.sourcesContent or []
        for index, source in enumerate(one.sources):
            if len(out.sources) >= MAX_SOURCES:
                out.diagnostics.append(Diagnostic(kind="limit", message=f"more than {MAX_SOURCES} sources"))
                return out
            if source is None:
                continue
            joined = posixpath.join(root, source) if root and "://" not in source else source
            path, outside = normalize(map_dir, joined)
            content = contents[index] if index < len(contents) else None
            out.sources.append(RawSource(source=source, path=path, outside_root=outside, content=content))
    return out


def decode(data: bytes) -> Decoded | Diagnostic:
    """The decoded mappings of a source map (the kernel's decoder, ``rea.sourcemap``), or why they could not be."""
    try:
        return sourcemap.decode(data)
    except sourcemap.SourceMapError as exc:
        return Diagnostic(kind=exc.kind, message=str(exc))


def content_digest(content: str) -> tuple[str, int]:
    raw = content.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest(), len(raw)
