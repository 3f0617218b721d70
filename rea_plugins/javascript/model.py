"""The JavaScript application graph as records: what analyze_javascript_application returns."""

from __future__ import annotations

from typing import Any
from typing import Literal

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Record

SCHEMA_VERSION = 1
OPERATION = "analyze_javascript_application"

ModuleKind = Literal["source", "asset", "bundled"]
EdgeKind = Literal[
    "import",
    "require",
    "dynamic-import",
    "re-export",
    "bundle-require",
    "bundle-reference",
    "webpack-require",
]
TargetKind = Literal["module", "package", "builtin", "unresolved", "dynamic"]
ParseStatus = Literal["ok", "error", "skipped"]
Integrity = Literal["verified", "contradicted", "not-declared"]


# gc=False: a graph holds about 500,000 records and none can be part of a cycle (they hold strings, numbers, lists
# and dicts of values, and other records): the cycle collector need not track them (16 bytes each; 11 MiB on the npm
# tree).
# A Record that keeps its defaults on the wire (every field of a graph record is in its answer) and decodes only
# with its own fields (an application graph is read back from Evidence, appgraph.py).
class _Record(Record, omit_defaults=False, forbid_unknown_fields=True, gc=False):
    pass


# One empty list shared by every record field with nothing in it: records are values, their lists never change once
# built, and a graph has about 220,000 such fields (12 MiB of separate empty lists on the npm tree).
EMPTY: list[Any] = []


class Span(_Record):
    """1-based inclusive line range inside the containing file."""

    start_line: int
    end_line: int


class ImportEdge(_Record):
    kind: EdgeKind
    specifier: str
    line: int
    target_kind: TargetKind
    resolved: str | None = None
    resolved_path: str | None = None
    names: list[str] = []


class ExportRecord(_Record):
    name: str
    kind: Literal["esm", "commonjs", "re-export"]
    line: int
    local: str | None = None
    source: str | None = None
    # The exported value's shape as the analysis reads it, nested to any depth (so any JSON, not one Struct).
    shape: dict[str, JSONValue] = {}


class IpcRecord(_Record):
    """One Electron IPC call: ``ipcMain.handle("channel", ...)``, ``ipcRenderer.invoke(...)``, ..."""

    api: str
    channel: str | None
    line: int
    expression: str | None = None


class StringLiteral(_Record, omit_defaults=True):
    """A string literal, or a template literal's static text (``template``: its substitutions written ``${…}``)."""

    value: str
    line: int
    truncated: bool = False
    template: bool = False
    # 1-based (byte) column: a minified bundle is one line (0: not known, for strings scanned from unparsed text).
    column: int = 0


class StringSet(_Record):
    """A module's unique strings: ``items`` holds the first ``MAX_STRINGS`` of ``total`` (``truncated`` says when
    fewer than all are listed; the module's diagnostics and the coverage reasons say so too)."""

    items: list[StringLiteral]
    total: int
    truncated: bool


class CallSite(_Record, omit_defaults=True):
    callee: str
    line: int
    # The first argument (a string's value, else its source text; 80 characters at most), when there is one.
    argument: str | None = None
    # The handler a registration passes by name (`el.addEventListener("click", panel.onClick)`: `panel.onClick`).
    handler: str | None = None


class ReturnSite(_Record):
    line: int
    # The returned value's shape, nested to any depth (as ExportRecord.shape).
    shape: dict[str, JSONValue]


class Assignment(_Record, omit_defaults=True):
    target: str
    line: int
    # Both arms of a conditional value (`x = c ? a : b`), as written.
    candidates: list[str] | None = None


class OriginalLocation(_Record, omit_defaults=True):
    """Where a generated function came from, through its file's source map: the original source's path, its 1-based
    line and column, and the function's name there (from the map's ``sourcesContent`` when present, else the
    map's ``names``)."""

    source: str
    line: int
    column: int
    name: str | None = None


