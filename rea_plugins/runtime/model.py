"""The normalized results of the V8 inspector tools, as records (each tool's output schema comes from these)."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Paged
from rea.plugin import Record

RuntimeKind = Literal["node", "electron-main", "electron-preload", "electron-renderer"]
# Where a parsed script came from: the application (a file inside allowed_file_roots, or an allowed origin), the
# runtime itself (node:internal, extensions, unnamed evaluations), or outside what the request allowed.
ScriptScope = Literal["application", "runtime-internal", "outside-scope"]


class RuntimeVersion(Record):
    product: str
    protocol_version: str


class RuntimeTarget(Record):
    target_id: str
    type: str
    title: str
    url: str
    # The file a file:// target runs (its main script), when it lies inside allowed_file_roots.
    file_path: str | None


class RuntimeExcluded(Record):
    outside_file_roots: int
    disallowed_origin: int
    unsupported_url: int


class RuntimeTargetList(Paged):
    """list_javascript_runtime_targets: the inspector's debuggable targets within the request's scope, paged."""

    schema_version: int
    runtime: RuntimeVersion
    endpoint: str
    allowed_file_roots: list[str]
    allowed_origins: list[str]
    targets: list[RuntimeTarget]
    excluded: RuntimeExcluded
    limitations: list[str]


class ParsedScript(Record):
    script_id: str
    url: str
    # The script's file, for a file:// URL inside allowed_file_roots.
    file_path: str | None
    execution_context_id: int | None
    is_module: bool
    length: int | None
    # V8's own hash of the source, as Debugger.scriptParsed gave it (SHA-256 of the source on current V8).
    v8_hash: str
    # SHA-256 of the UTF-8 source rea read with Debugger.getScriptSource (application scripts, within the byte bound).
    sha256: str | None
    source_map_url: str | None


class ExecutionContext(Record):
    context_id: int
    name: str
    origin: str
    is_default: bool | None
    aux_type: str | None


class RuntimeConsoleEvent(Record):
    level: str
    text: str | None
    url: str | None
    line: int | None
    column: int | None


class RuntimeException(Record):
    text: str
    description: str | None
    url: str | None
    line: int | None
    column: int | None


class ScriptCounts(Record):
    application: int
    runtime_internal: int
    outside_scope: int
    sources_read: int
    source_bytes: int


class RuntimeObservation(Record):
    """observe_javascript_runtime: what a V8 inspector target parsed, logged and threw during a bounded window."""

    schema_version: int
    runtime: RuntimeVersion
    runtime_kind: RuntimeKind
    endpoint: str
    target: RuntimeTarget
    observation_ms: int
    allowed_file_roots: list[str]
    allowed_origins: list[str]
    counts: ScriptCounts
    # Application scripts, sorted by URL then script id (the runtime's own and out-of-scope ones are counted).
    scripts: list[ParsedScript]
    scripts_truncated: int
    execution_contexts: list[ExecutionContext]
    console: list[RuntimeConsoleEvent]
    console_dropped: int
    exceptions: list[RuntimeException]
    exceptions_dropped: int
    limitations: list[str]


class RuntimeObservationSummary(Paged):
    """observe_javascript_runtime's default answer: the counts and one page of the scripts; the complete observation
    is retained as ``complete_evidence_id`` (reconcile_javascript_runtime takes either)."""

    complete_evidence_id: str
    runtime: RuntimeVersion
    runtime_kind: RuntimeKind
    target: RuntimeTarget
    observation_ms: int
    counts: ScriptCounts
    scripts: list[ParsedScript]
    execution_contexts: int
    console: list[RuntimeConsoleEvent]
    console_total: int
    exceptions: list[RuntimeException]
    exceptions_total: int
    limitations: list[str]


MatchKind = Literal["content-hash", "source-map"]
UnknownReason = Literal["no-static-module", "content-differs", "not-hashed"]


class LoadedKnown(Record, omit_defaults=False):
    # Its empty default is part of the answer (it always was), so defaults are not omitted here.
    url: str
    script_id: str
    runtime_kind: RuntimeKind
    module: str
    module_path: str
    matched_by: MatchKind
    # The static modules a source map joins this script to (its original sources bundled into it).
    mapped_modules: list[str] = []


class LoadedUnknown(Record, omit_defaults=False):
    # Its empty default is part of the answer (it always was), so defaults are not omitted here.
    url: str
    script_id: str
    runtime_kind: RuntimeKind
    sha256: str | None
    # Why it joined nothing: no static module has its bytes, or one at the same path has other bytes.
    reason: UnknownReason
    same_path_module: str | None = None


class NeverLoaded(Record):
    module: str
    module_path: str
    kind: str


class ReconcileCounts(Record):
    runtime_scripts: int
    static_modules: int
    loaded_and_known: int
    loaded_but_unknown: int
    known_but_never_loaded: int


class ReconcilePage(Paged):
    """One window over the three lists at once: ``total`` is the longest list's length."""


class RuntimeReconciliation(Record):
    """reconcile_javascript_runtime: runtime scripts joined to static application modules by content and source map."""

    schema_version: int
    runtime_evidence_ids: list[str]
    static_evidence_ids: list[str]
    counts: ReconcileCounts
    page: ReconcilePage
    loaded_and_known: list[LoadedKnown]
    loaded_but_unknown: list[LoadedUnknown]
    known_but_never_loaded: list[NeverLoaded]
    limitations: list[str]
