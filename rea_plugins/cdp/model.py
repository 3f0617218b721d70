"""The normalized results of the browser tools, as records (their JSON Schemas validate comparison inputs)."""

from __future__ import annotations

from typing import Any
from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import Record
from rea_plugins.cdp.urls import SanitizedUrl

TRUST = "page-declared-untrusted"


class BrowserRecord(Record, forbid_unknown_fields=True, omit_defaults=False):
    """The base of the browser tools' records: comparisons decode captures into them, so decoding holds to the
    fields, and every field is on the wire, a default too, unless a record says otherwise."""


class BrowserVersion(BrowserRecord):
    product: str
    protocol_version: str
    revision: str
    user_agent: str
    js_version: str


class Completeness(BrowserRecord):
    """Missing or truncated sections make a capture ineligible to prove equality."""

    status: Literal["complete", "incomplete", "truncated"]
    equality_eligible: bool
    missing_sections: list[str]
    truncated_sections: list[str]


def completeness(missing: set[str], truncated: set[str]) -> Completeness:
    status: Literal["complete", "incomplete", "truncated"] = (
        "truncated" if truncated else "incomplete" if missing else "complete"
    )
    return Completeness(
        status=status,
        equality_eligible=status == "complete",
        missing_sections=sorted(missing),
        truncated_sections=sorted(truncated),
    )


# -- targets ---------------------------------------------------------------------------------------


class BrowserTarget(BrowserRecord):
    target_id: str
    type: str
    title: str
    url: str
    origin: str | None
    attached: bool


class Excluded(BrowserRecord):
    disallowed_origin: int
    unsupported_url: int
    non_page: int


class TargetList(BrowserRecord):
    schema_version: Literal[1]
    browser: BrowserVersion
    endpoint: str
    allowed_origins: list[str]
    total: int
    offset: int
    targets: list[BrowserTarget]
    excluded: Excluded
    limitations: list[str]


class TargetRef(BrowserRecord):
    target_id: str
    url: str
    origin: str | None


# -- passive inspection ----------------------------------------------------------------------------


class CaptureWindow(BrowserRecord):
    started_at: str
    ended_at: str
    observation_ms: int


class Frame(BrowserRecord):
    frame_id: str
    parent_frame_id: str | None
    url: str
    origin: str | None
    name: str | None
    mime_type: str | None


class DomNode(BrowserRecord, omit_defaults=True):
    index: int
    parent_index: int
    node_type: int
    node_name: str
    node_value_length: int
    attribute_names: list[str]
    # A text node's visible text (at most 200 characters) where include_text asked; a form field's is redacted.
    text: str | None = None


class Dom(BrowserRecord):
    total_nodes: int
    html_sha256: str | None
    html_bytes: int | None
    truncated: bool
    nodes: list[DomNode]


class FormField(BrowserRecord):
    tag: str
    name: str | None
    type: str | None
    required: bool


class Form(BrowserRecord):
    node_index: int
    action: str | None
    method: str
    id: str | None
    webmcp_tool_name: str | None
    fields: list[FormField]


class Script(BrowserRecord):
    script_key: str
    script_id: str
    frame_id: str | None
    url: str
    origin: str | None
    inline: bool
    start_line: int
    start_column: int
    sha256: str | None
    cdp_hash: str
    length: int | None
    is_module: bool
    source_map_url: str | None


class Scripts(BrowserRecord):
    total: int
    excluded_anonymous: int
    excluded_disallowed_origin: int
    items: list[Script]


class Resource(BrowserRecord):
    url: str
    origin: str | None
    type: str
    mime_type: str
    content_size: int | None
    frame_id: str


class Initiator(BrowserRecord):
    type: str
    url: str | None
    line: int | None
    column: int | None


class NetworkRequest(BrowserRecord):
    request_id: str
    url: str
    origin: str | None
    method: str
    resource_type: str | None
    status: int | None
    mime_type: str | None
    encoded_data_length: int | None
    failure: str | None
    initiator: Initiator


