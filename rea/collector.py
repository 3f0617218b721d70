"""The cyclic garbage collector's start-up pause: the ``rea`` command pauses it while it loads, and a command
that runs a tool or a server ends the pause before its own work (one place, for the CLI and both transports)."""

from __future__ import annotations

import gc
import threading

_LOCK = threading.Lock()
# Whether the collector was enabled when the command paused it (empty: it never paused it).
_PAUSED_AT_START: list[bool] = []


def pause_at_start() -> None:
    """Pause the collector for the command's start-up (once; the command itself, not a caller passing argv)."""
    if not _PAUSED_AT_START:
        _PAUSED_AT_START.append(gc.isenabled())
        gc.disable()


def collector_on(after_s: float = 0.0) -> None:
    """End the start-up pause of the cyclic collector, now or ``after_s`` seconds from now (a command done by
    then never collects): what was loaded until then is frozen (modules, classes, the registry: never garbage),
    so later collections scan only what the command itself creates."""
    if not (_PAUSED_AT_START and _PAUSED_AT_START[0]):
        return
    if after_s > 0:
        timer = threading.Timer(after_s, collector_on)
        timer.daemon = True
        timer.start()
        return
    with _LOCK:
        if not gc.isenabled():
            gc.freeze()
            gc.enable()
