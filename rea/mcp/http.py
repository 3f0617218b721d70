"""``rea serve --http``: one rea for several clients over the SDK's streamable HTTP transport, without opening a door.

Each MCP session (an ``Mcp-Session-Id``) is served by its own ``Server.run`` on the SDK's
``StreamableHTTPServerTransport``, so it enters rea's lifespan once, as a stdio connection does: its own Session,
Evidence ledger, open targets and cursor, closed (owned processes released) when the session ends. The SDK's
session manager is not used because it enters the lifespan once for the whole server, which would give every client
the same Session.

In front of the transport, every request is checked in this order: the path, the ``Host`` header (it must name the
bound address or an allow-listed one: DNS rebinding), the ``Origin`` header (absent, or allow-listed), the bearer
token (constant-time compare, ``401`` with no detail), the body size (the stdio line limit), then the session's
limits (concurrent requests). A client that drops a POST while its call runs gets the call cancelled by the same
``notifications/cancelled`` a client would send.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Mapping
from contextlib import suppress
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import anyio
import anyio.abc
import msgspec
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Message
from starlette.types import Receive
from starlette.types import Scope
from starlette.types import Send

from rea.config import SettingSpec
from rea.config import integer_setting
from rea.errors import ReaError
from rea.records import JSONObject

if TYPE_CHECKING:
    from rea.mcp.stdio import RequestId

PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
TOKEN_ENV = "REA_MCP_TOKEN"
# A shorter shared secret is guessable over a network.
MIN_TOKEN_CHARS = 16


def _host_list(raw: str) -> tuple[str, ...]:
    items = tuple(i.strip().lower() for i in raw.split(",") if i.strip())
    if not items or any(any(c.isspace() or c in "/@" for c in i) for i in items):
        raise ValueError(raw)
    return items


def _origin_list(raw: str) -> tuple[str, ...]:
    items = tuple(i.strip().rstrip("/").lower() for i in raw.split(",") if i.strip())
    if not items or any(not i.startswith(("http://", "https://")) or " " in i for i in items):
        raise ValueError(raw)
    return items


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError(raw)
    return raw == "1"


ALLOWED_HOSTS = SettingSpec(
    name="REA_HTTP_ALLOWED_HOSTS",
    constraint="a comma-separated list of host or host:port names",
    parse=_host_list,
    description="Host header values rea serve --http accepts besides the bound address (a reverse proxy's name).",
    default=(),
)
ALLOWED_ORIGINS = SettingSpec(
    name="REA_HTTP_ALLOWED_ORIGINS",
    constraint="a comma-separated list of http:// or https:// origins",
    parse=_origin_list,
    description="Origin header values rea serve --http accepts; a request with any other Origin is refused.",
    default=(),
)
CORS = SettingSpec(
    name="REA_HTTP_CORS",
    constraint="0 or 1",
    parse=_flag,
    description="Answer CORS (preflight and headers) for the allowed origins; off by default.",
    default=False,
)
MAX_SESSIONS = integer_setting(
    "REA_HTTP_MAX_SESSIONS", 1, 10_000, 64, "sessions", "Most MCP sessions rea serve --http keeps at once."
)
MAX_CONCURRENT = integer_setting(
    "REA_HTTP_MAX_CONCURRENT_REQUESTS",
    1,
    1024,
    8,
    "requests",
    "Most requests one HTTP session may have in flight; one more is answered 429.",
)
IDLE_TIMEOUT = integer_setting(
    "REA_HTTP_IDLE_TIMEOUT_S",
    1,
    7 * 24 * 3600,
    1800,
    "seconds",
    "An HTTP session with no request in flight for this long is closed, its targets and processes released.",
)


class HttpConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What ``rea serve --http`` binds, whom it lets in, and each session's limits."""

    host: str
    port: int
    auth: bool
    # Where the token came from: the environment, generated at start, or none (--no-auth).
    token_source: Literal["env", "generated", "none"]
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    cors: bool
    max_sessions: int
    max_concurrent_requests: int
    idle_timeout_s: int
    max_request_bytes: int


def parse_bind(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:8080`` for IPv6) as (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text
    host = host.strip("[]") or DEFAULT_HOST
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not a port: {port!r} (give [HOST:]PORT, e.g. 127.0.0.1:8765)")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")


def _setting_error(setting: str, message: str, remediation: str) -> ReaError:
    return ReaError("configuration_invalid", message, remediation=remediation, details={"setting": setting})