class Network(BrowserRecord):
    coverage_started_at: str
    prior_activity_available: bool
    observed: int
    excluded_disallowed_origin: int
    dropped: int
    requests: list[NetworkRequest]


class ConsoleEvent(BrowserRecord):
    source: Literal["console-api", "log", "exception"]
    level: str
    text: str | None
    argument_types: list[str]
    timestamp: float | None
    url: str | None
    line: int | None
    column: int | None


class Console(BrowserRecord):
    text_capture: Literal["included", "not_requested"]
    replayed_prior_messages: bool
    observed: int
    dropped: int
    events: list[ConsoleEvent]


class Storage(BrowserRecord):
    origin: str
    keys_captured: bool
    local_storage_keys: list[str]
    session_storage_keys: list[str]
    cookie_names: list[str]
    indexed_db_names: list[str]
    cache_names: list[str]
    usage_bytes: float | None
    quota_bytes: float | None
    values_redacted: bool


class Inspection(BrowserRecord):
    schema_version: Literal[1]
    browser: BrowserVersion
    target: BrowserTarget
    allowed_origins: list[str]
    capture_window: CaptureWindow
    completeness: Completeness
    frames: list[Frame]
    dom: Dom
    forms: list[Form]
    scripts: Scripts
    resources: list[Resource]
    network: Network
    console: Console
    storage: Storage
    limitations: list[str]


# -- WebMCP ----------------------------------------------------------------------------------------


class SchemaSummary(BrowserRecord):
    bytes: int
    depth: int
    nodes: int
    status: Literal["within_limits", "exceeds_limits", "absent"]
    exceeded: list[str]


class WebMcpAnnotations(BrowserRecord):
    read_only: bool | None
    untrusted_content: bool | None
    consequential: bool | None
    autosubmit: bool | None


class SourceLocation(BrowserRecord):
    url: str
    line: int | None
    column: int | None


class WebMcpTool(BrowserRecord):
    tool_key: str
    name: str
    description: str
    frame_id: str
    frame_url: str | None
    owner_origin: str | None
    declaration_kind: Literal["declarative", "imperative"]
    backend_node_id: int | None
    input_schema: Any
    input_schema_sha256: str | None
    schema_summary: SchemaSummary
    annotations: WebMcpAnnotations
    registration_source: SourceLocation | None
    trust: Literal["page-declared-untrusted"]


class RemovedTool(BrowserRecord):
    name: str
    frame_id: str


class WebMcpTools(BrowserRecord):
    total: int
    items: list[WebMcpTool]


class WebMcpDiscovery(BrowserRecord):
    schema_version: Literal[1]
    browser: BrowserVersion
    target: TargetRef
    allowed_origins: list[str]
    status: Literal["available", "unavailable"]
    source: str
    observation_ms: int
    tools: WebMcpTools
    removed: list[RemovedTool]
    excluded_disallowed_origin: int
    completeness: Completeness
    limitations: list[str]


# -- screenshots -----------------------------------------------------------------------------------


class PngArtifact(BrowserRecord):
    """A PNG carried inline and verified by its digest and size."""

    sha256: str
    bytes: int
    media_type: Literal["image/png"]
    width: int
    height: int
    data_base64: str


class Screenshot(BrowserRecord):
    schema_version: Literal[1]
    browser: BrowserVersion
    target: TargetRef
    captured_at: str
    clip: Literal["viewport"]
    artifact: PngArtifact
    limitations: list[str]


# -- scenarios -------------------------------------------------------------------------------------


class TextArtifact(BrowserRecord):
    """Text (secrets redacted) with the digest and size of all of it; ``text`` is a prefix when truncated."""

    sha256: str
    bytes: int
    truncated: bool
    text: str


class StorageValue(BrowserRecord):
    name: str
    value_state: Literal["hashed", "redacted-secret"]
    value_sha256: str | None


