"""The emulation worker: ``python -m rea_plugins.emulation.worker``, one Unicorn machine per request."""

from __future__ import annotations

import gc
import sys
from typing import Any

from rea.plugin import Reporter, serve
from rea_plugins.emulation.shapes import Run


def _emulate(params: dict[str, Any], reporter: Reporter) -> Run:
    # Imported here so the worker answers even where Unicorn is missing (typed, from the engine's import).
    from rea_plugins.emulation.engine import emulate

    try:
        return emulate(params)
    finally:
        # The machine's hooks hold it in a reference cycle: free its memory now, the worker serves the next run.
        gc.collect()


ROUTES = {"emulate": _emulate}


if __name__ == "__main__":
    sys.exit(serve(ROUTES))