def http_config(
    bind: str,
    env: Mapping[str, str],
    *,
    max_request_bytes: int,
    no_auth: bool = False,
    allow_hosts: tuple[str, ...] = (),
    allow_origins: tuple[str, ...] = (),
    cors: bool | None = None,
) -> HttpConfig:
    """The HTTP settings from the command line and the environment; ``configuration_invalid`` where they are unsafe."""
    try:
        host, port = parse_bind(bind)
    except ValueError as exc:
        raise _setting_error("--http", str(exc), "Give --http [HOST:]PORT, e.g. --http 127.0.0.1:8765.") from None
    if no_auth and not is_loopback(host):
        raise _setting_error(
            "--no-auth",
            f"--no-auth with a bind to {host}, which is not a loopback address",
            "Keep authentication on (REA_MCP_TOKEN), or bind 127.0.0.1 with --no-auth.",
        )
    hosts = tuple(h.lower() for h in allow_hosts) + ALLOWED_HOSTS.read(env)
    if _is_wildcard(host) and not hosts:
        raise _setting_error(
            "REA_HTTP_ALLOWED_HOSTS",
            f"a bind to {host or 'every address'} names no Host header to accept",
            "Name the host clients use with --allow-host NAME[:PORT] or REA_HTTP_ALLOWED_HOSTS.",
        )
    token = env.get(TOKEN_ENV)
    if token is not None and not no_auth and (len(token) < MIN_TOKEN_CHARS or not token.isprintable()):
        raise _setting_error(
            TOKEN_ENV,
            f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} printable characters",
            f"Set {TOKEN_ENV} to a long random string (python -c 'import secrets; print(secrets.token_urlsafe())').",
        )
    return HttpConfig(
        host=host,
        port=port,
        auth=not no_auth,
        token_source="none" if no_auth else ("env" if token is not None else "generated"),
        allowed_hosts=hosts,
        allowed_origins=tuple(o.rstrip("/").lower() for o in allow_origins) + ALLOWED_ORIGINS.read(env),
        cors=CORS.read(env) if cors is None else cors,
        max_sessions=MAX_SESSIONS.read(env),
        max_concurrent_requests=MAX_CONCURRENT.read(env),
        idle_timeout_s=IDLE_TIMEOUT.read(env),
        max_request_bytes=max_request_bytes,
    )


def runtime_dir(env: Mapping[str, str]) -> str:
    """The user's runtime directory ($XDG_RUNTIME_DIR/rea), else a private folder under the temporary directory."""
    base = env.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return os.path.join(base, "rea")
    return os.path.join(tempfile.gettempdir(), f"rea-{os.getuid()}")


