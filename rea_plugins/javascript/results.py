"""The normalized results of the application workflows: traces and comparisons over application Evidence."""

from __future__ import annotations

from typing import Any
from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Paged
from rea.plugin import Picture
from rea.plugin import Record
from rea_plugins.javascript.model import Assignment
from rea_plugins.javascript.model import EntryPoint
from rea_plugins.javascript.model import ModuleKind
from rea_plugins.javascript.model import OriginalLocation
from rea_plugins.javascript.model import ParseStatus
from rea_plugins.javascript.model import ReturnSite


class GraphEdge(Record, rename={"source": "from", "target": "to"}):
    """An edge between two nodes of the trace: an import kind, ``defines``, ``calls`` or ``closure``."""

    source: str
    target: str
    kind: str
    # The import specifier, the called expression, the defined name or a closure's captures.
    label: str


class Seed(Record):
    kind: Literal["module", "string", "symbol"]
    value: str
    match: Literal["exact", "substring"]


class SeedMatch(Record):
    node_id: str
    type: Literal["module", "function"]
    path: str
    # What matched: the module's path, a string literal, a function or an export.
    via: Literal["path", "string", "function", "export"]
    value: str
    line: int | None = None


class TraceNode(Record):
    """A module (with its kind and container) or a function (with its role: seed, caller or exported)."""

    node_id: str
    type: Literal["module", "function"]
    path: str
    depth: int
    kind: str | None = None
    container: str | None = None
    name: str | None = None
    line: int | None = None
    module: str | None = None
    role: Literal["seed", "caller", "exported"] | None = None
    # A generated function's original location and name, through its file's source map.
    original: OriginalLocation | None = None


class TraceLimits(Record):
    max_nodes: int
    max_depth: int
    direction: Literal["imports", "importers", "both"] | None = None


class FeatureTrace(Record):
    """The seed's matches (the first 100 listed; at most 20 strings per module), then the trace from them."""

    seed: Seed
    matches: list[SeedMatch]
    matches_total: int
    nodes: list[TraceNode]
    edges: list[GraphEdge]
    truncated: bool
    limits: TraceLimits
    application_coverage: Literal["complete", "partial"]
    # Drawn only when the call asks (format: mermaid or dot).
    picture: Picture | None = None


class TracedCall(Record):
    callee: str
    line: int
    # The function's node_id, and how it was found (local, an import kind); null: not resolved statically.
    resolved: str | None
    via: str | None
    # A handler the call registers by name (`el.addEventListener("click", panel.onClick)`), and the function it is
    # when the module has exactly one of that name.
    argument: str | None = None
    handler: str | None = None
    handler_resolved: str | None = None


# -- analyze_javascript_application, detail "summary" -----------------------------------------------


class ModuleOverview(Record):
    """One module in a summary: what it is and how much it holds (its records are in the complete Evidence)."""

    node_id: str
    path: str
    kind: ModuleKind
    size: int
    parse: ParseStatus
    functions: int
    strings: int
    exports: int
    imports: int
    container: str | None = None
    source_map: str | None = None


class SourceMapOverview(Record):
    node_id: str
    generated: str | None
    sources: int
    sources_with_content: int
    mappings_decoded: bool
    tokens: int
    functions_mapped: int


class InputOverview(Record):
    """What was read: the first 20 HTML pages and package.json files listed, all counted."""

    format: Literal["directory", "asar"]
    files_seen: int
    files_analyzed: int
    bytes_analyzed: int
    html_files: list[str]
    html_files_total: int
    package_json: list[str]
    package_json_total: int


class CoverageOverview(Record):
    status: Literal["complete", "partial"]
    reasons: list[str]
    skipped_total: int


class ApplicationSummary(Paged):
    """An application's summary: counts, coverage, entry points, source maps and one page of its modules. The
    complete graph is retained as ``complete_evidence_id``, which every application workflow takes (this record's
    own id works too)."""

    complete_evidence_id: str
    input: InputOverview
    coverage: CoverageOverview
    counts: dict[str, int]
    entry_points: list[EntryPoint]
    source_maps: list[SourceMapOverview]
    source_maps_total: int
    modules: list[ModuleOverview]
    # The unpacker's contradiction records: JSON the kernel's EntryRead carries, their fields each unpacker's.
    integrity_contradictions: list[JSONObject]
    integrity_contradictions_total: int


class TracedFunction(Record, rename={"is_async": "async"}):
    node_id: str
    name: str
    kind: str
    module: str
    path: str
    line: int
    end_line: int
    depth: int
    params: list[str]
    is_async: bool
    calls: list[TracedCall]
    returns: list[ReturnSite]
    assignments: list[Assignment]
    captures: list[str]
    closures: list[str]
    parent: str | None
    truncated: bool
    original: OriginalLocation | None = None


class SemanticsTarget(Record):
    kind: Literal["module", "function"]
    value: str
    module: str | None = None


class SemanticsTrace(Record):
    target: SemanticsTarget
    root: str
    functions: list[TracedFunction]
    edges: list[GraphEdge]
    unresolved_calls: int
    truncated: bool
    limits: TraceLimits
    application_coverage: Literal["complete", "partial"]


# -- compare_application_versions ------------------------------------------------------------------


class NameDiff(Record):
    """Names only in the right (added) and only in the left (removed): at most 50 listed, all counted."""

    added: list[str]
    removed: list[str]
    added_total: int
    removed_total: int


class SizePair(Record):
    left: int
    right: int


