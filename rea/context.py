"""Per-call cancellation signal and progress reporting, shared by MCP, CLI and plugins."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rea.errors import cancelled

ProgressSink = Callable[[float, str], None]

# At most one intermediate update per this many seconds; the terminal update always goes out.
PROGRESS_INTERVAL_S = 0.1


class CancelSignal:
    """One cancellation signal per request; providers and long loops poll it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def commit(self, action: Callable[[], object]) -> bool:
        """Run ``action`` only if not cancelled, atomically with respect to ``cancel``."""
        with self._lock:
            if self._event.is_set():
                return False
            action()
            return True

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks)
        for cb in callbacks:
            try:
                cb()
            except Exception:  # a failing listener must not stop the others
                pass

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once when cancelled (immediately if already cancelled)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


class CallContext:
    """What a handler or provider gets besides its arguments: cancellation and progress."""

    def __init__(self, signal: CancelSignal | None = None, sink: ProgressSink | None = None) -> None:
        self.signal = signal or CancelSignal()
        self._sink = sink
        self._count = 0
        self._last_sent = 0.0
        self._pending: str | None = None
        self._summary = ""
        self._started = time.monotonic()
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self.signal.cancelled

    def check(self, phase: str = "") -> None:
        """Raise ``cancelled`` if the request was cancelled (and send a held-back update that is now due)."""
        if self.signal.cancelled:
            raise cancelled(phase)
        self.flush()

    def flush(self) -> None:
        """Send the latest update the rate bound held back, once its interval has passed."""
        if self._pending is None or self._sink is None:
            return
        with self._lock:
            now = time.monotonic()
            if self._pending is not None and now - self._last_sent >= PROGRESS_INTERVAL_S:
                self._emit(self._pending, now)

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def progress(self, message: str) -> None:
        """Report one status observation; intermediate updates are rate-bounded."""
        if self._sink is None:
            return
        with self._lock:
            now = time.monotonic()
            if self._count and now - self._last_sent < PROGRESS_INTERVAL_S:
                self._pending = message
                return
            self._emit(message, now)

    def finish(self, message: str) -> None:
        """Word the terminal update; the front end sends exactly one, when the call completes."""
        with self._lock:
            self._summary = message

    def next_progress(self, message: str) -> tuple[float, str]:
        """Claim the number and text of the one terminal update (the handler's summary, if it gave one)."""
        with self._lock:
            self._count += 1
            self._pending = None
            text = f"{message}: {self._summary}" if self._summary else message
            return float(self._count), f"{text} (elapsed {self.elapsed_ms()} ms)"

    def _emit(self, message: str, now: float) -> None:
        assert self._sink is not None
        self._count += 1
        self._last_sent = now
        self._pending = None
        self._sink(float(self._count), f"{message} (elapsed {self.elapsed_ms()} ms)")
