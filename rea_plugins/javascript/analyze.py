"""Build the application graph from collected files: modules, edges, source maps and entry points."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import posixpath
import sys
import urllib.parse
from collections import Counter
from collections.abc import Iterator

import msgspec

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea_plugins.javascript import entrypoints
from rea_plugins.javascript import facts
from rea_plugins.javascript import inputs
from rea_plugins.javascript import parallel
from rea_plugins.javascript import sourcemaps
from rea_plugins.javascript import syntax
from rea_plugins.javascript.facts import PendingImport
from rea_plugins.javascript.inputs import Collected
from rea_plugins.javascript.inputs import InputFile
from rea_plugins.javascript.model import EMPTY
from rea_plugins.javascript.model import SCHEMA_VERSION
from rea_plugins.javascript.model import Application
from rea_plugins.javascript.model import Coverage
from rea_plugins.javascript.model import Diagnostic
from rea_plugins.javascript.model import EntryPoint
from rea_plugins.javascript.model import ImportEdge
from rea_plugins.javascript.model import InputSummary
from rea_plugins.javascript.model import Limits
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.model import OriginalLocation
from rea_plugins.javascript.model import Skipped
from rea_plugins.javascript.model import SourceMap
from rea_plugins.javascript.model import SourceMapSource
from rea_plugins.javascript.model import file_node_id
from rea_plugins.javascript.parsed import ParsedFile
from rea_plugins.javascript.parsed import parse_file
from rea_plugins.javascript.resolve import PackageJson
from rea_plugins.javascript.resolve import Resolver
from rea_plugins.javascript.resolve import read_package_json

MAX_SKIPPED_LISTED = 1000


def _normal_bundled(path: str) -> str:
    norm = posixpath.normpath(path.split("?", 1)[0])
    while norm.startswith("../"):
        norm = norm[3:]
    return norm.lstrip("/")


class _Builder:
    def __init__(self, collected: Collected, limits: Limits, ctx: CallContext) -> None:
        self.collected = collected
        self.limits = limits
        self.ctx = ctx
        self.packages: dict[str, PackageJson] = {}
        self.html: dict[str, bytes] = {}
        self.maps: dict[str, bytes] = {}
        # The builder owns the collected bytes from here: each script's are released once it is parsed.
        self.scripts: list[tuple[InputFile, syntax.Language]] = []
        for f in collected.files:
            base = f.path.rsplit("/", 1)[-1]
            language = syntax.language_of(f.path)
            if language is None and "." not in base and syntax.is_node_script(f.data[:256]):
                language = "javascript"
            if base == "package.json":
                pkg = read_package_json(f.data)
                if pkg is not None:
                    self.packages[f.path] = pkg
            elif f.path.lower().endswith((".html", ".htm")):
                self.html[f.path] = f.data
            elif f.path.lower().endswith(".map"):
                self.maps[f.path] = f.data
            elif language is not None:
                self.scripts.append((f, language))
        collected.files = []
        self.parsed: list[ParsedFile] = []
        self.used = 0  # modules admitted so far, against max_modules
        self.modules: list[Module] = []
        self.source_maps: list[SourceMap] = []
        self.reasons: set[str] = set(collected.reasons)
        self.originals: dict[str, OriginalLocation] = {}
        self.original_bytes = 0  # sourcesContent parsed for names, against MAX_ORIGINALS_TOTAL_BYTES
        self.skipped: list[Skipped] = list(collected.skipped)

    def parse_all(self, lineage: list[JSONObject] | None = None) -> None:
        """Parse each script and build its modules' records (all but the import edges, which need every path);
        the file's bytes, its syntax tree and the intermediate records go as soon as its modules are built. A large
        input is parsed in worker processes too when REA_JAVASCRIPT_PARSE_WORKERS allows (``parallel``), with the same
        result."""
        scripts, self.scripts = self.scripts, []
        workers = parallel.workers_for(scripts)
        if workers:
            parallel.parse(scripts, self.limits, self.ctx, self.take, workers, lineage)
            return
        total = len(scripts)
        scripts.reverse()
        index = 0
        while scripts:
            f, language = scripts.pop()
            self.ctx.check("parsing JavaScript")
            self.ctx.progress(f"parsing: {index}/{total} files done", done=index, total=total)
            index += 1
            self.take(f, language, None)

    def take(self, f: InputFile, language: syntax.Language, done: Skipped | tuple[int, ParsedFile] | None) -> None:
        """Admit the next script in order: read and parse it, or account what another process read and parsed
        (``done``: why it could not be read, or its size and records), within max_modules; a script beyond the bound
        is never accounted."""
        budget = self.limits.max_modules
        if self.used >= budget:
            self._beyond_bound(f)
            return
        if done is None:
            data = inputs.read_deferred(f, self.limits, self.collected, self.skipped, self.reasons)
            if data is None:
                return
            parsed = parse_file(f.path, f.integrity, language, data, self.ctx)
            del data
        elif isinstance(done, Skipped):
            inputs.account(f, done, self.collected, self.skipped, self.reasons)
            return
        else:
            size, parsed = done
            inputs.account(f, size, self.collected, self.skipped, self.reasons)
        if self.used + len(parsed.units) > budget:
            self._beyond_bound(f)
            return
        self.used += len(parsed.units)
        self.parsed.append(parsed)
        first = parsed.units[0].module
        if any(d.kind in ("parse-error", "missing-node") for d in first.diagnostics):
            self.reasons.add("parse_errors")
        if first.truncated:
            self.reasons.add("module_bounds")
        if any(unit.module.strings.truncated for unit in parsed.units):
            self.reasons.add("string_bounds")

    def _beyond_bound(self, f: InputFile) -> None:
        self.skipped.append(Skipped(path=f.path, reason="beyond max_modules"))
        self.reasons.add("max_modules")

    def build_modules(self) -> None:
        """Resolve every module's imports, now that every module's path is known."""
        module_paths = {p.path for p in self.parsed}
        resolver = Resolver(module_paths, self.packages)
        # Each module's path and node id as its record holds them: an edge to it shares those strings.
        self.names = {p.path: (p.path, p.units[0].node_id) for p in self.parsed}
        self.resolver = resolver
        sha_index: dict[str, list[str]] = {}
        for p in self.parsed:
            sha_index.setdefault(p.sha256, []).append(p.path)
        self.sha_index = sha_index
        for p in self.parsed:
            self.ctx.check("building modules")
            directory = posixpath.dirname(p.path)
            for unit_idx, unit in enumerate(p.units):
                imports = self._imports(unit.imports, directory, resolver)
                for src, dst, kind, name, ln in p.unit_edges:
                    if src == unit_idx:
                        imports.append(
                            ImportEdge(
                                kind=kind,  # type: ignore[arg-type]
                                specifier=name,
                                line=ln,
                                target_kind="module",
                                resolved=p.units[dst].node_id,
                                resolved_path=p.units[dst].path,
                            )
                        )
                unit.module = msgspec.structs.replace(unit.module, imports=imports or EMPTY)
        self.modules = [unit.module for p in self.parsed for unit in p.units]

    def _imports(self, pending: list[PendingImport], directory: str, resolver: Resolver) -> list[ImportEdge]:
        edges: list[ImportEdge] = []
        for imp in pending[: facts.MAX_IMPORTS]:
            if imp.specifier is None:
                edges.append(
                    ImportEdge(
                        kind=imp.kind,  # type: ignore[arg-type]
                        specifier=imp.expression,
                        line=imp.line,
                        target_kind="dynamic",
                        names=_interned(imp.names),
                    )
                )
                continue
            specifier = sys.intern(imp.specifier)
            kind, found = resolver.specifier(directory, specifier)
            path, node_id = (found, None) if not found else self.names.get(found) or (found, file_node_id(found))
            edges.append(
                ImportEdge(
                    kind=imp.kind,  # type: ignore[arg-type]
                    specifier=specifier,
                    line=imp.line,
                    target_kind=kind,  # type: ignore[arg-type]
                    resolved=node_id,
                    resolved_path=path,
                    names=_interned(imp.names),
                )
            )
        return edges

    # -- source maps --------------------------------------------------------------------

    def build_source_maps(self) -> None:
        referenced: set[str] = set()
        by_path = {m.node_id: m for m in self.modules}
        updated: dict[str, str] = {}
        for p in self.parsed:
            url = p.source_mapping_url
            if url is None:
                continue
            self.ctx.check("reading source maps")
            js_dir = posixpath.dirname(p.path)
            file_id = file_node_id(p.path)
            if url.startswith("data:"):
                payload = sourcemaps.decode_data_url(url)
                node_id = f"map:{p.path}#inline"
                if payload is None:
                    self.source_maps.append(self._broken(node_id, "inline", None, file_id, "malformed data: URL"))
                else:
                    self.source_maps.append(self._map(node_id, "inline", None, file_id, payload, js_dir, by_path))
            elif "://" in url and not url.startswith("file://"):
                self.source_maps.append(
                    self._broken(f"map:{url}", "external", url, file_id, "remote source map (not fetched)")
                )
                node_id = f"map:{url}"
            else:
                rel = urllib.parse.unquote(url.removeprefix("file://").split("?", 1)[0].split("#", 1)[0])
                map_path = posixpath.normpath(posixpath.join(js_dir, rel))
                node_id = f"map:{map_path}"
                referenced.add(map_path)
                data = self.maps.get(map_path)
                if data is None:
                    self.source_maps.append(
                        self._broken(node_id, "external", map_path, file_id, "source map file is not in the input")
                    )
                else:
                    self.source_maps.append(
                        self._map(node_id, "external", map_path, file_id, data, posixpath.dirname(map_path), by_path)
                    )
            updated[file_id] = node_id
        for map_path in sorted(set(self.maps) - referenced):
            generated_path = map_path[:-4]
            generated = file_node_id(generated_path) if file_node_id(generated_path) in by_path else None
            self.source_maps.append(
                self._map(
                    f"map:{map_path}",
                    "unreferenced",
                    map_path,
                    generated,
                    self.maps[map_path],
                    posixpath.dirname(map_path),
                    by_path,
                )
            )
        if updated:
            self.modules = [
                msgspec.structs.replace(m, source_map=updated[m.node_id]) if m.node_id in updated else m
                for m in self.modules
            ]
        self.source_maps.sort(key=lambda s: s.node_id)

    def _broken(
        self, node_id: str, location: str, map_path: str | None, generated: str | None, message: str
    ) -> SourceMap:
        return SourceMap(
            node_id=node_id,
            location=location,  # type: ignore[arg-type]
            map_path=map_path,
            generated=generated,
            file=None,
            source_root=None,
            sources=[],
            mappings_decoded=False,
            diagnostics=[Diagnostic(kind="unavailable", message=message)],
        )

    def _map(
        self,
        node_id: str,
        location: str,
        map_path: str | None,
        generated: str | None,
        data: bytes,
        map_dir: str,
        by_id: dict[str, Module],
    ) -> SourceMap:
        parsed = sourcemaps.parse(data, map_dir)
        gen = by_id.get(generated) if generated else None
        bundled = [by_id[b] for b in gen.bundled_modules if b in by_id] if gen is not None else []
        decoded = sourcemaps.decode(data)
        per_source: dict[str, int] = {}
        mapped = 0
        if isinstance(decoded, Diagnostic):
            parsed.diagnostics.append(decoded)
        else:
            per_source = decoded.per_source()
            if gen is not None:
                mapped = self._map_functions(decoded, parsed, [gen, *bundled])
        sources: list[SourceMapSource] = []
        for index, raw in enumerate(parsed.sources):
            module, matched_by = None, None
            hits = [b for b in bundled if _path_matches(_normal_bundled(b.path), raw.path)]
            if len(hits) == 1:
                module, matched_by = hits[0].node_id, "bundle-path"
            elif not bundled and gen is not None and len(parsed.sources) == 1:
                module, matched_by = gen.node_id, "sole-module"
            digest, size = sourcemaps.content_digest(raw.content) if raw.content is not None else (None, None)
            file_module, file_match, identical = None, None, None
            if raw.path in self.resolver.modules:
                file_module, file_match = file_node_id(raw.path), "path"
                if digest is not None:
                    identical = file_node_id(raw.path) in by_id and by_id[file_node_id(raw.path)].sha256 == digest
            elif digest is not None and len(self.sha_index.get(digest, [])) == 1:
                file_module, file_match, identical = file_node_id(self.sha_index[digest][0]), "content", True
            sources.append(
                SourceMapSource(
                    index=index,
                    source=raw.source,
                    path=raw.path,
                    outside_root=raw.outside_root,
                    has_content=raw.content is not None,
                    content_sha256=digest,
                    content_size=size,
                    module=module,
                    matched_by=matched_by,  # type: ignore[arg-type]
                    file_module=file_module,
                    file_match=file_match,  # type: ignore[arg-type]
                    content_identical=identical,
                    tokens=per_source.get(raw.source, 0),
                )
            )
        return SourceMap(
            node_id=node_id,
            location=location,  # type: ignore[arg-type]
            map_path=map_path,
            generated=generated,
            file=parsed.file,
            source_root=parsed.source_root,
            sources=sources,
            mappings_decoded=not isinstance(decoded, Diagnostic),
            diagnostics=parsed.diagnostics,
            tokens=0 if isinstance(decoded, Diagnostic) else decoded.tokens,
            functions_mapped=mapped,
            sha256=hashlib.sha256(data).hexdigest(),
        )

    def _map_functions(self, decoded: sourcemaps.Decoded, parsed: sourcemaps.ParsedMap, modules: list[Module]) -> int:
        """Give each function of the generated file its original location (and its name there); how many got one."""
        by_name = {raw.source: raw for raw in parsed.sources}
        originals: dict[str, OriginalIndex] = {}
        count = 0
        for module in modules:
            for fn in module.functions:
                if fn.kind == "module-body":
                    continue
                self.ctx.check("mapping functions to their sources")
                line, column = _position(fn.node_id)
                token = decoded.lookup(line - 1, column - 1)
                if token is None:
                    continue
                raw = by_name.get(token.source)
                path = raw.path if raw is not None else token.source
                if token.source not in originals:
                    size = len(raw.content) if raw is not None and raw.content is not None else 0
                    if size > MAX_ORIGINAL_BYTES or self.original_bytes + size > MAX_ORIGINALS_TOTAL_BYTES:
                        parsed.diagnostics.append(
                            Diagnostic(
                                kind="limit",
                                message=f"{path}: its sourcesContent ({size} bytes) is past the bound on originals "
                                "parsed for names; its functions are named from the map's names",
                            )
                        )
                        raw, size = None, 0
                    self.original_bytes += size
                    originals[token.source] = _original_functions(raw)
                name = _enclosing(originals[token.source], token.line + 1, token.column + 1) or token.name
                self.originals[fn.node_id] = OriginalLocation(
                    source=path, line=token.line + 1, column=token.column + 1, name=name
                )
                count += 1
        return count

    def apply_originals(self) -> None:
        """Put the functions' original locations into their modules' records."""
        if not self.originals:
            return
        originals = self.originals
        self.modules = [
            msgspec.structs.replace(
                m,
                functions=[
                    msgspec.structs.replace(f, original=originals[f.node_id]) if f.node_id in originals else f
                    for f in m.functions
                ],
            )
            if any(f.node_id in originals for f in m.functions)
            else m
            for m in self.modules
        ]

    # -- entry points -------------------------------------------------------------------

    def build_entry_points(self) -> list[EntryPoint]:
        sites: list[entrypoints.HintSite] = []
        electron_files: set[str] = set()
        for p in self.parsed:
            directory = posixpath.dirname(p.path)
            for unit in p.units:
                if unit.uses_electron:
                    electron_files.add(p.path)
                if unit.hints:
                    sites.append(entrypoints.HintSite(unit.node_id, directory, unit.hints, unit.uses_electron))
        return entrypoints.find(self.packages.get("package.json"), self.resolver, sites, self.html, electron_files)


def _position(node_id: str) -> tuple[int, int]:
    """The 1-based (line, column) a function's node_id ends with (``...@line:column``)."""
    line, _, column = node_id.rpartition("@")[2].partition(":")
    return int(line), int(column)


