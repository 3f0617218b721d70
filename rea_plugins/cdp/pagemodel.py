"""The results of the page tools that read scripts and captures: listeners, module imports, source locations,
script exports and network captures (each tool's output schema comes from these)."""

from __future__ import annotations

from typing import Literal

from rea_plugins.cdp.model import BrowserRecord
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.model import NetworkRequest


class OriginalLocation(BrowserRecord):
    """A generated position's original, through the script's source map (1-based line and column)."""

    source: str
    line: int
    column: int
    name: str | None
    map_url: str
    # The original line's text, from the map's sourcesContent (240 characters at most).
    source_line: str | None


class Page(BrowserRecord):
    total: int
    offset: int
    limit: int
    next_offset: int | None


def page_of(total: int, offset: int, limit: int) -> Page:
    end = offset + limit
    return Page(total=total, offset=offset, limit=limit, next_offset=end if end < total else None)


# -- inspect_web_event_listeners ----------------------------------------------------------------------------------


class ListenerNode(BrowserRecord):
    backend_node_id: int
    node_name: str
    id: str | None
    classes: list[str]


class EventListener(BrowserRecord):
    type: str
    use_capture: bool
    passive: bool
    once: bool
    # The node it is registered on (None: the document's own listeners come with its node too).
    node: ListenerNode | None
    script_url: str | None
    script_id: str
    # 1-based position of the handler in the generated script.
    line: int
    column: int
    original: OriginalLocation | None = None


class ListenerInventory(BrowserRecord):
    """inspect_web_event_listeners: the listeners on the document tree (or the selected nodes), paged."""

    schema_version: int
    target: BrowserTarget
    allowed_origins: list[str]
    selectors: list[str]
    nodes_matched: int
    page: Page
    by_type: dict[str, int]
    # Listeners whose handler lies in a script outside allowed_origins (or in no named script): counted only.
    excluded_outside_origins: int
    listeners: list[EventListener]
    limitations: list[str]


# -- trace_web_module_imports ---------------------------------------------------------------------------------------

ImportKind = Literal["import", "re-export", "dynamic-import"]
ImportTarget = Literal["loaded", "not-loaded", "bare", "outside-origins", "unsupported"]


class ModuleImport(BrowserRecord):
    kind: ImportKind
    specifier: str
    line: int
    resolved_url: str | None
    target: ImportTarget


class WebModule(BrowserRecord):
    url: str
    script_id: str
    is_module: bool
    sha256: str | None
    imports: list[ModuleImport]
    # Module scripts of the page importing this one, by URL.
    imported_by: list[str]


class ImportCounts(BrowserRecord):
    modules: int
    classic_scripts_with_imports: int
    edges: int
    loaded: int
    not_loaded: int
    bare: int
    outside_origins: int


class ModuleGraph(BrowserRecord):
    """trace_web_module_imports: the page's ES module graph from the scripts it parsed and their static specifiers."""

    schema_version: int
    target: BrowserTarget
    allowed_origins: list[str]
    counts: ImportCounts
    page: Page
    modules: list[WebModule]
    limitations: list[str]


# -- trace_web_source_location --------------------------------------------------------------------------------------


class GeneratedLocation(BrowserRecord):
    script_url: str
    script_id: str
    line: int
    column: int
    sha256: str | None


class SourceTrace(BrowserRecord):
    """trace_web_source_location: a generated page location and its original through the script's source map."""

    schema_version: int
    target: BrowserTarget
    generated: GeneratedLocation
    status: Literal["mapped", "unmapped"]
    original: OriginalLocation | None
    reason: str | None


# -- export_web_scripts ---------------------------------------------------------------------------------------------


class ExportedScript(BrowserRecord):
    url: str
    script_id: str
    inline: bool
    is_module: bool
    # Relative to output_directory.
    path: str
    sha256: str
    bytes: int


class ScriptExport(BrowserRecord):
    """export_web_scripts: the page's script sources written to a fresh directory rea chose, each with its hash."""

    schema_version: int
    target: BrowserTarget
    allowed_origins: list[str]
    output_directory: str
    written: int
    total_bytes: int
    skipped: int
    page: Page
    files: list[ExportedScript]
    limitations: list[str]


# -- inspect_web_network_capture ------------------------------------------------------------------------------------


class CaptureSource(BrowserRecord):
    format: Literal["har"]
    path: str
    sha256: str
    bytes: int
    creator: str | None


class NetworkCapture(BrowserRecord):
    """inspect_web_network_capture: a recorded capture as the request records the passive tools use, paged."""

    schema_version: int
    source: CaptureSource
    allowed_origins: list[str]
    entries: int
    excluded_disallowed_origin: int
    # Values removed: URL userinfo and query values under secret-looking names; header values are never read.
    redacted_values: int
    page: Page
    requests: list[NetworkRequest]
    header_names: list[str]
    limitations: list[str]
