"""analyze_web_bundle: a page's captured scripts (and the source maps they name) into the JavaScript application
graph, with its chunks and endpoint candidates.

The scripts are written where their URLs put them (``<host_port>/<path>``, inline scripts beside their page) in a
fresh ``rea-extract-web-bundle-*`` directory, so a relative ``sourceMappingURL`` finds the map written beside its
script; then analyze_javascript_application reads that directory, called through the kernel's tool invocation (the
browser plugin never imports the JavaScript one).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import Any

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import as_object
from rea.plugin import invoke
from rea.plugin import leftovers
from rea.plugin import retained_reference
from rea_plugins.cdp.model import BrowserRecord
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.pageexport import staging
from rea_plugins.cdp.pagemodel import Page
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.pagescripts import PageScript
from rea_plugins.cdp.pagescripts import PageSession
from rea_plugins.cdp.pagescripts import in_scope
from rea_plugins.cdp.pagescripts import map_bytes
from rea_plugins.cdp.pagescripts import read_source

SCHEMA_VERSION = 1
PREFIX = leftovers.EXTRACT_PREFIX + "web-bundle-"
STATIC_TOOL = "analyze_javascript_application"
MAX_ENDPOINTS = 100
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A string that reads as an endpoint: an http(s) URL, or an absolute path with a word in it (not a bare "/").
_ENDPOINT = re.compile(r"^(https?://[^\s\"'<>]+|/[A-Za-z0-9_~.-]+(/[A-Za-z0-9_~.:{}$-]*)*(\?[^\s\"'<>]*)?)$")


class Chunk(BrowserRecord):
    """A captured script as the application graph reads it."""

    url: str
    module: str
    kind: str
    bundled_modules: int
    source_map: bool
    original_sources: int


class EndpointCandidate(BrowserRecord):
    value: str
    module: str
    line: int


class WebBundleAnalysis(BrowserRecord):
    """analyze_web_bundle: the page's scripts as an application graph (retained), its chunks and endpoints."""

    schema_version: int
    target: BrowserTarget
    allowed_origins: list[str]
    output_directory: str
    scripts_written: int
    maps_written: int
    application_evidence_id: str
    counts: dict[str, int]
    page: Page
    chunks: list[Chunk]
    endpoint_candidates: list[EndpointCandidate]
    endpoint_candidates_total: int
    limitations: list[str]


def _segment(text: str) -> str:
    return _SAFE.sub("_", text)[:100].strip(".") or "_"


def _relative(url: str) -> str:
    """Where a URL's file is written: ``host_port/segments``, every segment made safe (no ``..``, no empty)."""
    parts = urllib.parse.urlsplit(url)
    host = _segment(parts.netloc or parts.scheme)
    segments = [_segment(s) for s in parts.path.split("/") if s not in ("", ".", "..")] or ["index.html"]
    return "/".join([host, *segments])


