"""The angr worker process: ``python -m rea_plugins.angr.worker`` serves the contract operations.

It holds one loaded target; ``load`` and ``cfg`` are requests of their own so each gets its deadline.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

from rea.plugin import JSONObject
from rea.plugin import Reporter
from rea.plugin import Route
from rea.plugin import arg_str
from rea.plugin import held
from rea.plugin import operation_routes
from rea.plugin import pinned_copy
from rea.plugin import serve

# The largest target angr's worker reads from a private copy (larger ones in place, checked before each request).
PRIVATE_COPY_MAX_BYTES = 512 << 20

# operation -> (holder, method): "analysis" is the loaded model, "code" its function-level view.
OPERATIONS: dict[str, tuple[str, str]] = {
    "list_documents": ("analysis", "documents"),
    "list_segments": ("analysis", "segments"),
    "binary_layout": ("analysis", "layout"),
    "list_procedures": ("analysis", "procedures"),
    "search_procedures": ("analysis", "search_procedures"),
    "list_strings": ("analysis", "list_strings"),
    "search_strings": ("analysis", "search_strings"),
    "list_names": ("analysis", "list_names"),
    "address_name": ("analysis", "address_name"),
    "procedure_address": ("analysis", "procedure_address"),
    "resolve_containing_procedure": ("analysis", "resolve_containing"),
    "procedure_info": ("code", "info"),
    "procedure_blocks": ("code", "blocks"),
    "procedure_assembly": ("code", "assembly"),
    "read_function_instructions": ("code", "read_instructions"),
    "procedure_callers": ("code", "callers"),
    "procedure_callees": ("code", "callees"),
    "program_call_graph": ("code", "program_call_graph"),
    "procedure_references": ("code", "references"),
    "xrefs": ("code", "xrefs"),
    "procedure_pseudo_code": ("code", "pseudo_code"),
    "inspect_native_instruction": ("facts", "instruction"),
    "inspect_native_data_type": ("facts", "data_type"),
    "resolve_native_call_targets": ("facts", "call_targets"),
}
# Kept for the provider's descriptor (operations) without importing angr.
ROUTES = OPERATIONS

# Operations that answer from the loader alone; every other one needs the CFG.
LOADER_OPS = frozenset({"list_documents", "list_segments", "binary_layout", "list_names", "address_name"})


class State:
    """The one loaded target and its caches."""

    analysis: Any = None
    code: Any = None
    facts: Any = None


STATE = State()


def _loaded() -> Any:
    return held(STATE.analysis, "angr")


# The load request the client sends over the worker protocol: JSON (path, name, sha256, format).
def load(params: JSONObject, reporter: Reporter) -> Any:
    reporter.progress("importing angr")
    # Imported here, not at module level: only the worker ever imports angr.
    from rea_plugins.angr.code import Code
    from rea_plugins.angr.facts import Facts
    from rea_plugins.angr.model import Analysis

    reporter.progress("loading the binary")
    sha256 = arg_str(params, "sha256", "")
    # CLE reads parts of the file after loading: angr reads a private copy, checked against the hash (a target up
    # to this size), so a rewrite or a truncation of the target cannot reach it.
    path = pinned_copy(arg_str(params, "path", ""), sha256, tempfile.gettempdir(), PRIVATE_COPY_MAX_BYTES)
    STATE.analysis = Analysis(path, arg_str(params, "name", ""), sha256)
    STATE.code = Code(STATE.analysis)
    STATE.facts = Facts(STATE.code)
    return {"loaded": True, "pid": os.getpid()}


def cfg(params: JSONObject, reporter: Reporter) -> Any:
    started = time.monotonic()
    analysis = _loaded()
    analysis.ensure_cfg(reporter.progress)
    return {"functions": len(analysis.funcs), "seconds": round(time.monotonic() - started, 3)}


def _ready(op: str, reporter: Reporter) -> None:
    analysis = _loaded()
    if op not in LOADER_OPS:
        analysis.ensure_cfg(reporter.progress)


def routes() -> dict[str, Route]:
    table: dict[str, Route] = {"ping": lambda _p, _r: {"pid": os.getpid()}, "load": load, "cfg": cfg}
    return {**table, **operation_routes(OPERATIONS, STATE, _ready)}


if __name__ == "__main__":
    sys.exit(serve(routes()))