class StorageSnapshot(BrowserRecord):
    origin: str | None
    cookies: list[StorageValue]
    local_storage: list[StorageValue]
    session_storage: list[StorageValue]


class NotRequested(BrowserRecord, tag_field="state", tag="not_requested"):
    pass


class Missing(BrowserRecord, tag_field="state", tag="missing"):
    reason: str


class UrlCaptured(BrowserRecord, tag_field="state", tag="captured"):
    value: SanitizedUrl


class TextCaptured(BrowserRecord, tag_field="state", tag="captured"):
    value: TextArtifact


class PngCaptured(BrowserRecord, tag_field="state", tag="captured"):
    value: PngArtifact


class StorageCaptured(BrowserRecord, tag_field="state", tag="captured"):
    value: StorageSnapshot


class StepArtifacts(BrowserRecord):
    url: UrlCaptured | NotRequested | Missing
    title: TextCaptured | NotRequested | Missing
    dom: TextCaptured | NotRequested | Missing
    screenshot: PngCaptured | NotRequested | Missing
    storage: StorageCaptured | NotRequested | Missing


class ScenarioStep(BrowserRecord):
    step_index: int
    step_id: str
    action: str
    status: Literal["completed", "failed", "cancelled", "skipped"]
    error: str | None
    elapsed_ms: int
    before_url: SanitizedUrl | None
    after_url: SanitizedUrl | None
    event_sequence_start: int
    event_sequence_end: int
    artifacts: StepArtifacts
    completeness: Completeness


class ScenarioEvent(BrowserRecord):
    sequence: int
    step_index: int
    kind: Literal[
        "console",
        "page-error",
        "request",
        "response",
        "request-failed",
        "request-blocked",
        "request-replayed",
        "request-uncontained",
        "frame-navigated",
        "frame-attached",
        "frame-detached",
    ]
    url: SanitizedUrl | None
    level: str | None
    text: str | None
    method: str | None
    resource_type: str | None
    status: int | None
    failure: str | None
    frame_id: str | None


class ScenarioEvents(BrowserRecord):
    retained: int
    dropped: int
    items: list[ScenarioEvent]


class ScenarioBrowser(BrowserRecord):
    mode: Literal["launch", "connect"]
    process_ownership: Literal["provider-owned", "external"]
    cleanup: Literal["terminated-owned-process", "disconnected-external", "incomplete"]
    product: str
    version: str
    # The sandbox's isolation record (the kernel's, as JSON): this record does not restate the kernel's schema.
    isolation: JSONObject | None


class ScenarioInfo(BrowserRecord):
    start_origin: str
    allowed_origins: list[str]
    action_count: int
    secret_references: list[str]


class ScenarioCapture(BrowserRecord):
    schema_version: Literal[1]
    browser: ScenarioBrowser
    scenario: ScenarioInfo
    duration_ms: int
    steps: list[ScenarioStep]
    events: ScenarioEvents
    completeness: Completeness
    limitations: list[str]


# -- comparisons -----------------------------------------------------------------------------------

Verdict = Literal["different", "no-difference-found", "inconclusive"]


class SetDiff(BrowserRecord):
    """What one side has and the other lacks (at most 500 rows each), with the full counts."""

    # Rows keyed by the compared identity fields of each kind (a request's method, url and type; a frame's url; a
    # storage key's name): one shape for every set a comparison lists.
    added: list[JSONObject]
    removed: list[JSONObject]
    added_count: int
    removed_count: int
    unchanged_count: int


class ScriptBrief(BrowserRecord):
    url: str
    inline: bool
    sha256: str | None
    length: int | None


class ScriptChange(BrowserRecord):
    """A script at the same URL and position whose content differs."""

    url: str
    ordinal: int
    inline: bool
    before_sha256: str | None
    after_sha256: str | None
    before_length: int | None
    after_length: int | None


