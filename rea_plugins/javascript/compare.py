"""Comparisons over application Evidence: versions, source-to-bundle, and export shapes."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import render
from rea_plugins.javascript import appgraph
from rea_plugins.javascript.appgraph import Loaded
from rea_plugins.javascript.appgraph import normal_path
from rea_plugins.javascript.appgraph import path_matches
from rea_plugins.javascript.model import ExportRecord
from rea_plugins.javascript.model import FunctionRecord
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.results import AmbiguousMatch
from rea_plugins.javascript.results import BundleMatch
from rea_plugins.javascript.results import BundleOnly
from rea_plugins.javascript.results import CoveragePair
from rea_plugins.javascript.results import EntryPointDiff
from rea_plugins.javascript.results import EntryPointRef
from rea_plugins.javascript.results import ExportShapeComparison
from rea_plugins.javascript.results import ExportSide
from rea_plugins.javascript.results import FunctionRename
from rea_plugins.javascript.results import MatchedModule
from rea_plugins.javascript.results import ModuleBrief
from rea_plugins.javascript.results import ModuleDifferences
from rea_plugins.javascript.results import NameDiff
from rea_plugins.javascript.results import ShapeDifference
from rea_plugins.javascript.results import SizePair
from rea_plugins.javascript.results import SourceBundleSummary
from rea_plugins.javascript.results import SourceMapping
from rea_plugins.javascript.results import SourceToBundle
from rea_plugins.javascript.results import VersionComparison
from rea_plugins.javascript.results import VersionSummary

MAX_LISTED = 50
MAX_DIFFERENCES = 100
# Added and removed modules listed (the summary counts them all).
MAX_BRIEFS = 100


def _key(m: Module, index: appgraph.Index) -> str:
    """A module's identity across versions: its path, prefixed by its container's path when bundled."""
    if m.container is None:
        return m.path
    container = index.modules.get(m.container)
    return f"{container.path if container else m.container}!{m.path}"


def _set_diff(left: set[str], right: set[str]) -> NameDiff:
    added, removed = sorted(right - left), sorted(left - right)
    return NameDiff(
        added=added[:MAX_LISTED], removed=removed[:MAX_LISTED], added_total=len(added), removed_total=len(removed)
    )


def _reader_name(fn: FunctionRecord) -> str:
    """The name a function is compared by: its original name through a source map, else its name as written."""
    return fn.original.name if fn.original is not None and fn.original.name else fn.name


def _traits(fn: FunctionRecord, literals: set[str]) -> tuple[str, int, bool, frozenset[str], tuple[str, ...]]:
    """What a minifier leaves of a function: its kind, parameter count and asyncness, the members it calls and the
    string literals it passes (``literals``: its module's strings; other arguments name local variables a minifier
    renames, as bare callees and constructors do), and its return shapes' kinds."""
    calls: set[str] = set()
    for c in fn.calls:
        if c.callee.startswith("new "):
            calls.add("new")
        elif "." in c.callee:
            calls.add(c.callee.rsplit(".", 1)[-1])
        if c.argument is not None and c.argument in literals:
            calls.add(f"'{c.argument}'")
    returns = tuple(sorted({str(r.shape.get("type")) for r in fn.returns}))
    kind = "function" if fn.kind in ("declaration", "expression") else fn.kind
    return kind, len(fn.params), fn.is_async, frozenset(calls), returns


def _fingerprint(fn: FunctionRecord, literals: set[str]) -> bytes:
    kind, params, is_async, calls, returns = _traits(fn, literals)
    return _canon([kind, params, is_async, sorted(calls), list(returns)])


# A changed function still pairs with its renamed self when this share of what it calls and passes is common.
SIMILAR_CALLS = 0.5


