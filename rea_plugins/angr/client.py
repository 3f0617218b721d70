"""The angr analysis client: one worker in an owned process (``rea.process``), started on the first query.

Every engine-side file (angr's runtime database, caches) goes to the worker's private directory, never
beside the target; the kernel removes it when the worker ends.
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
from rea_plugins.angr.options import Timeouts
from rea_plugins.angr.worker import LOADER_OPS
from rea_plugins.angr.worker import OPERATIONS

RESOURCE = "angr-worker"
TIMEOUT_REMEDIATION = (
    "Retry with a longer deadline (REA_ANGR_*_TIMEOUT_MS) or a smaller request; the next "
    "query starts a fresh angr worker."
)
_LIMITATIONS = {
    "list_procedures": [
        "Procedures are recovered by angr's CFGFast heuristics; alignment padding and angr's "
        "extern SimProcedures are omitted."
    ],
    "procedure_callees": [
        "A computed call site is listed with address null (its target is computed at run "
        "time) and once more per target angr's resolvers recovered, with kind indirect."
    ],
    "procedure_pseudo_code": ["Pseudo code is angr's decompiler output: a reading aid, not compilable source."],
}


class AngrClient(WorkerClient):
    """Runs contract operations in a worker it owns; loads the target and builds the CFG once per worker."""

    timeout_remediation = TIMEOUT_REMEDIATION

    def __init__(self, target: Target, run_id: str, timeouts: Timeouts) -> None:
        self.target = target
        self.run_id = run_id
        self.timeouts = timeouts
        spec = python_worker_spec(
            "rea_plugins.angr.worker",
            resource=RESOURCE,
            owner="angr",
            env={"RTDB_BASE": "{private}/cache"},
            address_space_bytes=timeouts.address_space_mb << 20,
            memory_setting="REA_ANGR_MEMORY_LIMIT_MB",
        )
        self.channel = WorkerChannel(spec, label="angr", grace_s=timeouts.grace_ms / 1000)

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        self.offered(operation, OPERATIONS, "angr")
        t = self.timeouts
        # Before every request, so before every worker (re)start: a rewritten target is refused, never loaded or
        # read by the engine under the SHA-256 it was opened with.
        verify_unchanged(self.target, ctx=ctx)
        load = {"path": self.target.resolved_path, "name": self.target.name, "sha256": self.target.sha256}
        self.ready("load", load, ctx, t.load_ms, "starting the worker and loading the binary")
        if operation not in LOADER_OPS:
            self.ready("cfg", {}, ctx, t.cfg_ms, "building CFG")
        if operation == "procedure_pseudo_code":
            reply = self.request(
                operation, params, ctx, t.decompile_ms, f"decompiling {params.get('procedure')}", announce=True
            )
        else:
            reply = self.request(operation, params, ctx, t.query_ms, operation)
        normalized = reply.result()
        raw = reply.raw_result()
        limitations = list(_LIMITATIONS.get(operation, []))
        if isinstance(raw, dict) and raw.get("address_delta") not in (None, "0x0"):
            limitations.append(
                f"angr mapped this position-independent image {raw['address_delta']} above its "
                "link-time base; addresses and generated names in the pseudo code were moved back to "
                "link time (a number that only looks like an address inside the image moves too)."
            )
        if isinstance(raw, dict) and isinstance(raw.get("user_types"), dict):
            limitations.append("decompiled with the analyst's types and prototypes (angr's prototypes replaced)")
            limitations.extend(str(p) for p in raw["user_types"].get("problems") or [])
        return OperationResult.located(normalized, raw, limitations)