class FunctionRecord(_Record, omit_defaults=True):
    """A function, method or arrow; ``kind == "module-body"`` holds a module's top-level statements. ``name`` is
    the reader's name: ``Class.method`` for methods and class fields, ``object.key`` for an object literal's members,
    the export name for ``module.exports.x = ...``."""

    node_id: str
    name: str
    kind: Literal["declaration", "expression", "arrow", "method", "generator", "module-body"]
    line: int
    end_line: int
    params: list[str]
    is_async: bool
    parent: str | None
    calls: list[CallSite]
    returns: list[ReturnSite]
    assignments: list[Assignment]
    captures: list[str]
    closures: list[str]
    truncated: bool = False
    original: OriginalLocation | None = None
    # 1-based (byte) column of the function's end: which function holds a string of a one-line bundle.
    end_column: int = 0


class Diagnostic(_Record):
    kind: Literal["parse-error", "missing-node", "decode-error", "source-map", "limit", "unavailable"]
    message: str
    line: int | None = None
    column: int | None = None


class Module(_Record):
    node_id: str
    path: str
    kind: ModuleKind
    container: str | None
    language: Literal["javascript", "typescript", "tsx"]
    size: int
    sha256: str
    integrity: Integrity
    span: Span | None
    ranges: list[Span]
    parse: ParseStatus
    bundle_format: Literal["esbuild", "webpack", "wrapper"] | None
    in_dependency: bool
    imports: list[ImportEdge]
    exports: list[ExportRecord]
    strings: StringSet
    functions: list[FunctionRecord]
    diagnostics: list[Diagnostic]
    ipc: list[IpcRecord] = []
    bundled_modules: list[str] = []
    source_map: str | None = None
    truncated: bool = False


class EntryPoint(_Record):
    kind: Literal[
        "package-main", "package-bin", "electron-main", "electron-preload", "electron-renderer", "renderer-html"
    ]
    path: str
    node_id: str | None
    declared_by: str
    detail: str = ""


class SourceMapSource(_Record):
    index: int
    source: str
    path: str
    outside_root: bool
    has_content: bool
    content_sha256: str | None
    content_size: int | None
    module: str | None
    matched_by: Literal["bundle-path", "sole-module"] | None
    file_module: str | None
    file_match: Literal["path", "content"] | None
    content_identical: bool | None
    # Mapping segments that land in this source.
    tokens: int = 0


class SourceMap(_Record):
    node_id: str
    location: Literal["inline", "external", "unreferenced"]
    map_path: str | None
    generated: str | None
    file: str | None
    source_root: str | None
    sources: list[SourceMapSource]
    mappings_decoded: bool
    diagnostics: list[Diagnostic]
    # Mapping segments decoded (VLQ), and the generated file's functions given an original location through them.
    tokens: int = 0
    functions_mapped: int = 0
    # The map's bytes' digest (an external map's file; an inline one is its generated file's): a location lookup
    # reads the map again and checks it is the one analyzed.
    sha256: str | None = None


class Skipped(_Record):
    path: str
    reason: str


class Coverage(_Record):
    status: Literal["complete", "partial"]
    reasons: list[str]
    skipped: list[Skipped]


class Limits(_Record):
    max_files: int
    max_bytes_per_file: int
    max_total_bytes: int
    max_modules: int


class InputSummary(_Record):
    format: Literal["directory", "asar"]
    files_seen: int
    files_analyzed: int
    bytes_analyzed: int
    html_files: list[str]
    package_json: list[str]


class Application(_Record):
    """The normalized result of ``analyze_javascript_application``."""

    schema_version: int
    input: InputSummary
    coverage: Coverage
    limits: Limits
    modules: list[Module]
    entry_points: list[EntryPoint]
    source_maps: list[SourceMap]
    # The unpacker's contradiction records: JSON the kernel's EntryRead carries, their fields each unpacker's.
    integrity_contradictions: list[JSONObject]
    counts: dict[str, int]


def file_node_id(path: str) -> str:
    return f"mod:{path}"


def bundled_node_id(container_path: str, bundled_path: str) -> str:
    return f"mod:{container_path}!{bundled_path}"


def function_node_id(module_path: str, name: str, line: int, column: int) -> str:
    return f"fn:{module_path}#{name}@{line}:{column}"
