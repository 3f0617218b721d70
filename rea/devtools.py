"""A DevTools-protocol session over one WebSocket: the connection both the browser (Chrome DevTools Protocol) and the
V8 inspector (Node, Electron) tools speak, and the loopback rule for their endpoints.

The protocol is the same JSON-RPC on both: ``{"id", "method", "params"}`` commands, replies by id, events by method
(with a ``sessionId`` on a browser's flattened target sessions). The WebSocket is the ``websockets`` package's
synchronous client. One reader thread owns receiving: replies wake the caller waiting on that id, events go to
subscribers (on the reader thread, so a subscriber never blocks and never waits for a reply; it may ``send`` without
waiting). Every wait polls the caller's cancellation, and a closed socket fails every pending call at once. What
differs between the peers (what they are called in messages, how to make one reachable) is a ``Peer``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import Self

from rea.context import CallContext
from rea.errors import ReaError
from rea.errors import cancelled
from rea.errors import invalid_request
from rea.errors import issue
from rea.records import JSONObject
from rea.records import JSONValue

DEFAULT_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 5.0
# A screenshot or a large DOM arrives in one message; beyond this the message is refused, not buffered.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
POLL_S = 0.05
MAX_HTTP_BYTES = 16 * 1024 * 1024

# The DevTools protocol's messages are the peer's JSON (a browser's, Node's inspector's), not rea records.
Subscriber = Callable[[str, JSONObject, str | None], None]


@dataclass(frozen=True)
class Peer:
    """What is on the other end, as messages name it."""

    noun: str  # "the browser"
    endpoint_kind: str  # "Chrome DevTools"
    reachable: str  # the remediation when nothing answers
    check: str  # the remediation when the protocol is broken
    gone: str  # the remediation when the peer closed the connection
    thread: str  # the reader thread's name


def unreachable(peer: Peer, endpoint: str, why: str) -> ReaError:
    return ReaError(
        "provider_unavailable",
        f"no {peer.endpoint_kind} endpoint answers at {endpoint} ({why})",
        remediation=peer.reachable,
        details={"reason": "unreachable", "endpoint": endpoint},
    )


def protocol_violation(peer: Peer, what: str, **details: JSONValue) -> ReaError:
    return ReaError(
        "unreadable_output",
        f"{peer.noun} broke the DevTools protocol: {what}",
        remediation=peer.check,
        details={"reason": "protocol_violation", **details},
    )


def loopback_endpoint(value: str, path: str, label: str) -> str:
    """The loopback endpoint ``http://127.0.0.1:PORT`` (or ``[::1]``) ``value`` names; anything else is refused.

    ``label`` names the endpoint in the message ("CDP endpoint", "inspector endpoint").
    """
    problem = issue(
        path,
        "invalid_value",
        f"the {label} must be an explicit-port http URL on 127.0.0.1 or [::1] (loopback only)",
    )
    try:
        parts = urllib.parse.urlsplit(value)
        port = parts.port
    except ValueError:
        raise invalid_request(f"{path} is not a loopback {label}", [problem]) from None
    host = parts.hostname or ""
    try:
        loopback = ipaddress.ip_address(host) in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
    except ValueError:
        loopback = False
    if (
        parts.scheme != "http"
        or not loopback
        or port is None
        or port == 0
        or parts.username is not None
        or parts.password is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise invalid_request(f"{path} is not a loopback {label}", [problem])
    return f"http://{'[::1]' if ':' in host else host}:{port}"


def file_roots(values: list[str] | None, path: str = "allowed_file_roots") -> list[str]:
    """Canonical directories (symbolic links resolved) a request confines file:// targets and scripts to; one that is
    not an existing absolute directory is ``invalid_request``."""
    out: set[str] = set()
    problems = []
    for i, value in enumerate(values or []):
        real = os.path.realpath(value)
        if not os.path.isabs(value) or not os.path.isdir(real):
            problems.append(issue(f"{path}/{i}", "invalid_value", "expected an existing absolute directory"))
        else:
            out.add(real)
    if problems:
        raise invalid_request(f"{path} must name existing absolute directories", problems)
    return sorted(out)


def file_path(url: str) -> str | None:
    """The canonical local path of a ``file://`` URL; None for any other URL."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return os.path.realpath(urllib.parse.unquote(parts.path))


def inside(path: str, roots: list[str]) -> bool:
    """``path`` (canonical) is one of ``roots`` or lies below one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def websocket_url(endpoint: str, advertised: str) -> str:
    """The advertised DevTools socket's path on ``endpoint`` itself: rea connects only where it was told."""
    path = urllib.parse.urlsplit(advertised).path or "/"
    return "ws://" + endpoint[len("http://") :] + path


