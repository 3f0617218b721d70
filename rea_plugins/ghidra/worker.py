"""The Ghidra worker: ``python -m rea_plugins.ghidra.worker`` (pyghidra, one JVM, one analysed program).

``start`` imports and analyses the target (the startup the client bounds with REA_GHIDRA_STARTUP_TIMEOUT_MS);
every other route answers one native operation from the analysed program. The test fake serves the same
routes over a recorded model (``make_routes`` with another start function).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from rea.plugin import OPERATIONS
from rea.plugin import Answers
from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import Result
from rea.plugin import Route
from rea.plugin import Source
from rea.plugin import answer
from rea.plugin import arg_int
from rea.plugin import serve

# The start request the client sends over the worker protocol (JSON: install_dir, path, name, sha256, ...).
StartFn = Callable[[JSONObject, Reporter], Source]


class State:
    answers: Answers | None = None
    decompile_timeout_s: int = 30


def make_routes(start: StartFn, decompiler: str = "ghidra") -> dict[str, Route]:
    """The worker's routes: ``ping``, ``start`` and one per native operation."""
    state = State()

    def start_route(params: JSONObject, reporter: Reporter) -> JSONObject:
        began = time.monotonic()
        state.decompile_timeout_s = max(1, arg_int(params, "decompile_timeout_ms", 30_000) // 1000)
        state.answers = Answers(start(params, reporter), decompiler)
        return {
            "ready": True,
            "pid": os.getpid(),
            "procedures": len(state.answers.procs),
            "seconds": round(time.monotonic() - began, 3),
        }

    def operation(op: str) -> Route:
        def route(params: Arguments, reporter: Reporter) -> Result:
            if state.answers is None:
                raise ReaError(
                    "execution_failure",
                    "the Ghidra worker has not started its program",
                    remediation="Retry: the client starts the worker before any query.",
                )
            problems = None
            apply = getattr(state.answers.source, "apply_user_types", None)
            if op == "procedure_pseudo_code" and apply is not None:
                changed, problems = apply(params.get("types"))
                if changed:  # decompiled before these types: never shown again
                    state.answers._pseudo.clear()
            normalized, raw = answer(state.answers, op, params, state.decompile_timeout_s)
            if problems is not None and params.get("types"):
                raw = {**(raw if isinstance(raw, dict) else {}), "user_types": {"problems": problems}}
            return Result(normalized=normalized, raw=raw)

        return route

    table: dict[str, Route] = {"ping": lambda _p, _r: {"pid": os.getpid()}, "start": start_route}
    for op in OPERATIONS:
        table[op] = operation(op)
    return table


def main() -> int:
    from rea_plugins.ghidra.engine import Engine

    engine = Engine()
    try:
        return serve(make_routes(engine.start))
    finally:
        engine.close()


if __name__ == "__main__":
    sys.exit(main())