def _similar_pairs(
    left: list[FunctionRecord], right: list[FunctionRecord], lit_a: set[str], lit_b: set[str]
) -> list[tuple[FunctionRecord, FunctionRecord]]:
    """Left-over functions that are one another's best match, of one kind and parameter count, sharing most calls."""
    traits_l = {f.node_id: _traits(f, lit_a) for f in left}
    traits_r = {f.node_id: _traits(f, lit_b) for f in right}

    def score(x: FunctionRecord, y: FunctionRecord) -> float:
        a, b = traits_l[x.node_id], traits_r[y.node_id]
        if a[:2] != b[:2] or not (a[3] or b[3]):
            return 0.0
        return len(a[3] & b[3]) / len(a[3] | b[3])

    best_r = {x.node_id: max(right, key=lambda y: score(x, y), default=None) for x in left}
    best_l = {y.node_id: max(left, key=lambda x: score(x, y), default=None) for y in right}
    pairs = []
    for x in left:
        y = best_r[x.node_id]
        if y is not None and best_l[y.node_id] is x and score(x, y) >= SIMILAR_CALLS:
            pairs.append((x, y))
    return pairs


def _functions_diff(
    a: Module, b: Module, left: list[FunctionRecord], right: list[FunctionRecord]
) -> tuple[NameDiff, list[FunctionRename], list[str]]:
    """Functions matched by reader name, then the rest one-to-one by structure (renames), then by most of what they
    call (renamed and changed); what is left is added or removed."""
    left = [f for f in left if f.kind != "module-body"]
    right = [f for f in right if f.kind != "module-body"]
    lit_a = {s.value for s in a.strings.items}
    lit_b = {s.value for s in b.strings.items}
    by_name_l: dict[str, list[FunctionRecord]] = {}
    by_name_r: dict[str, list[FunctionRecord]] = {}
    for f in left:
        by_name_l.setdefault(_reader_name(f), []).append(f)
    for f in right:
        by_name_r.setdefault(_reader_name(f), []).append(f)
    changed: list[str] = []
    for name in sorted(set(by_name_l) & set(by_name_r)):
        sorted_l = sorted(_fingerprint(f, lit_a) for f in by_name_l[name])
        sorted_r = sorted(_fingerprint(f, lit_b) for f in by_name_r[name])
        if sorted_l != sorted_r:
            changed.append(name)
    rest_l = [f for f in left if _reader_name(f) not in by_name_r]
    rest_r = [f for f in right if _reader_name(f) not in by_name_l]
    prints_l: dict[bytes, list[FunctionRecord]] = {}
    prints_r: dict[bytes, list[FunctionRecord]] = {}
    for f in rest_l:
        prints_l.setdefault(_fingerprint(f, lit_a), []).append(f)
    for f in rest_r:
        prints_r.setdefault(_fingerprint(f, lit_b), []).append(f)
    renamed: list[FunctionRename] = []
    paired_l: set[str] = set()
    paired_r: set[str] = set()
    for key in set(prints_l) & set(prints_r):
        # Only a one-to-one structural match is a rename; several alike on a side are left as they are.
        if len(prints_l[key]) == 1 and len(prints_r[key]) == 1:
            x, y = prints_l[key][0], prints_r[key][0]
            renamed.append(
                FunctionRename(left=_reader_name(x), right=_reader_name(y), line=y.line, matched_by="structure")
            )
            paired_l.add(x.node_id)
            paired_r.add(y.node_id)
    left_over_l = [f for f in rest_l if f.node_id not in paired_l]
    left_over_r = [f for f in rest_r if f.node_id not in paired_r]
    for x, y in _similar_pairs(left_over_l, left_over_r, lit_a, lit_b):
        renamed.append(
            FunctionRename(left=_reader_name(x), right=_reader_name(y), line=y.line, matched_by="similar-structure")
        )
        changed.append(_reader_name(y))
        paired_l.add(x.node_id)
        paired_r.add(y.node_id)
    renamed.sort(key=lambda r: (r.left, r.right))
    names = _set_diff(
        {_reader_name(f) for f in rest_l if f.node_id not in paired_l},
        {_reader_name(f) for f in rest_r if f.node_id not in paired_r},
    )
    return names, renamed, sorted(changed)


def _with_bundled(m: Module, index: appgraph.Index) -> list[FunctionRecord]:
    """A file's functions with its bundled modules': minifiers differ in which module markers they keep, so a file's
    functions are compared whole."""
    out = list(m.functions)
    for child in m.bundled_modules:
        bundled = index.modules.get(child)
        if bundled is not None:
            out.extend(bundled.functions)
    return out


