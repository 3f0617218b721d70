"""Starting the providers' machinery ahead of the first call, for a long-lived server (``rea serve``).

Two stages. ``prestart`` runs as the server process starts, before it imports the MCP SDK: each available
provider starts its own processes (a worker that loads its engine there), which costs this process a spawn, and
the worker's loading overlaps the server's own start on another core. ``prewarm`` runs once the first tools/list
has been answered: what would load into this process (imports, hashing) waits until it cannot delay that answer.
Neither blocks; a provider that fails either still opens normally later (the open reports the failure).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rea.providers import AnalysisProvider
    from rea.registry import Registry

# Prewarming waits for the first tools/list to be answered (and a moment for the answer to be written), at most
# this long: on a small host its imports would otherwise delay that answer.
PREWARM_AFTER_LIST_S = 0.1
PREWARM_LATEST_S = 2.0


def _available(registry: Registry) -> list[AnalysisProvider]:
    out = []
    for provider in registry.providers.values():
        try:
            if provider.availability().status == "available":
                out.append(provider)
        except Exception:  # a provider whose availability check fails is reported by `providers list`, not here
            pass
    return out


def prestart(registry: Registry) -> threading.Thread:
    """Have each provider start its own processes, in the background (the thread is returned). No availability
    check first (several read files or import modules, in this process, while it starts): a provider's ``prestart``
    does nothing where it cannot run."""

    def run() -> None:
        for provider in registry.providers.values():
            try:
                provider.prestart()
            except Exception:  # the first open that needs the process starts it again and reports the failure
                pass

    thread = threading.Thread(target=run, name="rea-prestart", daemon=True)
    thread.start()
    return thread


def prewarm(registry: Registry, listed: threading.Event | None = None) -> None:
    """Let available providers load what they share into this process while the client works (in the background);
    with ``listed``, once the first tools/list has been answered (or ``PREWARM_LATEST_S`` passed)."""

    def run() -> None:
        if listed is not None and listed.wait(PREWARM_LATEST_S):
            time.sleep(PREWARM_AFTER_LIST_S)
        for provider in _available(registry):
            try:
                provider.prewarm()
            except Exception:  # a provider that cannot prewarm still opens normally later
                pass

    threading.Thread(target=run, name="rea-prewarm", daemon=True).start()
