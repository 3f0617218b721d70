"""The emulation worker: ``python -m rea_plugins.emulation.worker``, one Unicorn machine per request."""

from __future__ import annotations

import gc
import sys

import msgspec

from rea.plugin import Route
from rea.plugin import serve
from rea_plugins.emulation.plan import Plan
from rea_plugins.emulation.shapes import Run


def _emulate(plan: Plan) -> Run:
    # Imported here so the worker answers even where Unicorn is missing (typed, from the engine's import).
    from rea_plugins.emulation.engine import emulate

    try:
        return emulate(plan)
    finally:
        # The machine's hooks hold it in a reference cycle: free its memory now, the worker serves the next run.
        gc.collect()


# The request is the server's Plan as msgpack decodes it: converted back here.
ROUTES: dict[str, Route] = {"emulate": lambda params, reporter: _emulate(msgspec.convert(params, Plan))}


if __name__ == "__main__":
    sys.exit(serve(ROUTES))
