"""Browser targets: listing them, choosing one within the request's origins, and attaching a session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from rea.plugin import CallContext, ReaError, devtools
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.model import BrowserTarget, BrowserVersion, Excluded, TargetList
from rea_plugins.cdp.urls import origin_of


def version(info: dict[str, Any]) -> BrowserVersion:
    return BrowserVersion(**cdp.version_record(info))


def _target(info: dict[str, Any]) -> BrowserTarget:
    url = str(info.get("url", ""))
    return BrowserTarget(
        target_id=str(info.get("targetId", "")),
        type=str(info.get("type", "")),
        title=str(info.get("title", "")),
        url=url,
        origin=origin_of(url),
        attached=bool(info.get("attached", False)),
    )


def target_infos(conn: cdp.Connection, ctx: CallContext | None) -> list[dict[str, Any]]:
    infos = conn.call("Target.getTargets", ctx=ctx).get("targetInfos")
    if not isinstance(infos, list):
        raise ReaError(
            "unreadable_output",
            "the browser's target list is not a list",
            details={"reason": "protocol_violation", "method": "Target.getTargets"},
        )
    return [i for i in infos if isinstance(i, dict)]


def list_targets(
    conn: cdp.Connection, info: dict[str, Any], origins: list[str], offset: int, limit: int, ctx: CallContext | None
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


def _unavailable(message: str, reason: str, target_id: str, **details: Any) -> ReaError:
    return ReaError(
        "target_unavailable",
        message,
        remediation="Call list_browser_targets and pass a page target_id on an allowed origin.",
        details={"reason": reason, "target_id": target_id, **details},
    )


def page_target(
    conn: cdp.Connection, target_id: str, origins: list[str], ctx: CallContext | None
) -> tuple[BrowserTarget, list[str]]:
    """The page ``target_id`` names and the origins in scope (default: the page's own origin)."""
    match = next((t for t in target_infos(conn, ctx) if t.get("targetId") == target_id), None)
    if match is None:
        raise _unavailable(f"no browser target {target_id!r} on this endpoint", "not_found", target_id)
    target = _target(match)
    if target.type != "page":
        raise _unavailable(f"target {target_id} is a {target.type}, not a page", "not_a_page", target_id)
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


def unavailable_file_page(message: str, reason: str, target_id: str, **details: Any) -> ReaError:
    return ReaError(
        "target_unavailable",
        message,
        remediation="Call list_electron_targets and pass a target_id it lists.",
        details={"reason": reason, "target_id": target_id, **details},
    )


def file_page_target(conn: cdp.Connection, target_id: str, roots: list[str], ctx: CallContext | None) -> BrowserTarget:
    """The page ``target_id`` names, which must show a file inside ``roots``."""
    match = next((t for t in target_infos(conn, ctx) if t.get("targetId") == target_id), None)
    if match is None:
        raise unavailable_file_page(f"no browser target {target_id!r} on this endpoint", "not_found", target_id)
    target = _target(match)
    if target.type != "page":
        raise unavailable_file_page(f"target {target_id} is a {target.type}, not a page", "not_a_page", target_id)
    path = devtools.file_path(target.url)
    if path is None:
        raise unavailable_file_page(f"target {target_id} is not a file:// page", "unsupported_url", target_id)
    if not devtools.inside(path, roots):
        raise unavailable_file_page(
            f"target {target_id} shows a file outside allowed_file_roots", "not_allowed", target_id
        )
    return target
