"""Browser targets: listing them, choosing one within the request's origins, and attaching a session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import devtools
from rea.plugin import origin_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.model import BrowserTarget
from rea_plugins.cdp.model import BrowserVersion
from rea_plugins.cdp.model import Excluded
from rea_plugins.cdp.model import TargetList


def _text(info: JSONObject, key: str) -> str:
    value = info.get(key)
    return value if isinstance(value, str) else ""


def version(info: JSONObject) -> BrowserVersion:
    """The browser's identity from its ``/json/version`` JSON."""
    return BrowserVersion(
        product=_text(info, "Browser"),
        protocol_version=_text(info, "Protocol-Version"),
        revision=_text(info, "WebKit-Version"),
        user_agent=_text(info, "User-Agent"),
        js_version=_text(info, "V8-Version"),
    )


def _target(info: JSONObject) -> BrowserTarget:
    url = str(info.get("url", ""))
    return BrowserTarget(
        target_id=str(info.get("targetId", "")),
        type=str(info.get("type", "")),
        title=str(info.get("title", "")),
        url=url,
        origin=origin_of(url),
        attached=bool(info.get("attached", False)),
    )


def target_infos(conn: cdp.Connection, ctx: CallContext | None) -> list[JSONObject]:
    """``Target.getTargets``' entries: the browser's JSON, read key by key by ``_target``."""
    infos = conn.call("Target.getTargets", ctx=ctx).get("targetInfos")
    if not isinstance(infos, list):
        raise ReaError(
            "unreadable_output",
            "the browser's target list is not a list",
            details={"reason": "protocol_violation", "method": "Target.getTargets"},
        )
    return [i for i in infos if isinstance(i, dict)]


def list_targets(
    conn: cdp.Connection, info: JSONObject, origins: list[str], offset: int, limit: int, ctx: CallContext | None
) -> TargetList:
    """Page targets on http(s) origins (within ``origins`` when given), sorted by target id."""
    kept: list[BrowserTarget] = []
    disallowed = unsupported = non_page = 0
    for raw in target_infos(conn, ctx):
        target = _target(raw)
        if target.type != "page":
            non_page += 1
        elif target.origin is None:
            unsupported += 1
        elif origins and target.origin not in origins:
            disallowed += 1
        else:
            kept.append(target)
    kept.sort(key=lambda t: t.target_id)
    limitations = []
    if unsupported:
        limitations.append(
            f"{unsupported} page targets are not on an http(s) origin (about:, chrome:, file:, ...) and are not listed."
        )
    return TargetList(
        schema_version=1,
        browser=version(info),
        endpoint=conn.endpoint,
        allowed_origins=origins,
        total=len(kept),
        offset=offset,
        targets=kept[offset : offset + limit],
        excluded=Excluded(disallowed_origin=disallowed, unsupported_url=unsupported, non_page=non_page),
        limitations=limitations,
    )


_PAGE_REMEDIATION = "Call list_browser_targets and pass a page target_id on an allowed origin."
_FILE_PAGE_REMEDIATION = "Call list_electron_targets and pass a target_id it lists."


def _unavailable(
    message: str, reason: str, target_id: str, remediation: str = _PAGE_REMEDIATION, **details: Any
) -> ReaError:
    return ReaError(
        "target_unavailable",
        message,
        remediation=remediation,
        details={"reason": reason, "target_id": target_id, **details},
    )


def _page(conn: cdp.Connection, target_id: str, ctx: CallContext | None, remediation: str) -> BrowserTarget:
    """The page target ``target_id`` names (an unavailable target, with ``remediation``, when it is none)."""
    match = next((t for t in target_infos(conn, ctx) if t.get("targetId") == target_id), None)
    if match is None:
        raise _unavailable(f"no browser target {target_id!r} on this endpoint", "not_found", target_id, remediation)
    target = _target(match)
    if target.type != "page":
        raise _unavailable(f"target {target_id} is a {target.type}, not a page", "not_a_page", target_id, remediation)
    return target


def page_target(
    conn: cdp.Connection, target_id: str, origins: list[str], ctx: CallContext | None
) -> tuple[BrowserTarget, list[str]]:
    """The page ``target_id`` names and the origins in scope (default: the page's own origin)."""
    target = _page(conn, target_id, ctx, _PAGE_REMEDIATION)
    if target.origin is None:
        raise _unavailable(f"target {target_id} is not on an http(s) origin", "unsupported_url", target_id)
    scope = origins or [target.origin]
    if target.origin not in scope:
        raise _unavailable(
            f"target {target_id} is on {target.origin}, outside allowed_origins",
            "not_allowed",
            target_id,
            origin=target.origin,
            allowed_origins=scope,
        )
    return target, scope


def attach(conn: cdp.Connection, target_id: str, ctx: CallContext | None) -> str:
    """A flattened session on the target (its commands and events carry the session id)."""
    try:
        reply = conn.call("Target.attachToTarget", {"targetId": target_id, "flatten": True}, ctx=ctx)
    except cdp.CommandFailed:
        raise _unavailable(
            f"cannot attach to target {target_id} (it may have closed)", "attach_failed", target_id
        ) from None
    session = reply.get("sessionId")
    if not isinstance(session, str):
        raise ReaError(
            "unreadable_output",
            "Target.attachToTarget returned no session",
            details={"reason": "protocol_violation", "method": "Target.attachToTarget"},
        )
    return session


@contextlib.contextmanager
def attached(conn: cdp.Connection, target_id: str, ctx: CallContext | None) -> Iterator[str]:
    session = attach(conn, target_id, ctx)
    try:
        yield session
    finally:
        if conn.closed is None:
            conn.send("Target.detachFromTarget", {"sessionId": session})


# -- file:// pages (Electron renderers and local pages, confined to allowed_file_roots) ---------------------------


def file_page_target(conn: cdp.Connection, target_id: str, roots: list[str], ctx: CallContext | None) -> BrowserTarget:
    """The page ``target_id`` names, which must show a file inside ``roots``."""
    target = _page(conn, target_id, ctx, _FILE_PAGE_REMEDIATION)
    path = devtools.file_path(target.url)
    if path is None:
        raise _unavailable(
            f"target {target_id} is not a file:// page", "unsupported_url", target_id, _FILE_PAGE_REMEDIATION
        )
    if not devtools.inside(path, roots):
        raise _unavailable(
            f"target {target_id} shows a file outside allowed_file_roots",
            "not_allowed",
            target_id,
            _FILE_PAGE_REMEDIATION,
        )
    return target
