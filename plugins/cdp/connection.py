"""A Chrome DevTools Protocol connection: HTTP discovery and one WebSocket with flattened target sessions.

The WebSocket is the ``websockets`` package's synchronous client. One reader thread owns receiving:
replies wake the caller waiting on that id, events go to subscribers (on the reader thread, so a
subscriber never blocks and never waits for a reply; it may ``send`` without waiting). Every wait polls the
caller's cancellation, and a closed socket fails every pending call at once.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from rea_plugins.cdp.urls import websocket_url

from rea.context import CallContext
from rea.errors import ReaError, cancelled

DEFAULT_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 5.0
# A screenshot or a large DOM arrives in one message; beyond this the message is refused, not buffered.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
POLL_S = 0.05
MAX_HTTP_BYTES = 16 * 1024 * 1024

Subscriber = Callable[[str, dict[str, Any], str | None], None]


def _unreachable(endpoint: str, why: str) -> ReaError:
    return ReaError(
        "provider_unavailable",
        f"no Chrome DevTools endpoint answers at {endpoint} ({why})",
        remediation="Start the browser with --remote-debugging-port on 127.0.0.1 and pass that "
        "endpoint, or let capture_browser_scenario launch one (browser.mode launch).",
        details={"reason": "unreachable", "endpoint": endpoint},
    )


def _protocol_violation(what: str, **details: Any) -> ReaError:
    return ReaError(
        "unreadable_output",
        f"the browser broke the DevTools protocol: {what}",
        remediation="Check that the endpoint is a Chromium-family DevTools endpoint.",
        details={"reason": "protocol_violation", **details},
    )


def http_json(endpoint: str, path: str, ctx: CallContext | None = None) -> Any:
    """GET ``endpoint + path`` (loopback only: the endpoint was validated) and decode its JSON."""
    if ctx is not None:
        ctx.check(path)
    import urllib.error
    import urllib.request

    # No proxy: a loopback endpoint is reached directly whatever the environment says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(endpoint + path, timeout=HTTP_TIMEOUT_S) as reply:
            body = reply.read(MAX_HTTP_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise _unreachable(endpoint, f"HTTP {exc.code} for {path}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _unreachable(endpoint, str(getattr(reason, "strerror", None) or "connection failed")) from None
    if len(body) > MAX_HTTP_BYTES:
        raise _protocol_violation(f"{path} answered more than {MAX_HTTP_BYTES} bytes", endpoint=endpoint)
    try:
        return json.loads(body)
    except ValueError:
        raise _protocol_violation(f"{path} did not answer JSON", endpoint=endpoint) from None


def browser_version(endpoint: str, ctx: CallContext | None = None) -> dict[str, Any]:
    """``/json/version``: the browser's identity and its browser-level socket."""
    info = http_json(endpoint, "/json/version", ctx)
    if not isinstance(info, dict) or not isinstance(info.get("webSocketDebuggerUrl"), str):
        raise _protocol_violation("/json/version has no webSocketDebuggerUrl", endpoint=endpoint)
    return info


def version_record(info: dict[str, Any]) -> dict[str, str]:
    def text(key: str) -> str:
        value = info.get(key)
        return value if isinstance(value, str) else ""

    return {
        "product": text("Browser"),
        "protocol_version": text("Protocol-Version"),
        "revision": text("WebKit-Version"),
        "user_agent": text("User-Agent"),
        "js_version": text("V8-Version"),
    }