def _module_diff(a: Module, b: Module, left: appgraph.Index, right: appgraph.Index) -> ModuleDifferences:
    shapes_a = {e.name: _canon(e.shape) for e in a.exports}
    shapes_b = {e.name: _canon(e.shape) for e in b.exports}
    functions, renamed, changed = _functions_diff(a, b, _with_bundled(a, left), _with_bundled(b, right))
    return ModuleDifferences(
        imports=_set_diff(
            {f"{e.kind}:{e.specifier}" for e in a.imports}, {f"{e.kind}:{e.specifier}" for e in b.imports}
        ),
        exports=_set_diff(set(shapes_a), set(shapes_b)),
        export_shapes_changed=sorted(n for n in set(shapes_a) & set(shapes_b) if shapes_a[n] != shapes_b[n]),
        functions=functions,
        strings=_set_diff({s.value for s in a.strings.items}, {s.value for s in b.strings.items}),
        size=SizePair(left=a.size, right=b.size),
        functions_renamed=renamed[:MAX_LISTED],
        functions_renamed_total=len(renamed),
        functions_changed=changed[:MAX_LISTED],
        functions_changed_total=len(changed),
    )


def _canon(value: Any) -> bytes:
    return msgspec.json.encode(value, order="sorted")


def _drawing(result: VersionComparison) -> render.Graph:
    """This page as a picture: each matched module an edge from its left node to its right one, labelled with its
    status (and moved, when matched by content under another path); the listed added and removed modules alone."""
    nodes: list[render.Node] = []
    edges: list[render.Edge] = []
    for m in result.modules:
        nodes += [render.Node(id=f"L{m.left}", label=m.path), render.Node(id=f"R{m.right}", label=m.path)]
        label = m.status + (", moved" if m.matched_by == "content" else "")
        edges.append(render.Edge(source=f"L{m.left}", target=f"R{m.right}", label=label))
    nodes += [render.Node(id=f"R{b.node_id}", label=f"+ {b.path}", emphasis=True) for b in result.added]
    nodes += [render.Node(id=f"L{b.node_id}", label=f"- {b.path}") for b in result.removed]
    return render.Graph(nodes=nodes, edges=edges, title="compare_application_versions")


