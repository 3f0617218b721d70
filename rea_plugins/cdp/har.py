"""inspect_web_network_capture: a recorded HTTP capture (a HAR file) as the request records inspect_web_page gives.

Each entry becomes a ``NetworkRequest``: method, URL (userinfo removed, query values under secret-looking names
replaced), origin, resource type, status, MIME type, transfer size, failure and initiator. Header and cookie values
and bodies are never read into the result; the request header names are listed. mitmproxy's flow files need
mitmproxy's own reader, which is not a dependency of rea: without it such a file is refused with that reason.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import urllib.parse

import msgspec

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import origin_of
from rea.plugin import read_regular
from rea_plugins.cdp.model import Initiator
from rea_plugins.cdp.model import NetworkRequest
from rea_plugins.cdp.pagemodel import CaptureSource
from rea_plugins.cdp.pagemodel import NetworkCapture
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.urls import sanitize

SCHEMA_VERSION = 1
MAX_CAPTURE_BYTES = 256 << 20
MAX_HEADER_NAMES = 200
REDACTED = "[REDACTED]"
# Query parameter names whose values are credentials more often than data.
SECRET_NAME = re.compile(r"(token|secret|passw|pwd|auth|session|sig|key|credential|jwt|bearer|code|cookie)", re.I)


class _NameValue(msgspec.Struct):
    name: str = ""


class _Content(msgspec.Struct):
    mimeType: str | None = None
    size: int | None = None


class _Request(msgspec.Struct):
    method: str = "GET"
    url: str = ""
    headers: list[_NameValue] = []


class _Response(msgspec.Struct, rename={"transfer_size": "_transferSize", "error": "_error"}):
    status: int = 0
    content: _Content = msgspec.field(default_factory=_Content)
    bodySize: int | None = None
    headersSize: int | None = None
    transfer_size: int | None = None
    error: str | None = None


class _Initiator(msgspec.Struct):
    type: str = "other"
    url: str | None = None
    lineNumber: int | None = None
    columnNumber: int | None = None


class _Entry(msgspec.Struct, rename={"resource_type": "_resourceType", "initiator": "_initiator"}):
    request: _Request = msgspec.field(default_factory=_Request)
    response: _Response = msgspec.field(default_factory=_Response)
    resource_type: str | None = None
    initiator: _Initiator | None = None


class _Creator(msgspec.Struct):
    name: str = ""
    version: str = ""


class _Log(msgspec.Struct):
    entries: list[_Entry]
    creator: _Creator | None = None


class _Har(msgspec.Struct):
    log: _Log


def _unreadable(path: str, why: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{path} is not a HAR capture: {why}",
        remediation="Pass a HAR 1.2 file (DevTools' Network panel: Save all as HAR, or a proxy's HAR export).",
        details={"path": path, "reason": "not_har"},
    )


def redact_url(url: str) -> tuple[str, int]:
    """The URL with userinfo removed and secret-looking query values replaced, and how many values were removed."""
    clean = sanitize(url)
    removed = 1 if clean.redacted else 0
    try:
        parts = urllib.parse.urlsplit(clean.url)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return clean.url, removed
    if not any(SECRET_NAME.search(name) and value for name, value in pairs):
        return clean.url, removed
    kept = []
    for name, value in pairs:
        if SECRET_NAME.search(name) and value:
            removed += 1
            value = REDACTED
        kept.append((name, value))
    query = urllib.parse.urlencode(kept, safe="[]")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)), removed


def _size(response: _Response) -> int | None:
    if response.transfer_size is not None and response.transfer_size >= 0:
        return response.transfer_size
    if response.bodySize is not None and response.bodySize >= 0:
        return response.bodySize + max(response.headersSize or 0, 0)
    return None


def read_capture(path: str, origins: list[str], offset: int, limit: int, ctx: CallContext) -> NetworkCapture:
    data = read_regular(path, MAX_CAPTURE_BYTES, what="network capture", field="path")
    ctx.check("reading the capture")
    head = data[:64].lstrip()
    if not head.startswith(b"{"):
        if importlib.util.find_spec("mitmproxy") is None:
            raise ReaError(
                "capability_unavailable",
                f"{path} is not a HAR file, and mitmproxy's flow reader is not installed",
                remediation="Export the capture as HAR (mitmproxy: `mitmdump -nr FLOWS --set hardump=out.har`), "
                "or install mitmproxy beside rea to read flow files.",
                details={"path": path, "reason": "mitmproxy_missing"},
            )
        raise _unreadable(path, "flow files are read as HAR exports only (mitmdump --set hardump=...)")
    try:
        har = msgspec.json.decode(data, type=_Har)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _unreadable(path, str(exc)[:200]) from None
    requests: list[NetworkRequest] = []
    names: set[str] = set()
    excluded = redacted = 0
    for index, entry in enumerate(har.log.entries):
        if index % 1000 == 0:
            ctx.check("reading the capture")
        url, removed = redact_url(entry.request.url)
        origin = origin_of(url)
        if origins and origin not in origins:
            excluded += 1
            continue
        redacted += removed
        names.update(h.name.lower() for h in entry.request.headers if h.name)
        response = entry.response
        failed = response.status == 0
        initiator = entry.initiator or _Initiator()
        requests.append(
            NetworkRequest(
                request_id=f"har-{index}",
                url=url,
                origin=origin,
                method=entry.request.method,
                resource_type=entry.resource_type,
                status=None if failed else response.status,
                mime_type=response.content.mimeType or None,
                encoded_data_length=_size(response),
                failure=(response.error or "no response") if failed else None,
                initiator=Initiator(
                    type=initiator.type,
                    url=redact_url(initiator.url)[0] if initiator.url else None,
                    line=initiator.lineNumber,
                    column=initiator.columnNumber,
                ),
            )
        )
    limitations = ["Header and cookie values and bodies are not read; request header names are listed."]
    header_names = sorted(names)
    if len(header_names) > MAX_HEADER_NAMES:
        limitations.append(f"{len(header_names)} header names; the first {MAX_HEADER_NAMES} listed.")
    creator = har.log.creator
    return NetworkCapture(
        schema_version=SCHEMA_VERSION,
        source=CaptureSource(
            format="har",
            path=path,
            sha256=hashlib.sha256(data).hexdigest(),
            bytes=len(data),
            creator=f"{creator.name} {creator.version}".strip() if creator is not None else None,
        ),
        allowed_origins=origins,
        entries=len(har.log.entries),
        excluded_disallowed_origin=excluded,
        redacted_values=redacted,
        page=page_of(len(requests), offset, limit),
        requests=requests[offset : offset + limit],
        header_names=header_names[:MAX_HEADER_NAMES],
        limitations=limitations,
    )