def obj(value: Any) -> dict[str, Any]:
    """``value`` when the protocol gave an object, else empty: a browser's omission is not a crash."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class CommandFailed(ReaError):
    """The browser answered a command with a protocol error."""

    def __init__(self, method: str, code: Any, message: str) -> None:
        text = message[:300] if isinstance(message, str) else "error"
        super().__init__(
            "execution_failure",
            f"the browser refused {method}: {text}",
            remediation="Check the page state the request assumes (target, frame, element).",
            details={"method": method, "cdp_code": code if isinstance(code, int) else None, "cdp_message": text},
        )
        self.method = method
        self.cdp_code = code

    @property
    def method_missing(self) -> bool:
        """The browser does not implement the method (an optional or experimental domain)."""
        return self.cdp_code == -32601 or "wasn't found" in self.details["cdp_message"]


class _Pending:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict[str, Any] | None = None


class Connection:
    """One DevTools WebSocket; ``call`` blocks the caller, events go to subscribers."""

    def __init__(self, url: str, endpoint: str) -> None:
        self.url = url
        self.endpoint = endpoint
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._closed: ReaError | None = None
        self._stack = contextlib.ExitStack()
        self._reader: threading.Thread | None = None

    @classmethod
    def open(cls, endpoint: str, ctx: CallContext | None = None, info: dict[str, Any] | None = None) -> Connection:
        """Connect to the browser-level socket of a validated loopback endpoint."""
        from websockets.exceptions import InvalidHandshake, InvalidURI
        from websockets.sync.client import connect

        info = info or browser_version(endpoint, ctx)
        conn = cls(websocket_url(endpoint, info["webSocketDebuggerUrl"]), endpoint)
        try:
            # No proxy and no compression: loopback traffic, and the browser does not negotiate it anyway.
            conn._ws = conn._stack.enter_context(
                connect(
                    conn.url,
                    proxy=None,
                    compression=None,
                    open_timeout=HTTP_TIMEOUT_S,
                    max_size=MAX_MESSAGE_BYTES,
                    ping_interval=None,
                    close_timeout=1,
                    user_agent_header=None,
                )
            )
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError):
            conn._stack.close()
            raise _unreachable(endpoint, "the DevTools socket refused the connection") from None
        conn._reader = threading.Thread(target=conn._read, name="rea-cdp-reader", daemon=True)
        conn._reader.start()
        return conn

    # -- receiving -----------------------------------------------------------------------------

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        failure: ReaError | None = None
        try:
            while True:
                raw = self._ws.recv()
                try:
                    msg = json.loads(raw)
                except ValueError:
                    failure = _protocol_violation("a message is not JSON", endpoint=self.endpoint)
                    break
                if not isinstance(msg, dict):
                    failure = _protocol_violation("a message is not a JSON object", endpoint=self.endpoint)
                    break
                if "id" in msg:
                    self._reply(msg)
                elif isinstance(msg.get("method"), str):
                    params = msg.get("params")
                    session = msg.get("sessionId")
                    self._dispatch(
                        msg["method"],
                        params if isinstance(params, dict) else {},
                        session if isinstance(session, str) else None,
                    )
                else:
                    failure = _protocol_violation("a message is neither a reply nor an event", endpoint=self.endpoint)
                    break
        except ConnectionClosed:
            failure = None
        except Exception:
            failure = _protocol_violation("the socket failed while reading", endpoint=self.endpoint)
        self._fail_all(
            failure
            or ReaError(
                "provider_unavailable",
                "the browser closed the DevTools connection",
                remediation="The browser or its page went away; check that it is still running and retry.",
                details={"reason": "disconnected", "endpoint": self.endpoint},
            )
        )

    def _reply(self, msg: dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.pop(msg["id"], None) if isinstance(msg["id"], int) else None
        # A reply nobody waits for (a send without waiting, or a call that gave up) is dropped.
        if pending is not None:
            pending.reply = msg
            pending.event.set()

    def _dispatch(self, method: str, params: dict[str, Any], session: str | None) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(method, params, session)
            except Exception:  # a subscriber's bug must not stop the reader
                pass

    def _fail_all(self, error: ReaError) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = error
            pending, self._pending = list(self._pending.values()), {}
        for p in pending:
            p.event.set()

    # -- sending -------------------------------------------------------------------------------

    @property
    def closed(self) -> ReaError | None:
        return self._closed

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(subscriber)

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> tuple[int, _Pending]:
        from websockets.exceptions import ConnectionClosed

        ident = next(self._ids)
        pending = _Pending()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        with self._lock:
            if self._closed is not None:
                raise self._closed
            self._pending[ident] = pending
        try:
            self._ws.send(json.dumps(message))
        except (ConnectionClosed, OSError):
            with self._lock:
                self._pending.pop(ident, None)
            raise self._closed or ReaError(
                "provider_unavailable",
                "the browser closed the DevTools connection",
                details={"reason": "disconnected", "endpoint": self.endpoint},
            ) from None
        return ident, pending

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> None:
        """Send without waiting for the reply (from a subscriber, say); a failure is ignored."""
        with contextlib.suppress(ReaError):
            ident, _ = self._send(method, params, session)
            with self._lock:
                self._pending.pop(ident, None)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        ctx: CallContext | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send a command and wait for its result; errors are typed (refused, timeout, cancelled, gone)."""
        if ctx is not None:
            ctx.check(method)
        ident, pending = self._send(method, params, session)
        deadline = time.monotonic() + timeout_s
        while not pending.event.wait(POLL_S):
            if ctx is not None and ctx.cancelled:
                with self._lock:
                    self._pending.pop(ident, None)
                raise cancelled(method)
            if time.monotonic() >= deadline:
                with self._lock:
                    self._pending.pop(ident, None)
                raise ReaError(
                    "provider_timeout",
                    f"the browser did not answer {method} within {timeout_s:g} s",
                    details={"method": method, "timeout_ms": int(timeout_s * 1000)},
                )
        reply = pending.reply
        if reply is None:
            assert self._closed is not None
            raise self._closed
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            raise CommandFailed(method, err.get("code"), str(err.get("message", "error")))
        result = reply.get("result", {})
        if not isinstance(result, dict):
            raise _protocol_violation(f"the result of {method} is not an object", method=method)
        return result

    def close(self) -> None:
        self._fail_all(
            ReaError(
                "provider_unavailable",
                "the DevTools connection was closed by rea",
                details={"reason": "closed", "endpoint": self.endpoint},
            )
        )
        with contextlib.suppress(Exception):
            self._stack.close()
        if self._reader is not None:
            self._reader.join(timeout=2)


@contextlib.contextmanager
def opened(endpoint: str, ctx: CallContext | None = None, info: dict[str, Any] | None = None) -> Iterator[Connection]:
    conn = Connection.open(endpoint, ctx, info)
    try:
        yield conn
    finally:
        conn.close()


def wait(ctx: CallContext | None, seconds: float, phase: str) -> None:
    """Sleep ``seconds``, ending early (``cancelled``) when the caller cancels."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if ctx is not None:
            if ctx.signal.wait(min(left, POLL_S)):
                raise cancelled(phase)
        else:
            time.sleep(min(left, POLL_S))