def write_token(token: str, port: int, env: Mapping[str, str]) -> str:
    """Write the generated token to a 0600 file in a 0700 folder only this user owns; its path."""
    folder = runtime_dir(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid():
        raise ReaError(
            "configuration_invalid",
            f"{folder} is not a folder of this user",
            remediation="Remove it, or set XDG_RUNTIME_DIR to this user's runtime directory.",
        )
    os.chmod(folder, 0o700)
    path = os.path.join(folder, f"mcp-http-{port}.token")
    with suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return path


def accepted_hosts(config: HttpConfig, port: int) -> frozenset[str]:
    """Every Host header value a request may carry: the bound address (and its loopback names), and the allow-list.
    An allow-listed name without a port stands for that name with or without the bound port."""
    names: set[str] = set()
    if not _is_wildcard(config.host):
        names.add(config.host.lower())
    if is_loopback(config.host):
        names |= {"127.0.0.1", "localhost", "::1"}
    out: set[str] = set()
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        out.add(f"{shown}:{port}")
        if port == 80:
            out.add(shown)
    for entry in config.allowed_hosts:
        if entry.rsplit(":", 1)[-1].isdigit() and not entry.endswith("]"):
            out.add(entry)
        else:
            out |= {entry, f"{entry}:{port}"}
    return frozenset(out)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _respond(send: Send, status: int, body: bytes = b"", headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    head = [(b"content-length", str(len(body)).encode()), *headers]
    if body:
        head.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _jsonrpc_error(rid: RequestId, code: int, message: str, data: JSONObject | None = None) -> bytes:
    from rea.mcp.stdio import Refusal

    return Refusal(code=code, id=rid, message=message, data=data).body()


class _Session:
    """One MCP session: its transport and the requests it has in flight."""

    def __init__(self, transport: StreamableHTTPServerTransport) -> None:
        self.transport = transport
        self.in_flight = 0


class HttpApp:
    """The ASGI application: the checks in front, then one SDK transport per MCP session."""

    def __init__(self, server: Any, config: HttpConfig, token: str | None, port: int) -> None:
        self.server = server  # rea.mcp.server.ReaServer
        self.config = config
        self.token = token.encode() if token is not None else None
        self.hosts = accepted_hosts(config, port)
        self.sessions: dict[str, _Session] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._admit = anyio.Lock()

    def bind(self, tg: anyio.abc.TaskGroup) -> None:
        """The task group sessions run in (they outlive the request that opened them)."""
        self._tg = tg

    async def close_all(self) -> None:
        """End every session: its in-flight calls are cancelled and its Session closed (owned processes released)."""
        for session in list(self.sessions.values()):
            with anyio.CancelScope(shield=True):
                await session.transport.terminate()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _respond(send, refusal, headers=((b"www-authenticate", b"Bearer"),) if refusal == 401 else ())
            return
        method = scope["method"]
        if method == "POST":
            await self._post(scope, receive, send)
        elif method in ("GET", "DELETE"):
            session = self.sessions.get(_header(scope, MCP_SESSION_ID_HEADER.lower().encode()) or "")
            if session is None:
                await _respond(send, 404 if method == "DELETE" or _header(scope, b"mcp-session-id") else 400)
                return
            await session.transport.handle_request(scope, receive, send)
        else:
            await _respond(send, 405, headers=((b"allow", b"GET, POST, DELETE"),))

    def _refusal(self, scope: Scope) -> int | None:
        """The status a request is refused with before its body is read, or None."""
        if scope.get("path") != PATH:
            return 404
        host = (_header(scope, b"host") or "").lower()
        if host not in self.hosts:
            return 421  # Misdirected Request: a rebinding name, or a proxy not in the allow-list
        origin = _header(scope, b"origin")
        if origin is not None and origin.rstrip("/").lower() not in self.config.allowed_origins:
            return 403
        if self.token is not None:
            given = _header(scope, b"authorization") or ""
            scheme, _, value = given.partition(" ")
            # compare_digest over the whole value: the time does not depend on where a wrong token differs.
            if not (scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token)):
                return 401
        return None

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once a body over the request limit was refused (the stdio line limit's rule)."""
        from rea.mcp.stdio import too_long

        limit = self.config.max_request_bytes
        declared = _header(scope, b"content-length")
        body = bytearray()
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _respond(send, 413, too_long(b"", int(declared), limit).response().rstrip(b"\n"))
            return None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            body += message.get("body", b"")
            if len(body) > limit:
                await _respond(send, 413, too_long(bytes(body[:4096]), len(body), limit).response().rstrip(b"\n"))
                return None
            if not message.get("more_body", False):
                return bytes(body)

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = _header(scope, b"mcp-protocol-version")
        if version in MODERN_PROTOCOL_VERSIONS:
            # That revision has no session: every request would start a fresh rea Session, with no target open.
            await _respond(
                send,
                400,
                _jsonrpc_error(
                    None,
                    -32600,
                    f"rea's HTTP server keeps one session per client; protocol {version} has no session: "
                    "connect with the initialize handshake (protocol 2025-11-25)",
                ),
            )
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        from rea.mcp.stdio import Refusal
        from rea.mcp.stdio import classify

        # The stdio transport's rules, before the SDK parses anything: not JSON, not one JSON-RPC object, nested
        # beyond any use (a stack overflow in a parser), or a method name of a megabyte each get a typed answer.
        verdict = classify(body)
        if isinstance(verdict, Refusal):
            await _respond(send, 400, verdict.response().rstrip(b"\n"))
            return
        rid, is_request, method = _request_of(body)
        replay = _Replay(body, receive)
        sid = _header(scope, b"mcp-session-id")
        if sid is None:
            await self._open(scope, replay, send)
            return
        session = self.sessions.get(sid)
        if session is None:
            await _respond(send, 404, _jsonrpc_error(rid, -32600, "Session not found"))
            return
        if not is_request:
            await session.transport.handle_request(scope, replay, send)
            return
        if session.in_flight >= self.config.max_concurrent_requests:
            limit = self.config.max_concurrent_requests
            await _respond(
                send,
                429,
                _jsonrpc_error(
                    rid,
                    -32600,
                    f"{limit} requests of this session are in flight, the most {MAX_CONCURRENT.name} allows",
                    {
                        "code": "resource_constraint",
                        "resource": "concurrent_requests",
                        "reported_limits": {"max_concurrent_requests": limit},
                        "remediation": "Wait for an answer before sending another request.",
                    },
                ),
                ((b"retry-after", b"1"),),
            )
            return
        session.in_flight += 1
        watched = _Watched(send)
        try:
            await session.transport.handle_request(scope, replay, watched)
        finally:
            session.in_flight -= 1
            if replay.disconnected and not watched.complete and method != "initialize":
                # The client went away mid-call: cancel it as MCP cancellation does, so the tool stops and its owned
                # processes are released, instead of running on for nobody.
                with anyio.CancelScope(shield=True):
                    await self._cancel(session, scope, rid)

    async def _cancel(self, session: _Session, scope: Scope, rid: RequestId) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "the client disconnected"},
            }
        ).encode()
        keep = {b"host", b"mcp-session-id", b"mcp-protocol-version", b"authorization"}
        headers = [(k, v) for k, v in scope.get("headers", ()) if k in keep]
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(body)).encode()),
        ]
        synthetic = {**scope, "headers": headers}

        async def discard(_message: Message) -> None:
            return None

        with suppress(Exception):
            await session.transport.handle_request(synthetic, _Replay(body, None), discard)

    async def _open(self, scope: Scope, replay: _Replay, send: Send) -> None:
        """A request without a session id: only an initialize opens a session, within the session limit."""
        async with self._admit:
            if len(self.sessions) >= self.config.max_sessions:
                await _respond(send, 503, _jsonrpc_error(None, -32603, "Too many open sessions"))
                return
            sid = uuid.uuid4().hex
            transport = StreamableHTTPServerTransport(
                mcp_session_id=sid, is_json_response_enabled=False, idle_timeout=float(self.config.idle_timeout_s)
            )
            session = self.sessions[sid] = _Session(transport)
        assert self._tg is not None
        established = False
        try:
            await self._tg.start(self._run_session, sid, session)
            watched = _Watched(send)
            await transport.handle_request(scope, replay, watched)
            established = watched.status is not None and watched.status < 400
        finally:
            if not established:
                await self._discard(sid, session)

    async def _run_session(
        self, sid: str, session: _Session, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        transport = session.transport
        try:
            async with transport.connect() as (read_stream, write_stream):
                task_status.started()
                scope = transport.idle_scope or anyio.CancelScope()
                with scope:
                    # Server.run enters rea's lifespan for this session alone: its own Session and ledger, closed
                    # (every owned process released) when the session ends, by DELETE, idle timeout or shutdown.
                    options = self.server.initialization_options()
                    await self.server.server.run(read_stream, write_stream, options)
        except Exception as exc:  # one session's failure must not end the server
            print(f"rea serve: session {sid[:8]} ended: {type(exc).__name__}", file=sys.stderr)
        finally:
            await self._discard(sid, session)

    async def _discard(self, sid: str, session: _Session) -> None:
        self.sessions.pop(sid, None)
        if not session.transport.is_terminated:
            with anyio.CancelScope(shield=True):
                await session.transport.terminate()


def _request_of(body: bytes) -> tuple[RequestId, bool, str | None]:
    """(id, whether it is a request, method) of a JSON-RPC body; (None, False, None) when it is none of those."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None, False, None
    if not isinstance(doc, dict):
        return None, False, None
    rid = doc.get("id")
    method = doc.get("method")
    is_request = isinstance(method, str) and isinstance(rid, str | int) and not isinstance(rid, bool)
    return (rid if is_request else None), is_request, method if isinstance(method, str) else None


class _Replay:
    """Hands the transport the body already read, then the client's further messages, noting a disconnect."""

    def __init__(self, body: bytes, receive: Receive | None) -> None:
        self._body: bytes | None = body
        self._receive = receive
        self.disconnected = False

    async def __call__(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        if self._receive is None:
            await anyio.sleep_forever()
        assert self._receive is not None
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.disconnected = True
        return message


class _Watched:
    """Passes the response on, noting its status and whether it was sent to the end."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status: int | None = None
        self.complete = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True


def cors_wrapped(app: HttpApp, config: HttpConfig) -> Any:
    """CORS for the allowed origins when configured; without it a browser page gets no CORS answer at all."""
    if not (config.cors and config.allowed_origins):
        return app
    from starlette.middleware.cors import CORSMiddleware

    return CORSMiddleware(
        app,
        allow_origins=list(config.allowed_origins),
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["authorization", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"],
        expose_headers=["mcp-session-id"],
    )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def announce(config: HttpConfig, port: int, token: str | None, token_path: str | None) -> None:
    """What the operator must know, on stderr, once: the URL, the token (only a generated one), and no-auth."""
    shown = f"[{config.host}]" if ":" in config.host else config.host
    print(f"rea serve: MCP over streamable HTTP at http://{shown}:{port}{PATH}", file=sys.stderr)
    if config.token_source == "none":
        print(
            "rea serve: authentication is OFF (--no-auth): every local process and user can call every tool",
            file=sys.stderr,
        )
    elif config.token_source == "generated":
        print(f"rea serve: bearer token (also in {token_path}): {token}", file=sys.stderr)
    else:
        print(f"rea serve: bearer token from {TOKEN_ENV}", file=sys.stderr)
    sys.stderr.flush()


async def serve_http(registry: Any, settings: Any, config: HttpConfig) -> str | None:
    """Serve until SIGTERM/SIGINT (its name): then every session's in-flight calls are cancelled and its Session
    closed, which releases every owned process and private directory."""
    import uvicorn

    from rea import warmup
    from rea.mcp.server import ReaServer
    from rea.process import leftovers

    leftovers.sweep()
    sock = _listen(config.host, config.port)
    port = sock.getsockname()[1]
    token: str | None = None
    token_path: str | None = None
    if config.auth:
        token = os.environ.get(TOKEN_ENV)
        if token is None:
            token = secrets.token_urlsafe(32)
            token_path = write_token(token, port, os.environ)
    rea_server = ReaServer(registry, settings)
    app = HttpApp(rea_server, config, token, port)

    class _Server(uvicorn.Server):
        @staticmethod
        def capture_signals() -> Any:  # rea handles SIGTERM/SIGINT itself: sessions close before the listener
            from contextlib import nullcontext

            return nullcontext()

    server = _Server(
        uvicorn.Config(
            cors_wrapped(app, config),
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            h11_max_incomplete_event_size=64 * 1024,
        )
    )
    from rea.collector import collector_on

    collector_on()
    warmup.prewarm(registry, rea_server.listed)
    stopped_by: list[str] = []
    try:
        async with anyio.create_task_group() as tg:
            app.bind(tg)
            announce(config, port, token, token_path)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                tg.start_soon(server.serve, [sock])
                async for signum in received:
                    stopped_by.append(signal.Signals(signum).name)
                    break
            await app.close_all()
            server.should_exit = True
    finally:
        if token_path is not None:
            with suppress(OSError):
                os.unlink(token_path)
    return stopped_by[0] if stopped_by else None


SETTINGS: tuple[SettingSpec, ...] = (ALLOWED_HOSTS, ALLOWED_ORIGINS, CORS, MAX_SESSIONS, MAX_CONCURRENT, IDLE_TIMEOUT)


def describe(env: Mapping[str, str], max_request_bytes: int) -> tuple[bool, str, str | None]:
    """``rea doctor``'s account of the HTTP settings: (valid, summary, remediation); nothing is bound or written."""
    try:
        config = http_config(f"{DEFAULT_HOST}:0", env, max_request_bytes=max_request_bytes)
    except ReaError as err:
        return False, f"rea serve --http would refuse to start: {err.message}", err.remediation
    token = (
        f"bearer token from {TOKEN_ENV}"
        if config.token_source == "env"
        else f"bearer token generated at start, written 0600 to {runtime_dir(env)}/mcp-http-PORT.token"
    )
    origins = ", ".join(config.allowed_origins) or "none (a request with an Origin header is refused)"
    summary = (
        f"rea serve --http: {token}; Host: the bound address"
        + (f" and {', '.join(config.allowed_hosts)}" if config.allowed_hosts else "")
        + f"; Origin allowed: {origins}; CORS {'on' if config.cors and config.allowed_origins else 'off'}; "
        f"per session: {config.max_concurrent_requests} requests in flight, {max_request_bytes} request bytes, "
        f"idle timeout {config.idle_timeout_s} s; at most {config.max_sessions} sessions; TLS: a reverse proxy's"
    )
    return True, summary, None