class FunctionRename(Record):
    """A function present on both sides under different names (a minifier's renaming), matched by its structure:
    kind, parameter count, the strings it passes and the members it calls, its return shapes. A file's functions
    are compared with its bundled modules' (minifiers differ in the module markers they keep)."""

    left: str
    right: str
    line: int
    # structure: the same on both sides; similar-structure: most of what it calls and passes in common (changed too).
    matched_by: Literal["structure", "similar-structure"]


class ModuleDifferences(Record):
    imports: NameDiff
    exports: NameDiff
    export_shapes_changed: list[str]
    # Added and removed functions after renamed ones are paired (``functions_renamed``); names are the original
    # names a source map gave, else the names as written.
    functions: NameDiff
    strings: NameDiff
    size: SizePair
    functions_renamed: list[FunctionRename] = []
    functions_renamed_total: int = 0
    # Functions matched on both sides whose structure differs.
    functions_changed: list[str] = []
    functions_changed_total: int = 0


class MatchedModule(Record):
    left: str
    right: str
    path: str
    matched_by: Literal["path", "content"]
    status: Literal["unchanged", "changed", "contradicted"]
    left_sha256: str
    right_sha256: str
    # For changed and contradicted modules.
    differences: ModuleDifferences | None = None


class ModuleBrief(Record):
    node_id: str
    path: str
    kind: ModuleKind


class AmbiguousMatch(Record):
    """Modules with the same content on both sides, more than one on a side: reported, never paired."""

    sha256: str
    left: list[str]
    right: list[str]


class EntryPointRef(Record):
    kind: str
    path: str


class EntryPointDiff(Record):
    added: list[EntryPointRef]
    removed: list[EntryPointRef]


class CoveragePair(Record):
    left: Literal["complete", "partial"]
    right: Literal["complete", "partial"]
    status: Literal["complete", "partial"]


class VersionSummary(Record):
    unchanged: int
    changed: int
    contradicted: int
    moved: int
    added: int
    removed: int
    ambiguous: int
    matched: int
    functions_renamed: int = 0


class VersionComparison(Paged):
    """Counts first; then one page of the matched modules that changed or moved (every one with
    ``include_unchanged``), each with its differences; the first 100 added and removed modules (all counted)."""

    summary: VersionSummary
    modules: list[MatchedModule]
    added: list[ModuleBrief]
    removed: list[ModuleBrief]
    ambiguous: list[AmbiguousMatch]
    entry_points: EntryPointDiff
    coverage: CoveragePair
    details_truncated: bool
    # Drawn only when the call asks (format: mermaid or dot): this page's modules, each pair left -> right.
    picture: Picture | None = None


# -- compare_source_to_bundle ----------------------------------------------------------------------


class BundleMatch(Record):
    bundle_module: str
    generated: str | None
    via: list[Literal["source-map", "content", "bundle-path"]]
    content: Literal["identical", "different", "unknown"]
    source_map: str | None = None
    map_source: str | None = None


class SourceMapping(Record):
    """A source file (``origin`` input) or an original only a source map holds (``sources-content``: ``source`` is
    ``<map node_id>#<index>``, ``tokens`` its mapping segments)."""

    source: str
    path: str
    sha256: str
    status: Literal["mapped", "unmapped"]
    matches: list[BundleMatch]
    origin: Literal["input", "sources-content"] = "input"
    tokens: int | None = None


class BundleOnly(Record):
    node_id: str
    path: str
    container: str | None


class SourceBundleSummary(Record):
    sources: int
    mapped: int
    unmapped: int
    identical: int
    bundle_only: int
    source_maps: int
    # Of ``mapped``, the originals only a map's sourcesContent holds.
    from_sources_content: int = 0


class SourceToBundle(Paged):
    """Counts first; then one page of the sources (``offset``, ``limit``, ``total``, ``next_offset``) and the
    first 100 bundle-only modules (all counted)."""

    summary: SourceBundleSummary
    sources: list[SourceMapping]
    bundle_only: list[BundleOnly]


# -- compare_javascript_export_shapes --------------------------------------------------------------


class ExportSide(Record):
    presence: Literal["present", "absent", "unknown-coverage"]
    module: str | None
    # The export's value shapes (ExportRecord.shape: nested to any depth).
    shapes: list[dict[str, JSONValue]]
    path: str | None = None
    kinds: list[str] | None = None
    lines: list[int] | None = None


class ShapeDifference(Record):
    """One difference between the sides' shapes, at a JSON path: a key added or removed, a value changed."""

    path: str
    change: Literal["added", "removed", "changed"]
    left: Any | msgspec.UnsetType = msgspec.UNSET
    right: Any | msgspec.UnsetType = msgspec.UNSET


class ExportShapeComparison(Record):
    export: str
    module: str | None
    left: ExportSide
    right: ExportSide
    status: Literal["unchanged", "changed", "added", "removed", "absent", "unknown"]
    differences: list[ShapeDifference]


# -- map_javascript_location -----------------------------------------------------------------------


class GeneratedPosition(Record):
    module: str
    path: str
    line: int
    column: int


class OriginalPosition(Record):
    """The original of a generated position: source path, 1-based line and column, the map's name there, and the
    line's text from ``sourcesContent`` (at most 240 characters)."""

    source: str
    line: int
    column: int
    name: str | None = None
    text: str | None = None


class MappedFunction(Record):
    """The generated function holding the position, with its original (name and location) when it has one."""

    node_id: str
    name: str
    module: str
    original: OriginalLocation | None = None


class LocationMapping(Record):
    generated: GeneratedPosition
    source_map: str
    # null: no mapping segment at or before the column on that line.
    original: OriginalPosition | None
    function: MappedFunction | None