def compare_versions(call: ToolCall) -> Evidence:
    left, right = appgraph.load(call, "left"), appgraph.load(call, "right")
    offset, limit = arg_int(call.args, "offset", 0), arg_int(call.args, "limit", 50)
    include_unchanged = arg_bool(call.args, "include_unchanged")
    lk = {_key(m, left.index): m for m in left.app.modules}
    rk = {_key(m, right.index): m for m in right.app.modules}
    pairs: list[tuple[Module, Module, Literal["path", "content"]]] = [
        (lk[k], rk[k], "path") for k in sorted(set(lk) & set(rk))
    ]
    rest_l = {k: m for k, m in lk.items() if k not in rk}
    rest_r = {k: m for k, m in rk.items() if k not in lk}
    by_sha_l: dict[str, list[str]] = {}
    by_sha_r: dict[str, list[str]] = {}
    for k, m in rest_l.items():
        by_sha_l.setdefault(m.sha256, []).append(k)
    for k, m in rest_r.items():
        by_sha_r.setdefault(m.sha256, []).append(k)
    ambiguous: list[AmbiguousMatch] = []
    for sha in sorted(set(by_sha_l) & set(by_sha_r)):
        lkeys, rkeys = sorted(by_sha_l[sha]), sorted(by_sha_r[sha])
        if len(lkeys) == 1 and len(rkeys) == 1:
            pairs.append((rest_l.pop(lkeys[0]), rest_r.pop(rkeys[0]), "content"))
        else:
            ambiguous.append(
                AmbiguousMatch(
                    sha256=sha, left=[rest_l[k].node_id for k in lkeys], right=[rest_r[k].node_id for k in rkeys]
                )
            )
            for k in lkeys:
                rest_l.pop(k)
            for k in rkeys:
                rest_r.pop(k)
    matched: list[MatchedModule] = []
    counts = {"unchanged": 0, "changed": 0, "contradicted": 0, "moved": 0}
    renames = 0
    for a, b, via in sorted(pairs, key=lambda p: (p[0].path, p[0].node_id)):
        call.ctx.check("comparing modules")
        status: Literal["unchanged", "changed", "contradicted"]
        if "contradicted" in (a.integrity, b.integrity):
            status = "contradicted"
        else:
            status = "unchanged" if a.sha256 == b.sha256 else "changed"
        counts[status] += 1
        if via == "content":
            counts["moved"] += 1
        differences = None if status == "unchanged" else _module_diff(a, b, left.index, right.index)
        if differences is not None:
            renames += differences.functions_renamed_total
        matched.append(
            MatchedModule(
                left=a.node_id,
                right=b.node_id,
                path=b.path,
                matched_by=via,
                status=status,
                left_sha256=a.sha256,
                right_sha256=b.sha256,
                differences=differences,
            )
        )
    # What changed is listed (paged); a module unchanged in place is counted, listed only on request.
    listed = [m for m in matched if include_unchanged or m.status != "unchanged" or m.matched_by == "content"]
    page = listed[offset : offset + limit]
    end = offset + len(page)
    entries_l = {(e.kind, e.path) for e in left.app.entry_points}
    entries_r = {(e.kind, e.path) for e in right.app.entry_points}

    def briefs(modules: dict[str, Module]) -> list[ModuleBrief]:
        return [
            ModuleBrief(node_id=m.node_id, path=m.path, kind=m.kind)
            for m in sorted(modules.values(), key=lambda m: (m.path, m.node_id))[:MAX_BRIEFS]
        ]

    complete = left.app.coverage.status == right.app.coverage.status == "complete"
    result = VersionComparison(
        summary=VersionSummary(
            **counts,
            added=len(rest_r),
            removed=len(rest_l),
            ambiguous=len(ambiguous),
            matched=len(matched),
            functions_renamed=renames,
        ),
        modules=page,
        offset=offset,
        limit=limit,
        total=len(listed),
        next_offset=end if end < len(listed) else None,
        added=briefs(rest_r),
        removed=briefs(rest_l),
        ambiguous=ambiguous,
        entry_points=EntryPointDiff(
            added=[EntryPointRef(kind=k, path=p) for k, p in sorted(entries_r - entries_l)],
            removed=[EntryPointRef(kind=k, path=p) for k, p in sorted(entries_l - entries_r)],
        ),
        coverage=CoveragePair(
            left=left.app.coverage.status,
            right=right.app.coverage.status,
            status="complete" if complete else "partial",
        ),
        details_truncated=end < len(listed),
    )
    result, asked = appgraph.drawn(call, result, _drawing)
    params: JSONObject = {
        "left": appgraph.reference(left),
        "right": appgraph.reference(right),
        "offset": offset,
        "limit": limit,
        "include_unchanged": include_unchanged,
        **asked,
    }
    return appgraph.derive(
        "compare_application_versions",
        params,
        msgspec.to_builtins(result),
        [left, right],
        [
            "Modules match one-to-one by path, then by unique content hash; ambiguous content "
            "matches are reported, never paired.",
            "Functions match by their original name (source maps) or name, then one-to-one by structure "
            "(kind, parameters, called members, literal arguments, return kinds): a minifier's renames are renames.",
        ],
    )


# -- source to bundle ----------------------------------------------------------------------

Via = Literal["source-map", "content", "bundle-path"]
Content = Literal["identical", "different", "unknown"]


@dataclass
class _Found:
    """A bundle module a source maps to, while the maps and paths that say so are gathered (then a BundleMatch)."""

    bundle_module: str
    generated: str | None
    content: Content
    via: list[Via] = field(default_factory=list)
    source_map: str | None = None
    map_source: str | None = None

    def match(self) -> BundleMatch:
        return BundleMatch(
            bundle_module=self.bundle_module,
            generated=self.generated,
            via=sorted(self.via),
            content=self.content,
            source_map=self.source_map,
            map_source=self.map_source,
        )