# Originals parsed for their functions' names: one source at most this large, and this much in all per analysis
# (past either, a mapped function is named from the map's ``names`` only, and the map says so).
MAX_ORIGINAL_BYTES = 8 << 20
MAX_ORIGINALS_TOTAL_BYTES = 128 << 20
# An original source's functions by their 1-based start line: (start column, name), ordered by column.
OriginalIndex = dict[int, list[tuple[int, str]]]


def _original_functions(raw: sourcemaps.RawSource | None) -> OriginalIndex:
    """The functions of an original source, from the map's ``sourcesContent``, by the line they start on."""
    out: OriginalIndex = {}
    if raw is None or raw.content is None:
        return out
    language = syntax.language_of(raw.path) or "javascript"
    found = facts.extract(raw.path, language, raw.content.encode("utf-8", "replace"))
    for f in found.functions:
        if f.kind != "module-body":
            line, column = _position(f.node_id)
            out.setdefault(line, []).append((column, f.name))
    for starts in out.values():
        starts.sort()
    return out


def _enclosing(functions: OriginalIndex, line: int, column: int) -> str | None:
    """The name of the original function starting on ``line`` that is the closest at or before ``column``."""
    best: str | None = None
    for start, name in functions.get(line, ()):
        if start > column:
            break
        best = name
    return None if best == "<anonymous>" else best


