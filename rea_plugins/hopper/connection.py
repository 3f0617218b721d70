"""rea's side of the Hopper bridge protocol: newline-delimited JSON over the session's Unix socket.

Every message in either direction carries the session token, compared in constant time. Requests are
``{"id", "token", "method", "params"}``; the bridge answers ``{"id", "token", "result" | "error"}`` and may send
events ``{"event": "progress" | "diagnostic" | "ready", "token", ...}`` at any time. A malformed line, a
message without the token, an answer to another request or a line over the limit is a protocol violation:
the session is discarded, never trusted again.
"""

from __future__ import annotations

import hmac
import json
import select
import socket
import time
from collections.abc import Callable

from rea.plugin import CODES
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError
from rea.plugin import cancelled

MAX_LINE = 10 * 1024 * 1024
POLL_S = 0.05


class ProtocolViolation(Exception):
    """The bridge sent something the protocol does not allow."""


class Deadline(Exception):
    """The wait ran out of time."""


class BridgeConnection:
    """One connected, authenticated bridge session."""

    def __init__(self, sock: socket.socket, token: str) -> None:
        self.sock = sock
        self.token = token
        self._buffer = b""
        self._next_id = 0
        # Requests whose caller cancelled: their late answers are dropped, not taken for protocol violations.
        self._abandoned: set[int] = set()

    @classmethod
    def connect(cls, path: str, token: str) -> BridgeConnection | None:
        """Connected, or None while the bridge is not listening yet."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            return None
        return cls(sock, token)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- messages --------------------------------------------------------------------------------

    def _authentic(self, message: JSONObject) -> bool:
        token = message.get("token")
        return isinstance(token, str) and hmac.compare_digest(token.encode(), self.token.encode())

    def poll(self, timeout_s: float) -> JSONObject | None:
        """The next message if one arrives within ``timeout_s``; raises ``ProtocolViolation``.

        A message is the bridge's JSON object (an answer or an event), read as it was sent: its ``result`` is
        decoded by the reader that asked for it (``source.decoded``)."""
        if b"\n" not in self._buffer:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout_s))
            if not ready:
                return None
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError as exc:
                raise ProtocolViolation(f"the connection failed ({exc.strerror or exc})") from None
            if not chunk:
                raise ProtocolViolation("the bridge closed the connection")
            self._buffer += chunk
            if b"\n" not in self._buffer:
                if len(self._buffer) > MAX_LINE:
                    raise ProtocolViolation(f"a line longer than {MAX_LINE} bytes")
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        if len(line) > MAX_LINE:
            raise ProtocolViolation(f"a line longer than {MAX_LINE} bytes")
        try:
            message: JSONValue = json.loads(line)
        except ValueError:
            raise ProtocolViolation("a malformed line (not JSON)") from None
        if not isinstance(message, dict):
            raise ProtocolViolation("a message that is not a JSON object")
        if not self._authentic(message):
            raise ProtocolViolation("a message without the session token")
        return message

    def send(self, method: str, params: JSONObject) -> int:
        self._next_id += 1
        data = json.dumps({"id": self._next_id, "token": self.token, "method": method, "params": params}).encode()
        try:
            self.sock.sendall(data + b"\n")
        except OSError as exc:
            raise ProtocolViolation(f"the connection failed ({exc.strerror or exc})") from None
        return self._next_id

    def request(
        self,
        method: str,
        params: JSONObject,
        ctx: CallContext,
        deadline_s: float,
        on_event: Callable[[JSONObject], None],
    ) -> JSONValue:
        """Send one request and wait for its answer; events on the way go to ``on_event``."""
        rid = self.send(method, params)
        deadline = time.monotonic() + deadline_s
        while True:
            if ctx.cancelled:
                self._abandoned.add(rid)
                raise cancelled(f"hopper: {method}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Deadline(method)
            message = self.poll(min(POLL_S, remaining))
            if message is None:
                continue
            if "event" in message:
                on_event(message)
                continue
            if message.get("id") in self._abandoned:
                self._abandoned.discard(message["id"])
                continue
            if message.get("id") != rid:
                raise ProtocolViolation(f"an answer to request {message.get('id')!r} while {rid} was pending")
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                code = error.get("code") if error.get("code") in CODES else "execution_failure"
                raise ReaError(
                    str(code),
                    str(error.get("message", f"Hopper's bridge failed in {method}"))[:500],
                    details={"provider_id": "hopper", "operation": method},
                )
            if "result" not in message:
                raise ProtocolViolation("an answer without result or error")
            return message["result"]