def compare_source_to_bundle(call: ToolCall) -> Evidence:
    offset, limit = arg_int(call.args, "offset", 0), arg_int(call.args, "limit", 50)
    if "application" in call.args:
        source = bundle = appgraph.load(call, "application")
        inputs = [source]
        params: JSONObject = {"application": appgraph.reference(source), "offset": offset, "limit": limit}
    else:
        source, bundle = appgraph.load(call, "source"), appgraph.load(call, "bundle")
        inputs = [source, bundle]
        params = {
            "source": appgraph.reference(source),
            "bundle": appgraph.reference(bundle),
            "offset": offset,
            "limit": limit,
        }
    sources = [m for m in source.app.modules if m.kind == "source" and not m.in_dependency]
    map_sources = [(sm, s) for sm in bundle.app.source_maps for s in sm.sources]
    bundled = [m for m in bundle.app.modules if m.kind == "bundled"]
    used_bundled: set[str] = set()
    rows: list[SourceMapping] = []
    for src in sorted(sources, key=lambda m: (m.path, m.node_id)):
        call.ctx.check("mapping sources")
        want = normal_path(src.path)
        matches: dict[str, _Found] = {}

        def add(
            target: str,
            generated: str | None,
            via: Via,
            content: Content,
            source_map: tuple[str, str] | None,
            matches: dict[str, _Found] = matches,
        ) -> None:
            row = matches.setdefault(target, _Found(target, generated, content))
            if via not in row.via:
                row.via.append(via)
            if row.content == "unknown":
                row.content = content
            if source_map is not None:
                row.source_map, row.map_source = source_map

        for sm, s in map_sources:
            by_path = path_matches(normal_path(s.path), want)
            by_content = s.content_sha256 is not None and s.content_sha256 == src.sha256
            if not (by_path or by_content):
                continue
            content: Content = (
                "unknown"
                if s.content_sha256 is None
                else "identical"
                if s.content_sha256 == src.sha256
                else "different"
            )
            target = s.module or sm.generated or sm.node_id
            add(
                target,
                sm.generated,
                "source-map" if by_path else "content",
                content,
                (sm.node_id, s.source),
            )
        for b in bundled:
            if path_matches(normal_path(b.path), want):
                add(b.node_id, b.container, "bundle-path", "unknown", None)
        used_bundled.update(matches)
        found = [matches[k].match() for k in sorted(matches)]
        rows.append(
            SourceMapping(
                source=src.node_id,
                path=src.path,
                sha256=src.sha256,
                status="mapped" if found else "unmapped",
                matches=found,
            )
        )
    # An original that only the map holds (sourcesContent; a shipped page has no source tree beside its bundle) is
    # mapped too: its text is in the map, its code in the generated file.
    listed = {normal_path(r.path) for r in rows}
    from_content = 0
    for sm, s in map_sources:
        if not s.has_content or s.content_sha256 is None or normal_path(s.path) in listed:
            continue
        listed.add(normal_path(s.path))
        target = s.module or sm.generated or sm.node_id
        used_bundled.add(target)
        from_content += 1
        rows.append(
            SourceMapping(
                source=f"{sm.node_id}#{s.index}",
                path=s.path,
                sha256=s.content_sha256,
                status="mapped",
                origin="sources-content",
                tokens=s.tokens,
                matches=[
                    BundleMatch(
                        bundle_module=target,
                        generated=sm.generated,
                        via=["source-map"],
                        content="identical",
                        source_map=sm.node_id,
                        map_source=s.source,
                    )
                ],
            )
        )
    bundle_only = [
        BundleOnly(node_id=b.node_id, path=b.path, container=b.container)
        for b in sorted(bundled, key=lambda m: (m.path, m.node_id))
        if b.node_id not in used_bundled
    ]
    result = SourceToBundle(
        summary=SourceBundleSummary(
            sources=len(rows),
            mapped=sum(1 for r in rows if r.status == "mapped"),
            unmapped=sum(1 for r in rows if r.status == "unmapped"),
            identical=sum(1 for r in rows if any(m.content == "identical" for m in r.matches)),
            bundle_only=len(bundle_only),
            source_maps=len(bundle.app.source_maps),
            from_sources_content=from_content,
        ),
        sources=rows[offset : offset + limit],
        offset=offset,
        limit=limit,
        total=len(rows),
        next_offset=offset + limit if offset + limit < len(rows) else None,
        bundle_only=bundle_only[:MAX_BRIEFS],
    )
    return appgraph.derive(
        "compare_source_to_bundle",
        params,
        msgspec.to_builtins(result),
        inputs,
        [
            "Sources map to bundle modules by the maps' sources, sourcesContent hashes and bundled-module paths; "
            "an original only a map holds (sourcesContent) is listed as mapped, with its mapping segments (tokens)."
        ],
    )


