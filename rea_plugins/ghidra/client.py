"""The Ghidra client: binds at open, starts the worker on the first query, and bounds every phase.

Startup (worker and JVM start, import, default auto-analysis, readiness) has its own deadline,
REA_GHIDRA_STARTUP_TIMEOUT_MS. While it is pending, the caller gets a waiting notification every ten seconds
giving the elapsed waiting time; they stop when startup settles or the caller cancels. A failed or
interrupted startup costs the worker (and its JVM): the next query starts a fresh one, and close_binary
releases whatever is left.
"""

from __future__ import annotations

import os

from rea.plugin import OPERATIONS
from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import OperationResult
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import WorkerChannel
from rea.plugin import WorkerClient
from rea.plugin import python_worker_spec
from rea.plugin import verify_unchanged
from rea_plugins.ghidra.install import Installation
from rea_plugins.ghidra.settings import DECOMPILE
from rea_plugins.ghidra.settings import QUERY
from rea_plugins.ghidra.settings import STARTUP
from rea_plugins.ghidra.settings import TEST_PREFIX
from rea_plugins.ghidra.settings import Limits

RESOURCE = "ghidra-worker"
WAITING_INTERVAL_S = 10.0
STARTUP_PHASE = "startup (import, default auto-analysis, worker readiness)"
# The decompiler enforces its own per-call deadline; the request allows for starting its native process too.
DECOMPILE_MARGIN_S = 10.0
RECOVERY = (
    "To retry on this connection: close_binary, then open_binary with the same path and provider_id "
    "'ghidra', then the query with a longer client deadline; rea never switches providers on its own."
)
_LIMITATIONS = {
    "list_segments": [
        "Ghidra models memory blocks (sections, and segment parts no section covers), so every entry is kind section."
    ],
    "procedure_pseudo_code": [
        "Pseudo code is Ghidra's decompiler output (DecompInterface): a reading aid, not compilable source."
    ],
}


def waiting_message(elapsed_s: float) -> str:
    """The waiting notification: elapsed waiting time only (no engine progress is claimed)."""
    return (
        f"ghidra: waiting for startup, {int(elapsed_s)} s elapsed (import, default auto-analysis and worker "
        "readiness may still be pending)"
    )


def worker_spec(installation: Installation | None, fake_worker: str | None) -> ProcessSpec:
    """The worker's process: the pyghidra worker, or (tests only) the fake engine executable."""
    if fake_worker is not None:
        env = {k: v for k, v in os.environ.items() if k.startswith(TEST_PREFIX)}
        return ProcessSpec(
            argv=(fake_worker,),
            resource=RESOURCE,
            owner="ghidra",
            env={"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", **env},
        )
    assert installation is not None
    jdk = installation.jdk.home
    # JAVA_HOME_OVERRIDE makes pyghidra use this JDK instead of searching with a JVM of its own.
    return python_worker_spec(
        "rea_plugins.ghidra.worker",
        resource=RESOURCE,
        owner="ghidra",
        env={"GHIDRA_INSTALL_DIR": installation.install_dir, "JAVA_HOME": jdk, "JAVA_HOME_OVERRIDE": jdk},
    )


class GhidraClient(WorkerClient):
    """One target bound to Ghidra; the engine starts lazily and is never replaced by another provider."""

    def __init__(
        self, target: Target, run_id: str, limits: Limits, spec: ProcessSpec, installation: Installation | None
    ) -> None:
        self.target = target
        self.run_id = run_id
        self.limits = limits
        self.installation = installation
        self.channel = WorkerChannel(spec, label="ghidra", grace_s=limits.grace_ms / 1000)
        self._ready = 0  # the worker generation whose program is imported and analysed

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        self.offered(operation, OPERATIONS, "ghidra")
        # A rewritten target is refused, never imported or read by Ghidra under the SHA-256 it was opened with.
        verify_unchanged(self.target, ctx=ctx)
        generation = self.channel.ensure_started()
        if self._ready != generation:
            self._startup(ctx)
            self._ready = generation
        if operation == "procedure_pseudo_code":
            reply = self.channel.request(
                operation,
                params,
                ctx,
                deadline_s=self.limits.decompile_ms / 1000 + DECOMPILE_MARGIN_S,
                phase=f"decompiling {params.get('procedure')}",
                announce=True,
                timeout_remediation=f"Raise {DECOMPILE.name} or read procedure_assembly instead; the next query "
                "starts a fresh Ghidra worker.",
            )
        else:
            reply = self.channel.request(
                operation,
                params,
                ctx,
                deadline_s=self.limits.query_ms / 1000,
                phase=operation,
                timeout_remediation=f"Raise {QUERY.name} or narrow the request; the next query starts a fresh "
                "Ghidra worker (with its own startup).",
            )
        normalized = reply.result()
        return OperationResult.located(normalized, reply.raw_result(), list(_LIMITATIONS.get(operation, [])))

    def _startup(self, ctx: CallContext) -> None:
        t = self.target
        params = {
            "path": t.resolved_path,
            "name": t.name,
            "sha256": t.sha256,
            "format": t.format,
            "architecture": t.architecture,
            "max_heap_mb": self.limits.max_heap_mb,
            "decompile_timeout_ms": self.limits.decompile_ms,
            "install_dir": self.installation.install_dir if self.installation else "",
        }
        try:
            self.channel.request(
                "start",
                params,
                ctx,
                deadline_s=self.limits.startup_ms / 1000,
                phase=STARTUP_PHASE,
                announce=True,
                heartbeat_s=WAITING_INTERVAL_S,
                heartbeat=waiting_message,
            )
        except ReaError as exc:
            raise self._startup_error(exc) from None

    def _startup_error(self, exc: ReaError) -> ReaError:
        """The first query's report of a failed startup: typed, with the remediation for this failure."""
        ms = self.limits.startup_ms
        details = {**exc.details, "provider_id": "ghidra", "phase": "startup"}
        if exc.code == "provider_timeout":
            return ReaError(
                "provider_timeout",
                f"Ghidra did not become ready within {ms} ms ({STARTUP_PHASE})",
                remediation=f"Raise {STARTUP.name} (now {ms} ms) and restart rea, or analyze a smaller target. "
                + RECOVERY,
                details={**details, "timeout_ms": ms, "setting": STARTUP.name},
            )
        if exc.code == "provider_unavailable" and "exit_status" in exc.details:
            status = exc.details.get("signal") or f"status {exc.details.get('exit_status')}"
            return ReaError(
                "provider_unavailable",
                f"the Ghidra worker exited during startup ({status})",
                remediation="Run `rea doctor` (GHIDRA_INSTALL_DIR, the JDK, pyghidra) and check the host's memory "
                "for the JVM (REA_GHIDRA_MAX_HEAP_MB); the next query starts a fresh worker. " + RECOVERY,
                details=details,
            )
        if exc.code == "cancelled":
            return exc
        return ReaError(exc.code, exc.message, remediation=exc.remediation, details=details)
