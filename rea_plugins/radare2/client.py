"""The radare2 analysis client: one worker in an owned process (``rea.process``), started on the first query.

radare2 runs in that worker through its C library; a crash, a hang or a memory storm there costs one request
(the next starts a fresh worker), never the server. Engine-side files go to the worker's private directory.
"""

from __future__ import annotations

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import OperationResult
from rea.plugin import Target
from rea.plugin import WorkerChannel
from rea.plugin import WorkerClient
from rea.plugin import python_worker_spec
from rea.plugin import verify_unchanged
from rea_plugins.radare2.options import Limits
from rea_plugins.radare2.worker import LOADER_OPS
from rea_plugins.radare2.worker import OPERATIONS

RESOURCE = "radare2-worker"
TIMEOUT_REMEDIATION = (
    "Retry with a longer deadline (REA_RADARE2_*_TIMEOUT_MS), a lighter analysis "
    "(REA_RADARE2_ANALYSIS=aa) or a smaller request; the next query starts a fresh radare2 worker."
)
_LIMITATIONS = {
    "list_procedures": [
        "Procedures are radare2's functions after its analysis, plus import stubs and unwind-table "
        "starts given to it; size and end cover the blocks that start before the next procedure."
    ],
    "procedure_info": [
        "signature is radare2's argument recovery without type libraries (the r2libr wheel ships none); "
        "calling_convention is the ABI of the format and architecture."
    ],
    "procedure_blocks": [
        "radare2 may give a function blocks it reached by jumping elsewhere (shared tails); "
        "they are listed here though they lie outside the procedure's extent."
    ],
    "procedure_callees": ["A computed call site radare2 could not resolve is listed with address null, kind indirect."],
    "binary_layout": ["Mitigations are radare2's binary info (ij): CET and BTI are not read; RELRO only for ELF."],
    "procedure_pseudo_code": [
        "This is radare2's pseudo-C (pdc): the disassembly rendered block by block in C-like "
        "syntax, with gotos and registers; not a decompiler's C, and not compilable."
    ],
}


class Radare2Client(WorkerClient):
    """Runs contract operations in a worker it owns; loads the target and analyses it once per worker."""

    timeout_remediation = TIMEOUT_REMEDIATION

    def __init__(self, target: Target, run_id: str, limits: Limits, libdir: str) -> None:
        self.target = target
        self.run_id = run_id
        self.limits = limits
        spec = python_worker_spec(
            "rea_plugins.radare2.worker",
            resource=RESOURCE,
            owner="radare2",
            env={"LD_LIBRARY_PATH": libdir},
            address_space_bytes=limits.address_space_mb << 20,
            memory_setting="REA_RADARE2_MEMORY_LIMIT_MB",
            args=("--libr", libdir),
        )
        self.channel = WorkerChannel(spec, label="radare2", grace_s=limits.grace_ms / 1000)

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        self.offered(operation, OPERATIONS, "radare2")
        lim = self.limits
        # Before every request, so before every worker (re)start: a rewritten target is refused, never loaded or
        # read by the engine under the SHA-256 it was opened with.
        verify_unchanged(self.target, ctx=ctx)
        t = self.target
        load = {"path": t.resolved_path, "name": t.name, "sha256": t.sha256, "format": t.format}
        self.ready("load", load, ctx, lim.load_ms, "starting the worker and loading the binary")
        if operation not in LOADER_OPS:
            self.ready("analyze", {"level": lim.analysis}, ctx, lim.analysis_ms, f"analysis ({lim.analysis})")
        reply = self.request(
            operation, params, ctx, lim.query_ms, operation, announce=operation == "procedure_pseudo_code"
        )
        normalized = reply.result()
        raw = reply.raw_result()
        limitations = list(_LIMITATIONS.get(operation, []))
        if isinstance(raw, dict) and isinstance(raw.get("user_types"), dict):
            # What radare2 refused of the analyst's types (td, afs): pdc renders registers either way.
            limitations.extend(str(p) for p in raw["user_types"].get("problems") or [])
        return OperationResult.located(normalized, raw, limitations)