def _interned(names: list[str]) -> list[str]:
    """An edge's names, each the one copy of its text: the same specifiers and bindings recur in thousands of files."""
    return [sys.intern(name) for name in names] if names else EMPTY


def _path_matches(bundled: str, source: str) -> bool:
    if not bundled or not source:
        return False
    return bundled == source or source.endswith("/" + bundled) or bundled.endswith("/" + source)


@contextlib.contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while the graph is built (and resume it after, if it ran before).

    The build allocates millions of short-lived containers (syntax nodes, records) beside a growing graph of
    long-lived ones, so the collector runs thousands of times and its full passes walk the whole graph again: a
    quarter of the build's time at Electron scale (3.7 of 15.6 s on 49 MiB of npm packages). Nothing the build
    makes is cyclic, so reference counting frees it all the same.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def build(
    collected: Collected, limits: Limits, ctx: CallContext, lineage: list[JSONObject] | None = None
) -> Application:
    """The complete application graph of the collected files (deterministic: sorted by path); each module's record
    is built as its file is parsed, so the syntax trees never all live at once. Consumes ``collected.files``;
    ``lineage`` receives the observations of a parse worker, when one ran."""
    try:
        with without_cycle_collection():
            return _build(collected, limits, ctx, lineage)
    finally:
        syntax.release_lines()


