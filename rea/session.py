"""A session: the open target, its provider binding, the analysis run and the Evidence ledger."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import msgspec

from rea import evidence as ev_mod
from rea.annotations import AnnotationStore, default_store
from rea.context import CallContext, CancelSignal
from rea.errors import ReaError
from rea.evidence import AnalysisProfile, Authority, Evidence, ProviderIdentity, Subject
from rea.ledger import Ledger
from rea.providers import AnalysisClient, AnalysisProvider, OperationResult
from rea.registry import Registry
from rea.selection import Selection, alternatives_remediation, select
from rea.target import Target, identify


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    """The immutable provider binding of an open target."""

    provider: ProviderIdentity
    selection_source: str
    analysis_profile: AnalysisProfile
    selection_reason: str = ""
    usable_candidates: tuple[str, ...] = ()


class Session:
    """One per MCP connection or CLI invocation."""

    def __init__(self, registry: Registry, annotations: AnnotationStore | None = None) -> None:
        self.registry = registry
        self._annotations = annotations
        self.ledger = Ledger()
        self.target: Target | None = None
        self.binding: Binding | None = None
        self.run_id: str | None = None
        self._client: AnalysisClient | None = None
        self._provider: AnalysisProvider | None = None
        self._lock = threading.RLock()
        # Provider clients need not be thread-safe: operations on one session run one at a time.
        self._exec_lock = threading.Lock()
        # Signals of provider operations in flight: close_binary cancels them before it drains.
        self._active: set[CancelSignal] = set()
        self.lineage: list[dict[str, Any]] = []
        # Tools read and write per-session state of their family here (e.g. a navigation cursor).
        self.state: dict[str, Any] = {}
        # What the front end knows of the connection: protocol, client info and capabilities, settings.
        self.connection: dict[str, Any] = {}
        # How closing the previous target went, when the last open replaced one.
        self.previous_cleanup: dict[str, Any] | None = None

    @property
    def annotations(self) -> AnnotationStore:
        """The analyst's annotation store (shared by every connection; resolved from settings on first use)."""
        if self._annotations is None:
            self._annotations = default_store()
        return self._annotations

    @annotations.setter
    def annotations(self, store: AnnotationStore) -> None:
        self._annotations = store

    # -- target lifecycle ---------------------------------------------------------------

    def open(self, path: str, provider_id: str | None, ctx: CallContext) -> Selection:
        """Identify ``path``, select a provider, and bind it. The ledger is kept."""
        target = identify(path, ctx)
        selection = select(self.registry, target, provider_id)
        provider = self.registry.providers[selection.provider_id]
        d = provider.descriptor
        ident = ProviderIdentity(id=d.id, name=d.name, version=d.version)
        profile = ev_mod.make_profile(ident, provider.analysis_profile(target))
        ctx.check("opening target")
        with self._lock:
            had_client = self._client is not None
            # The operation lock is held across the whole swap: a concurrent call runs on the old client or the
            # new one, never sees the half-bound state between them.
            remaining, drained = self._drain_and_close_client(keep_lock=True)
            try:
                # Closing the previous target is part of this transition: what it left is reported, not dropped.
                self.previous_cleanup = (
                    None
                    if not had_client
                    else {"cleanup": "incomplete" if remaining else "complete", "resources": sorted(remaining)}
                )
                # A run id exists before any provider starts.
                self.run_id = "run_" + uuid.uuid4().hex
                self.target = target
                self._provider = provider
                self.binding = Binding(
                    provider=ident,
                    selection_source=selection.selection_source,
                    analysis_profile=profile,
                    selection_reason=selection.selection_reason,
                    usable_candidates=selection.usable_candidates,
                )
                try:
                    self._client = provider.open(target, self.run_id, ctx)
                except ReaError:
                    self._reset_target()
                    raise
                except Exception as exc:
                    self._reset_target()
                    raise ReaError(
                        "provider_unavailable",
                        f"provider {d.id} failed to open the target (an internal error of the provider plugin)",
                        details={"provider_id": d.id},
                    ) from exc
            finally:
                if drained:
                    self._exec_lock.release()
        return selection

    def close(self, drain_timeout: float = 30.0) -> list[str]:
        """Drain owned work, close the provider and clear the ledger; returns owned resource kinds left."""
        with self._lock:
            remaining, drained = self._drain_and_close_client(drain_timeout, keep_lock=True)
            try:
                self._reset_target()
            finally:
                if drained:
                    self._exec_lock.release()
            self.ledger.clear()
            self.state.clear()
            self.lineage.clear()
            return remaining

    def _drain_and_close_client(
        self, drain_timeout: float = 30.0, *, keep_lock: bool = False
    ) -> tuple[list[str], bool]:
        """Cancel provider operations in flight, wait for them, then close the client.

        Returns what was left and whether the operation lock was taken (kept held when ``keep_lock``).
        """
        for signal in list(self._active):
            signal.cancel()
        drained = self._exec_lock.acquire(timeout=drain_timeout)
        try:
            remaining = self._close_client()
        finally:
            if drained and not keep_lock:
                self._exec_lock.release()
        if not drained:
            remaining.append("provider-operation")
        return remaining, drained

    def _reset_target(self) -> None:
        # The run belongs to the binding: no target, no run (a failed open leaves none either).
        self.target = None
        self.binding = None
        self.run_id = None
        self._client = None
        self._provider = None

    def _close_client(self) -> list[str]:
        client, self._client = self._client, None
        if client is None:
            return []
        try:
            outcome = client.close()
            self.record_lineage(client.lineage())
        except Exception:
            return ["provider-session"]
        return list(outcome.remaining)

    # -- process lineage ----------------------------------------------------------------

    def record_lineage(self, observations: list[dict[str, Any]]) -> None:
        """Keep ownership observations of processes a tool or scenario driver started (and ended)."""
        with self._lock:
            self.lineage.extend({**o, "run_id": o.get("run_id", self.run_id)} for o in observations)

    def process_lineage(self) -> dict[str, Any]:
        """The contract's ``process_lineage``: ``not_observed``, or every retained snapshot in order."""
        snapshots = list(self.lineage) + (self.provider_lineage() if self.target is not None else [])
        return {"state": "snapshots", "snapshots": snapshots} if snapshots else {"state": "not_observed"}

    # -- provider access ----------------------------------------------------------------

    def provider_lineage(self) -> list[dict[str, Any]]:
        """Ownership observations from the live client (dynamic providers); never raises."""
        client = self._client
        if client is None:
            return []
        try:
            return list(client.lineage())
        except Exception as exc:
            return [{"status": "unavailable", "reason": f"lineage check failed: {exc}"}]

    @property
    def provider(self) -> AnalysisProvider | None:
        return self._provider

    def require_target(self) -> Target:
        if self.target is None:
            raise ReaError(
                "target_unavailable",
                "no binary is open",
                remediation="Call open_binary with a path first.",
                details={"reason": "no_target"},
            )
        return self.target

    def supports(self, operation: str) -> bool:
        return self._provider is not None and operation in self._provider.descriptor.operations

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        """Run one provider operation on the open target."""
        self.require_target()
        provider = self._provider
        if provider is None:
            self.require_target()  # closed since the check above: the same typed error, never an assertion
            raise ReaError("target_unavailable", "no binary is open", details={"reason": "no_target"})
        if operation not in provider.descriptor.operations:
            remediation, alternatives = alternatives_remediation(
                self.registry, (operation,), self.target, exclude=provider.descriptor.id
            )
            raise ReaError(
                "capability_unavailable",
                f"provider {provider.descriptor.id} does not offer {operation}",
                remediation=remediation,
                details={"operation": operation, "provider_id": provider.descriptor.id, **alternatives},
            )
        ctx.check(operation)
        self._active.add(ctx.signal)
        try:
            while not self._exec_lock.acquire(timeout=0.05):
                ctx.check(operation)
            try:
                ctx.check(operation)
                # Read under the lock: open and close swap them only while holding it.
                client, current = self._client, self._provider
                if client is None or current is None:
                    raise ReaError(
                        "target_unavailable",
                        f"the target was closed during {operation}",
                        remediation="Call open_binary again.",
                        details={"reason": "no_target"},
                    )
                provider = current
                if operation not in provider.descriptor.operations:
                    raise ReaError(
                        "capability_unavailable",
                        f"the target was reopened with provider "
                        f"{provider.descriptor.id}, which does not offer {operation}",
                        details={"operation": operation, "provider_id": provider.descriptor.id},
                    )
                result = client.execute(operation, params, ctx)
            finally:
                self._exec_lock.release()
        except ReaError:
            raise
        except Exception as exc:
            # A plugin bug: its text may expose internals, so the caller gets a plain statement.
            raise ReaError(
                "execution_failure",
                f"provider {provider.descriptor.id} failed in {operation} (an internal error of the provider plugin)",
                remediation="Retry, or reopen the target with another provider; report the plugin's "
                "error to its authors.",
                details={"operation": operation, "provider_id": provider.descriptor.id},
            ) from exc
        finally:
            self._active.discard(ctx.signal)
        ctx.check(operation)
        return result

    # -- Evidence -----------------------------------------------------------------------

    def subject_for(self, target: Target) -> Subject:
        return Subject(
            name=target.name,
            local_path=target.resolved_path,
            digest=ev_mod.Digest(sha256=target.sha256),
            size=target.size,
            format=target.format,
            architecture=target.architecture,
        )

    def evidence(
        self,
        operation: str,
        parameters: dict[str, Any],
        result: OperationResult,
        *,
        target: Target | None = None,
        provider: ProviderIdentity | None = None,
        analysis_profile: AnalysisProfile | None = None,
        links: list[str] | None = None,
        bound: bool = True,
        authority: Authority = "shipped-artifact",
    ) -> Evidence:
        """Build Evidence for a result; ``bound`` uses the open target's binding and profile."""
        if bound:
            tgt, binding = self.require_target(), self.binding
            if binding is None:  # closed concurrently: typed, never an assertion
                raise ReaError("target_unavailable", "no binary is open", details={"reason": "no_target"})
            provider = binding.provider
            analysis_profile = binding.analysis_profile
            target = tgt
        if provider is None:
            raise ValueError("an unbound Evidence needs a provider identity")
        return ev_mod.build(
            operation=operation,
            provider=provider,
            subject=self.subject_for(target) if target else None,
            analysis_profile=analysis_profile,
            parameters=parameters,
            normalized_result=result.normalized,
            raw_result=result.raw,
            confidence=result.confidence,
            authority=authority,
            limitations=result.limitations,
            locations=result.locations,
            evidence_links=links,
        )

    def resolve_evidence(self, value: Any, path: str = "evidence") -> Evidence:
        return self.ledger.resolve(value, path)