def _write(root: str, rel: str, data: bytes) -> bool:
    path = os.path.join(root, *rel.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return False  # two scripts at one URL (a reload): the first is kept
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return True


def _capture(page: PageSession, root: str, max_bytes: int, ctx: CallContext) -> tuple[dict[str, str], int, list[str]]:
    """Write the in-scope scripts and their maps under ``root``: {relative path: URL}, maps written, limitations."""
    scripts, anonymous, outside = in_scope(page)
    written: dict[str, str] = {}
    maps = 0
    total = 0
    limitations: list[str] = []
    for i, script in enumerate(scripts):
        ctx.progress("capturing scripts", done=i, total=len(scripts))
        source = read_source(page, script, ctx)
        if source is None:
            continue
        data = source.encode("utf-8", "surrogatepass")
        if total + len(data) > max_bytes:
            limitations.append(f"Scripts past max_total_bytes ({max_bytes}) were not captured.")
            break
        rel = _relative(script.url)
        if script.inline:
            rel = f"{rel}.inline-{script.start_line + 1}-{script.start_column + 1}.js"
        if _write(root, rel, data):
            total += len(data)
            written[rel] = script.url
            maps += _capture_map(page, script, root, rel, ctx)
    if anonymous or outside:
        limitations.append(f"{anonymous} unnamed scripts and {outside} outside allowed_origins were not captured.")
    return written, maps, limitations


def _capture_map(page: PageSession, script: PageScript, root: str, rel: str, ctx: CallContext) -> int:
    """Write the script's external source map where its relative URL points (inline maps travel in the script)."""
    raw = script.source_map_url
    if raw is None or raw.startswith("data:") or "://" in raw or raw.startswith("/"):
        return 0
    data = map_bytes(page, script, ctx)
    if data is None:
        return 0
    target = os.path.normpath(os.path.join(os.path.dirname(rel), urllib.parse.urlsplit(raw).path))
    if target.startswith("..") or os.path.isabs(target):
        return 0
    return 1 if _write(root, target.replace(os.sep, "/"), data) else 0


def _get(value: Any, key: str) -> Any:
    obj = as_object(value)
    return obj.get(key) if isinstance(obj, dict) else None


def analyze(
    call: ToolCall, page: PageSession, max_total_bytes: int, offset: int, limit: int
) -> tuple[WebBundleAnalysis, str]:
    ctx = call.ctx
    tool = call.session.registry.tools.get(STATIC_TOOL)
    if tool is None:
        raise ReaError(
            "capability_unavailable",
            f"{STATIC_TOOL} is not loaded, so the captured scripts cannot be analyzed",
            remediation="Enable the javascript plugin, or use export_web_scripts and analyze the directory later.",
            details={"tool": STATIC_TOOL},
        )
    with staging(PREFIX, "the captured scripts") as root:
        written, maps, limitations = _capture(page, root, max_total_bytes, ctx)
        summary = invoke(call.session, tool, {"input_path": root, "format": "directory"}, ctx).evidence
        if summary is None:
            raise ReaError("execution_failure", f"{STATIC_TOOL} recorded no Evidence", details={"tool": STATIC_TOOL})
        complete_id = _get(summary.normalized_result, "complete_evidence_id")
        complete = (
            call.session.resolve_evidence(retained_reference(complete_id), "application")
            if isinstance(complete_id, str)
            else summary
        )
    graph = complete.normalized_result
    modules = [as_object(m) for m in _get(graph, "modules") or []]
    maps_by_generated: dict[str, int] = {}
    for smap in _get(graph, "source_maps") or []:
        s = as_object(smap)
        if isinstance(s.get("generated"), str):
            maps_by_generated[s["generated"]] = len(s.get("sources") or [])
    chunks = [
        Chunk(
            url=written.get(str(m["path"]), str(m["path"])),
            module=str(m["node_id"]),
            kind=str(m["kind"]),
            bundled_modules=len(m.get("bundled_modules") or []),
            source_map=str(m["node_id"]) in maps_by_generated,
            original_sources=maps_by_generated.get(str(m["node_id"]), 0),
        )
        for m in modules
        if m.get("container") is None
    ]
    chunks.sort(key=lambda c: c.url)
    endpoints: dict[str, EndpointCandidate] = {}
    for m in modules:
        strings = as_object(m.get("strings"))
        for item in (strings.get("items") or []) if isinstance(strings, dict) else []:
            literal = as_object(item)
            value = str(literal.get("value", ""))
            if value not in endpoints and _ENDPOINT.match(value) and not value.endswith((".js", ".css", ".map")):
                endpoints[value] = EndpointCandidate(value=value, module=str(m["node_id"]), line=int(literal["line"]))
    counts = _get(graph, "counts")
    ordered = sorted(endpoints.values(), key=lambda e: (e.value, e.module))
    result = WebBundleAnalysis(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        allowed_origins=page.scope,
        output_directory=root,
        scripts_written=len(written),
        maps_written=maps,
        application_evidence_id=complete.evidence_id,
        counts={str(k): int(v) for k, v in (counts or {}).items()} if isinstance(counts, dict) else {},
        page=page_of(len(chunks), offset, limit),
        chunks=chunks[offset : offset + limit],
        endpoint_candidates=ordered[:MAX_ENDPOINTS],
        endpoint_candidates_total=len(ordered),
        limitations=limitations,
    )
    return result, complete.evidence_id