# -- export shapes -------------------------------------------------------------------------


def _side(loaded: Loaded, name: str, selector: str | None, path: str) -> ExportSide:
    index = loaded.index
    modules = (
        index.module(selector)
        if selector
        else [m for m in loaded.app.modules if any(e.name == name for e in m.exports)]
    )
    with_export = [m for m in modules if any(e.name == name for e in m.exports)]
    if len(with_export) > 1:
        raise appgraph.not_found(
            path if selector else "module",
            f"{len(with_export)} modules export {name!r}; pass module (a path or node_id)",
            sorted(m.node_id for m in with_export),
        )
    if not with_export:
        uncertain = loaded.app.coverage.status == "partial" or any(m.parse == "error" for m in modules)
        return ExportSide(
            presence="unknown-coverage" if uncertain else "absent",
            module=modules[0].node_id if len(modules) == 1 else None,
            shapes=[],
        )
    m = with_export[0]
    records: list[ExportRecord] = [e for e in m.exports if e.name == name]
    shapes = {_canon(e.shape): e.shape for e in records}
    return ExportSide(
        presence="present",
        module=m.node_id,
        path=m.path,
        kinds=sorted({e.kind for e in records}),
        lines=sorted({e.line for e in records}),
        shapes=[shapes[k] for k in sorted(shapes)],
    )


def _differences(a: Any, b: Any, where: str, out: list[ShapeDifference]) -> None:
    if len(out) >= MAX_DIFFERENCES or _canon(a) == _canon(b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            sub = f"{where}.{key}" if where else key
            if key not in a:
                out.append(ShapeDifference(path=sub, change="added", right=b[key]))
            elif key not in b:
                out.append(ShapeDifference(path=sub, change="removed", left=a[key]))
            else:
                _differences(a[key], b[key], sub, out)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _differences(x, y, f"{where}[{i}]", out)
        return
    out.append(ShapeDifference(path=where, change="changed", left=a, right=b))


def compare_export_shapes(call: ToolCall) -> Evidence:
    left, right = appgraph.load(call, "left"), appgraph.load(call, "right")
    name, selector = arg_str(call.args, "export", ""), arg_str(call.args, "module")
    a = _side(left, name, selector, "module")
    b = _side(right, name, selector, "module")
    differences: list[ShapeDifference] = []
    status: Literal["unchanged", "changed", "added", "removed", "absent", "unknown"]
    if a.presence == b.presence == "present":
        _differences(a.shapes, b.shapes, "shapes", differences)
        status = "unchanged" if not differences else "changed"
    elif a.presence == "present" and b.presence == "absent":
        status = "removed"
    elif a.presence == "absent" and b.presence == "present":
        status = "added"
    elif a.presence == b.presence == "absent":
        status = "absent"
    else:
        status = "unknown"
    result = ExportShapeComparison(
        export=name, module=selector, left=a, right=b, status=status, differences=differences
    )
    params: JSONObject = {
        "left": appgraph.reference(left),
        "right": appgraph.reference(right),
        "export": name,
        "module": selector,
    }
    return appgraph.derive(
        "compare_javascript_export_shapes",
        params,
        msgspec.to_builtins(result),
        [left, right],
        [
            "Shapes are static: parameters, return-expression shapes, object keys and class "
            "members as written; values computed at run time are not known."
        ],
    )
