"""The parse worker: a child process that runs LIEF, so hostile input cannot take the server down.

Protocol: length-prefixed msgpack frames on stdin/stdout (``WorkerRequest`` in, ``WorkerReply`` out).
The parent owns the process; it exits on EOF, and a crash or timeout costs one request, not the server.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
import threading
import time
from typing import IO

import msgspec
from rea_plugins.native.model import Model, WorkerReply, WorkerRequest

from rea.context import CallContext
from rea.errors import ReaError

# Address-space cap of the worker: a LIEF allocation storm fails there, not in the server.
WORKER_MEMORY_BYTES = 6 << 30
_HEADER = struct.Struct(">I")
_MAX_FRAME = 1 << 30


def _read_exact(stream: IO[bytes], n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def serve() -> int:
    """Worker main loop: one reply per request until stdin closes."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    from rea_plugins.native.extract import ExtractError, extract

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # LIEF may print to fd 1; keep the protocol channel private.
    proto = os.fdopen(os.dup(stdout.fileno()), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    encoder = msgspec.msgpack.Encoder()
    while True:
        head = _read_exact(stdin, _HEADER.size)
        if head is None:
            return 0
        body = _read_exact(stdin, _HEADER.unpack(head)[0])
        if body is None:
            return 0
        try:
            req = msgspec.msgpack.decode(body, type=WorkerRequest)
            reply = WorkerReply(model=extract(req))
        except ExtractError as exc:
            reply = WorkerReply(error_code=exc.code, error_message=exc.message)
        except MemoryError:
            reply = WorkerReply(error_code="resource_constraint", error_message="parsing exhausted worker memory")
        except Exception as exc:  # LIEF raises assorted types on malformed input
            reply = WorkerReply(error_code="unsupported_target",
                                error_message=f"malformed binary: {type(exc).__name__}: {exc}")
        try:
            data = encoder.encode(reply)
        except (TypeError, ValueError, OverflowError) as exc:
            data = encoder.encode(WorkerReply(error_code="unsupported_target",
                                              error_message=f"malformed binary: unencodable field ({exc})"))
        proto.write(_HEADER.pack(len(data)) + data)
        proto.flush()


class ParseWorker:
    """A lazily started, restartable worker process shared by one provider's clients."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._decoder = msgspec.msgpack.Decoder(WorkerReply)
        self._encoder = msgspec.msgpack.Encoder()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "rea_plugins.native.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, close_fds=True)
        return self._proc

    def stop(self) -> None:
        with self._lock:
            self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()

    def parse(self, req: WorkerRequest, ctx: CallContext, timeout_s: float) -> Model:
        """Parse in the worker; typed errors for crashes, timeouts, cancellation and bad input."""
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            data = self._encoder.encode(req)
            try:
                proc.stdin.write(_HEADER.pack(len(data)) + data)
                proc.stdin.flush()
            except OSError:
                self._kill()
                raise ReaError("execution_failure", "the native parse worker exited before taking the request",
                               details={"phase": "parse"}) from None
            body = self._await_reply(proc, ctx, timeout_s)
        try:
            reply = self._decoder.decode(body)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ReaError("unsupported_target", f"malformed binary: the parse produced invalid fields ({exc})",
                           details={"phase": "parse"}) from None
        if reply.error_code is not None:
            raise ReaError(reply.error_code, reply.error_message, details={"phase": "parse"})
        assert reply.model is not None
        return reply.model

    def _await_reply(self, proc: subprocess.Popen[bytes], ctx: CallContext, timeout_s: float) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buf = bytearray()
        need = _HEADER.size
        have_header = False
        while True:
            if ctx.cancelled:
                self._kill()
                ctx.check("parsing binary")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise ReaError("provider_timeout", f"parsing did not finish within {timeout_s:.0f} s",
                               details={"phase": "parse", "timeout_s": timeout_s})
            ready, _, _ = select.select([fd], [], [], min(0.05, remaining))
            if not ready:
                continue
            chunk = os.read(fd, min(need - len(buf), 1 << 20))
            if not chunk:
                code = proc.wait()
                self._proc = None
                raise ReaError("execution_failure",
                               f"the native parse worker crashed on this input (exit status {code})",
                               remediation="The file is probably malformed; try another provider or file.",
                               details={"phase": "parse", "exit_status": code})
            buf += chunk
            if not have_header and len(buf) >= _HEADER.size:
                need = _HEADER.unpack(bytes(buf[:_HEADER.size]))[0]
                if need > _MAX_FRAME:
                    self._kill()
                    raise ReaError("execution_failure", "the native parse worker sent an oversized reply")
                del buf[:_HEADER.size]
                have_header = True
            if have_header and len(buf) >= need:
                return bytes(buf[:need])


if __name__ == "__main__":
    sys.exit(serve())