class ScriptsDiff(BrowserRecord):
    added: list[ScriptBrief]
    removed: list[ScriptBrief]
    changed: list[ScriptChange]
    changed_count: int
    unchanged_count: int


class TargetDiff(BrowserRecord):
    before_url: str
    after_url: str
    url_changed: bool
    title_changed: bool


class DomDiff(BrowserRecord):
    before_html_sha256: str | None
    after_html_sha256: str | None
    html_changed: bool
    node_count_delta: int


class StorageDiff(BrowserRecord):
    local_storage_keys: SetDiff
    session_storage_keys: SetDiff
    cookie_names: SetDiff
    indexed_db_names: SetDiff
    cache_names: SetDiff


class WebMcpChange(BrowserRecord):
    name: str
    fields: list[str]


class WebMcpDiff(BrowserRecord, omit_defaults=True):
    """Tools by name; not compared (with the reason) when a side has no discovery."""

    compared: bool
    reason: str | None = None
    status: list[str] | None = None
    added: list[str] = []
    removed: list[str] = []
    changed: list[WebMcpChange] = []
    complete: bool = True


class PassiveComparison(BrowserRecord):
    family: Literal["passive"]
    target: TargetDiff
    scripts: ScriptsDiff
    network: SetDiff
    resources: SetDiff
    frames: SetDiff
    console: SetDiff
    dom: DomDiff
    forms: SetDiff
    storage: StorageDiff
    webmcp: WebMcpDiff
    equality_eligible: bool
    verdict: Verdict


class Normalization(BrowserRecord):
    # The caller's rules as given (its document, its key order kept).
    rules: list[JSONObject]
    # Replacements made per rule id.
    applied: dict[str, int]


class Alignment(BrowserRecord):
    aligned: list[str]
    only_before: list[str]
    only_after: list[str]
    order_matches: bool


class EventsDiff(BrowserRecord):
    requests: SetDiff
    console: SetDiff
    page_errors: SetDiff


class ArtifactDifference(BrowserRecord):
    """One artifact of an aligned step that differs: a URL, a digest, a state or a value."""

    artifact: str
    # A URL, or an object for the other kinds: a step's {action, status}, an artifact's {state} or {digest}, a
    # storage listing. msgspec holds no union of untagged Structs, and the listing is the capture's own JSON.
    before: str | JSONObject | None
    after: str | JSONObject | None


class StepComparison(BrowserRecord):
    step_id: str
    before_index: int
    after_index: int
    differences: list[ArtifactDifference]
    events: EventsDiff
    changed: bool


class ScenarioComparison(BrowserRecord):
    family: Literal["scenario"]
    normalization: Normalization
    alignment: Alignment
    steps: list[StepComparison]
    # Asynchronous activity (polling, late responses) can land in a neighbouring step: the whole-run view.
    events: EventsDiff
    equality_eligible: bool
    verdict: Verdict


class ImageSide(BrowserRecord):
    sha256: str
    width: int
    height: int


class Channels(BrowserRecord):
    r: float
    g: float
    b: float
    a: float


class Bounds(BrowserRecord):
    x: int
    y: int
    width: int
    height: int


class ScreenshotComparison(BrowserRecord):
    """Pixel differences above the channel threshold; the pixel fields are null when the sizes differ."""

    before: ImageSide
    after: ImageSide
    identical_bytes: bool
    dimensions_match: bool
    channel_threshold: int
    total_pixels: int | None
    changed_pixels: int | None
    changed_ratio: float | None
    max_channel_delta: Channels | None
    mean_channel_delta: Channels | None
    changed_bounds: Bounds | None


def to_json(record: msgspec.Struct) -> JSONObject:
    """A record as JSON builtins, where JSON is wanted: an error's details, a tool's example arguments."""
    out: JSONObject = msgspec.to_builtins(record)
    return out


def json_schema(*types: Any) -> tuple[list[JSONObject], JSONObject]:
    """Schemas of ``types`` with shared ``$defs`` (local references only)."""
    roots, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    return list(roots), components
