"""The Chrome DevTools Protocol connection: HTTP discovery and one browser-level WebSocket with flattened target
sessions, over the kernel's DevTools session (``rea.devtools``, shared with the V8 inspector tools)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from rea.plugin import DEFAULT_TIMEOUT_S
from rea.plugin import HTTP_TIMEOUT_S
from rea.plugin import MAX_HTTP_BYTES
from rea.plugin import MAX_MESSAGE_BYTES
from rea.plugin import POLL_S
from rea.plugin import CallContext
from rea.plugin import CommandFailed
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Subscriber
from rea.plugin import arr
from rea.plugin import devtools
from rea.plugin import obj
from rea.plugin import wait

__all__ = [
    "BROWSER",
    "DEFAULT_TIMEOUT_S",
    "HTTP_TIMEOUT_S",
    "MAX_HTTP_BYTES",
    "MAX_MESSAGE_BYTES",
    "POLL_S",
    "CommandFailed",
    "Connection",
    "Subscriber",
    "arr",
    "as_int",
    "browser_version",
    "http_json",
    "obj",
    "opened",
    "wait",
]

BROWSER = devtools.Peer(
    noun="the browser",
    endpoint_kind="Chrome DevTools",
    reachable="Start the browser with --remote-debugging-port on 127.0.0.1 and pass that endpoint, or let "
    "capture_browser_scenario launch one (browser.mode launch).",
    check="Check that the endpoint is a Chromium-family DevTools endpoint.",
    gone="The browser or its page went away; check that it is still running and retry.",
    thread="rea-cdp-reader",
)


def http_json(endpoint: str, path: str, ctx: CallContext | None = None) -> Any:
    """GET ``endpoint + path`` (loopback only: the endpoint was validated) and decode its JSON."""
    return devtools.http_json(BROWSER, endpoint, path, ctx)


def browser_version(endpoint: str, ctx: CallContext | None = None) -> JSONObject:
    """``/json/version``: the browser's identity and its browser-level socket (the browser's JSON, read key by key
    with type checks)."""
    info = http_json(endpoint, "/json/version", ctx)
    if not isinstance(info, dict) or not isinstance(info.get("webSocketDebuggerUrl"), str):
        raise devtools.protocol_violation(BROWSER, "/json/version has no webSocketDebuggerUrl", endpoint=endpoint)
    return info


def as_int(value: JSONValue) -> int:
    """``int(value)`` of a number in the browser's JSON, typed: a number, a bool or a string as ``int`` reads them,
    and the TypeError ``int`` raises for anything else."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"int() argument must be a number or a string, not {type(value).__name__}")


class Connection(devtools.Connection):
    """The browser-level DevTools socket; targets are reached through flattened sessions on it."""

    @classmethod
    def open(cls, endpoint: str, ctx: CallContext | None = None, info: JSONObject | None = None) -> Connection:
        """Connect to the browser-level socket of a validated loopback endpoint."""
        info = info or browser_version(endpoint, ctx)
        return cls.connect(endpoint, str(info["webSocketDebuggerUrl"]), BROWSER)


@contextlib.contextmanager
def opened(endpoint: str, ctx: CallContext | None = None, info: JSONObject | None = None) -> Iterator[Connection]:
    conn = Connection.open(endpoint, ctx, info)
    try:
        yield conn
    finally:
        conn.close()
