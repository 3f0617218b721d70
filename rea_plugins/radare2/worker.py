"""The radare2 worker process: ``python -m rea_plugins.radare2.worker --libr DIR`` serves the contract operations.

It holds one loaded target; ``load`` and ``analyze`` are requests of their own so each gets its deadline.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import Route
from rea.plugin import arg_str
from rea.plugin import held
from rea.plugin import operation_routes
from rea.plugin import pinned_copy
from rea.plugin import serve

# operation -> (holder, method): "program" is the loaded binary, "code" its function-level view.
OPERATIONS: dict[str, tuple[str, str]] = {
    "list_documents": ("program", "documents"),
    "list_segments": ("program", "segments_op"),
    "list_procedures": ("program", "procedures"),
    "search_procedures": ("program", "search_procedures"),
    "list_strings": ("program", "list_strings"),
    "search_strings": ("program", "search_strings"),
    "list_names": ("program", "list_names"),
    "address_name": ("program", "address_name"),
    "procedure_address": ("program", "procedure_address"),
    "resolve_containing_procedure": ("program", "resolve_containing"),
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
    "binary_layout": ("program", "layout"),
    "inspect_native_instruction": ("facts", "instruction"),
    "inspect_native_data_type": ("facts", "data_type"),
    "resolve_native_call_targets": ("facts", "call_targets"),
}
# Operations answered from the loaded file alone; every other one needs the analysis.
LOADER_OPS = frozenset(
    {"list_documents", "list_segments", "list_strings", "search_strings", "list_names", "address_name", "binary_layout"}
)


class State:
    """The radare2 library directory, and the one loaded target with its function-level view."""

    libdir = ""
    program: Any = None
    code: Any = None
    facts: Any = None


STATE = State()

# radare2 maps the file it opens: truncating that file under it is a SIGBUS in the worker. A target up to this size
# is copied into the worker's private directory (checked against the SHA-256 it was opened with as it is copied),
# so radare2 reads the bytes that were hashed and nobody else can cut them; a larger one is read in place, and the
# client's check before every request refuses it once its size, inode or times moved.
PRIVATE_COPY_MAX_BYTES = 512 << 20


def _program() -> Any:
    return held(STATE.program, "radare2")


# The load request the client sends over the worker protocol: JSON (path, name, sha256, format).
def load(params: JSONObject, reporter: Reporter) -> Any:
    # Imported here: the engine modules load radare2's libraries, which only this process ever does.
    from rea_plugins.radare2.code import Code
    from rea_plugins.radare2.engine import Core
    from rea_plugins.radare2.facts import Facts
    from rea_plugins.radare2.program import Program

    reporter.progress("loading radare2")
    core = Core(STATE.libdir)
    reporter.progress("loading the binary")
    STATE.program = Program(
        core,
        pinned_copy(
            arg_str(params, "path", ""), arg_str(params, "sha256", ""), tempfile.gettempdir(), PRIVATE_COPY_MAX_BYTES
        ),
        arg_str(params, "name", ""),
        arg_str(params, "sha256", ""),
        arg_str(params, "format", ""),
    )
    STATE.code = Code(STATE.program)
    STATE.facts = Facts(STATE.code)
    return {"loaded": True, "pid": os.getpid(), "format": STATE.program.format, "architecture": STATE.program.arch}


def analyze(params: JSONObject, reporter: Reporter) -> Any:
    level = arg_str(params, "level", "aaa")
    if level not in ("aa", "aaa"):
        raise ReaError(
            "invalid_request",
            f"unknown radare2 analysis level {level!r}",
            details={"issues": [{"path": "level", "reason": "invalid_value", "message": "aa or aaa"}]},
        )
    return _program().analyze(level, reporter.progress)


def routes() -> dict[str, Route]:
    table: dict[str, Route] = {"ping": lambda _p, _r: {"pid": os.getpid()}, "load": load, "analyze": analyze}
    return {**table, **operation_routes(OPERATIONS, STATE, lambda _op, _reporter: _program())}


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--libr":
        STATE.libdir = argv[1]
    return serve(routes())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
