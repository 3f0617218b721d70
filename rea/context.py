"""Per-call cancellation signal and progress reporting, shared by MCP, CLI and plugins."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rea.errors import cancelled

# (progress, total, message): ``progress`` strictly increases across one call's updates; ``total`` is None
# unless the update counted its work against a known size.
ProgressSink = Callable[[float, float | None, str], None]

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
    """What a handler or provider gets besides its arguments: cancellation and progress.

    Progress numbering (one call's updates, as MCP wants them: ``progress`` strictly increasing): an update
    without counts is the last number plus one, with no total. An update that counts its phase (``done`` of
    ``total``) is numbered from where that phase began, ``offset + done`` of ``offset + total``, so a later
    phase that starts again at 0 continues upward. A phase begins when ``total`` changes or ``done`` goes back.
    The terminal update (``next_progress``) is complete: its progress equals its total.
    """

    def __init__(self, signal: CancelSignal | None = None, sink: ProgressSink | None = None) -> None:
        self.signal = signal or CancelSignal()
        self._sink = sink
        self._count = 0
        self._last_sent = 0.0
        self._pending: tuple[str, tuple[int, int] | None] | None = None
        # The counted phase: where its numbering starts, its size, the last counts reported (sent or held back).
        self._offset = 0
        self._phase_total: int | None = None
        self._seen: tuple[int, int] | None = None
        self._new_phase = False
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
                self._emit(*self._pending, now)

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def progress(self, message: str, *, done: int | None = None, total: int | None = None) -> None:
        """Report one status observation, with ``done`` of ``total`` when the work's size is known.

        Intermediate updates are rate-bounded; one held back keeps its counts."""
        if self._sink is None:
            return
        counts = None
        if done is not None and total is not None:
            done = max(0, done)
            counts = (done, max(total, done))
        with self._lock:
            if counts is not None:
                if self._seen is None or counts[1] != self._seen[1] or counts[0] < self._seen[0]:
                    self._new_phase = True
                self._seen = counts
            now = time.monotonic()
            if self._count and now - self._last_sent < PROGRESS_INTERVAL_S:
                self._pending = (message, counts)
                return
            self._emit(message, counts, now)

    def finish(self, message: str) -> None:
        """Word the terminal update; the front end sends exactly one, when the call completes."""
        with self._lock:
            self._summary = message

    def next_progress(self, message: str) -> tuple[float, float, str]:
        """Claim the number, total (the same: complete) and text of the one terminal update (the handler's
        summary, if it gave one)."""
        with self._lock:
            self._count += 1
            self._pending = None
            text = f"{message}: {self._summary}" if self._summary else message
            return float(self._count), float(self._count), f"{text} (elapsed {self.elapsed_ms()} ms)"

    def _emit(self, message: str, counts: tuple[int, int] | None, now: float) -> None:
        assert self._sink is not None
        total: float | None = None
        if counts is None:
            self._count += 1
        else:
            done, size = counts
            if self._new_phase or size != self._phase_total:
                # The phase begins here: numbered on from the last update sent (at least one past it).
                self._offset = self._count if done else self._count + 1
                self._phase_total = size
                self._new_phase = False
            elif self._offset + done <= self._count:
                # Updates without counts came in between: shift the phase just enough to keep rising.
                self._offset = self._count + 1 - done
            self._count = self._offset + done
            total = float(self._offset + size)
        self._last_sent = now
        self._pending = None
        self._sink(float(self._count), total, f"{message} (elapsed {self.elapsed_ms()} ms)")