def _build(collected: Collected, limits: Limits, ctx: CallContext, lineage: list[JSONObject] | None) -> Application:
    builder = _Builder(collected, limits, ctx)
    builder.parse_all(lineage)
    builder.build_modules()
    builder.build_source_maps()
    builder.apply_originals()
    entry_points = builder.build_entry_points()
    modules = sorted(builder.modules, key=lambda m: (m.path, m.node_id))
    if collected.contradictions:
        builder.reasons.add("integrity_contradictions")
    other_skips = [s for s in builder.skipped if not s.reason.startswith("beyond")]
    if other_skips:
        builder.reasons.add("skipped_entries")
    skipped = sorted(builder.skipped, key=lambda s: (s.path, s.reason))
    reasons = sorted(builder.reasons)
    if len(skipped) > MAX_SKIPPED_LISTED:
        reasons.append(f"{len(skipped) - MAX_SKIPPED_LISTED} more skipped entries not listed")
        skipped = skipped[:MAX_SKIPPED_LISTED]
    kinds = Counter(m.kind for m in modules)
    counts = {
        "modules": len(modules),
        "source_modules": kinds.get("source", 0),
        "assets": kinds.get("asset", 0),
        "bundled_modules": kinds.get("bundled", 0),
        "import_edges": sum(len(m.imports) for m in modules),
        "resolved_edges": sum(1 for m in modules for e in m.imports if e.resolved is not None),
        "functions": sum(len(m.functions) for m in modules),
        "exports": sum(len(m.exports) for m in modules),
        "strings": sum(m.strings.total for m in modules),
        "entry_points": len(entry_points),
        "source_maps": len(builder.source_maps),
        "parse_errors": sum(1 for m in modules if m.parse == "error" and m.container is None),
        "integrity_contradictions": len(collected.contradictions),
        "ipc_calls": sum(len(m.ipc) for m in modules),
    }
    contradictions = sorted(collected.contradictions, key=lambda c: str(c.get("path", c.get("logical_path", ""))))
    return Application(
        schema_version=SCHEMA_VERSION,
        input=InputSummary(
            format=collected.format,
            files_seen=collected.files_seen,
            files_analyzed=len(builder.parsed),
            bytes_analyzed=collected.total_bytes,
            html_files=sorted(builder.html),
            package_json=sorted(builder.packages),
        ),
        coverage=Coverage(status="partial" if reasons else "complete", reasons=reasons, skipped=skipped),
        limits=limits,
        modules=modules,
        entry_points=entry_points,
        source_maps=builder.source_maps,
        integrity_contradictions=contradictions,
        counts=counts,
    )