def http_json(peer: Peer, endpoint: str, path: str, ctx: CallContext | None = None) -> JSONValue:
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
        raise unreachable(peer, endpoint, f"HTTP {exc.code} for {path}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise unreachable(peer, endpoint, str(getattr(reason, "strerror", None) or "connection failed")) from None
    if len(body) > MAX_HTTP_BYTES:
        raise protocol_violation(peer, f"{path} answered more than {MAX_HTTP_BYTES} bytes", endpoint=endpoint)
    try:
        answer: JSONValue = json.loads(body)
    except ValueError:
        raise protocol_violation(peer, f"{path} did not answer JSON", endpoint=endpoint) from None
    return answer


# Still Any: the cdp plugin reads the peer's fields through these loosely (obj(x).get("url") as a str); typed as
# JSON, each of those reads needs its own check, which is that room's to add.
def obj(value: Any) -> dict[str, Any]:
    """``value`` when the protocol gave an object, else empty: a peer's omission is not a crash."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class CommandFailed(ReaError):
    """The peer answered a command with a protocol error."""

    def __init__(self, method: str, code: JSONValue, message: str, noun: str = "the browser") -> None:
        text = message[:300] if isinstance(message, str) else "error"
        super().__init__(
            "execution_failure",
            f"{noun} refused {method}: {text}",
            remediation="Check the page state the request assumes (target, frame, element).",
            details={"method": method, "cdp_code": code if isinstance(code, int) else None, "cdp_message": text},
        )
        self.method = method
        self.cdp_code = code
        self.cdp_message = text

    @property
    def method_missing(self) -> bool:
        """The peer does not implement the method (an optional or experimental domain)."""
        return self.cdp_code == -32601 or "wasn't found" in self.cdp_message


class _Pending:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: JSONObject | None = None


class Connection:
    """One DevTools WebSocket; ``call`` blocks the caller, events go to subscribers."""

    def __init__(self, url: str, endpoint: str, peer: Peer) -> None:
        self.url = url
        self.endpoint = endpoint
        self.peer = peer
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._closed: ReaError | None = None
        self._stack = contextlib.ExitStack()
        self._reader: threading.Thread | None = None

    @classmethod
    def connect(cls, endpoint: str, advertised: str, peer: Peer) -> Self:
        """Connect to the socket ``advertised`` names, on the validated loopback ``endpoint`` itself."""
        from websockets.exceptions import InvalidHandshake
        from websockets.exceptions import InvalidURI
        from websockets.sync.client import connect

        conn = cls(websocket_url(endpoint, advertised), endpoint, peer)
        try:
            # No proxy and no compression: loopback traffic, and the peers do not negotiate it anyway.
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
            raise unreachable(peer, endpoint, "the DevTools socket refused the connection") from None
        conn._reader = threading.Thread(target=conn._read, name=peer.thread, daemon=True)
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
                    failure = protocol_violation(self.peer, "a message is not JSON", endpoint=self.endpoint)
                    break
                if not isinstance(msg, dict):
                    failure = protocol_violation(self.peer, "a message is not a JSON object", endpoint=self.endpoint)
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
                    failure = protocol_violation(
                        self.peer, "a message is neither a reply nor an event", endpoint=self.endpoint
                    )
                    break
        except ConnectionClosed:
            failure = None
        except Exception:
            failure = protocol_violation(self.peer, "the socket failed while reading", endpoint=self.endpoint)
        self._fail_all(
            failure
            or ReaError(
                "provider_unavailable",
                f"{self.peer.noun} closed the DevTools connection",
                remediation=self.peer.gone,
                details={"reason": "disconnected", "endpoint": self.endpoint},
            )
        )

    def _reply(self, msg: JSONObject) -> None:
        with self._lock:
            pending = self._pending.pop(msg["id"], None) if isinstance(msg["id"], int) else None
        # A reply nobody waits for (a send without waiting, or a call that gave up) is dropped.
        if pending is not None:
            pending.reply = msg
            pending.event.set()

    def _dispatch(self, method: str, params: JSONObject, session: str | None) -> None:
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

    def _send(self, method: str, params: JSONObject | None, session: str | None) -> tuple[int, _Pending]:
        from websockets.exceptions import ConnectionClosed

        ident = next(self._ids)
        pending = _Pending()
        message: JSONObject = {"id": ident, "method": method, "params": params or {}}
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
                f"{self.peer.noun} closed the DevTools connection",
                details={"reason": "disconnected", "endpoint": self.endpoint},
            ) from None
        return ident, pending

    def send(self, method: str, params: JSONObject | None = None, session: str | None = None) -> None:
        """Send without waiting for the reply (from a subscriber, say); a failure is ignored."""
        with contextlib.suppress(ReaError):
            ident, _ = self._send(method, params, session)
            with self._lock:
                self._pending.pop(ident, None)

    def call(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        session: str | None = None,
        ctx: CallContext | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:  # the peer's JSON; Any as obj's, for the cdp plugin's loose reads (see obj)
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
                    f"{self.peer.noun} did not answer {method} within {timeout_s:g} s",
                    details={"method": method, "timeout_ms": int(timeout_s * 1000)},
                )
        reply = pending.reply
        if reply is None:
            assert self._closed is not None
            raise self._closed
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            raise CommandFailed(method, err.get("code"), str(err.get("message", "error")), self.peer.noun)
        result = reply.get("result", {})
        if not isinstance(result, dict):
            raise protocol_violation(self.peer, f"the result of {method} is not an object", method=method)
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
