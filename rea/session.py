"""A session: its open targets (each with a provider binding and an analysis run), the active one, the ledger."""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
import uuid
from collections import Counter
from collections import deque
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import msgspec

from rea import evidence as ev_mod
from rea.annotations import AnnotationStore
from rea.annotations import default_store
from rea.arguments import Arguments
from rea.config import integer_setting
from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.evidence import AnalysisProfile
from rea.evidence import Authority
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.fsnames import shown
from rea.ledger import LEDGER_MEMORY_MB
from rea.ledger import Ledger
from rea.process.memory import refused_allocation
from rea.process.memory import server_memory_exhausted
from rea.providers import AnalysisClient
from rea.providers import AnalysisProvider
from rea.providers import OperationResult
from rea.records import JSONObject
from rea.records import JSONValue
from rea.registry import Registry
from rea.selection import Selection
from rea.selection import alternatives_remediation
from rea.selection import select
from rea.target import Target
from rea.target import identify


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    """The immutable provider binding of an open target."""

    provider: ProviderIdentity
    selection_source: str
    analysis_profile: AnalysisProfile
    selection_reason: str = ""
    usable_candidates: tuple[str, ...] = ()


class OpenTarget:
    """One open target of a session: its binding, run, provider client and the lock its operations take."""

    def __init__(self, target_id: str, alias: str | None) -> None:
        self.target_id = target_id
        self.alias = alias
        self.target: Target | None = None
        self.binding: Binding | None = None
        self.run_id: str | None = None
        self.client: AnalysisClient | None = None
        self.provider: AnalysisProvider | None = None
        # Provider clients need not be thread-safe: operations on one target run one at a time.
        self.exec_lock = threading.Lock()
        # Signals of provider operations in flight: closing cancels them before it drains.
        self.active: set[CancelSignal] = set()

    def describe(self) -> JSONObject:
        """The target as binary_session lists it."""
        binding = self.binding
        return {
            "target_id": self.target_id,
            "alias": self.alias,
            "target": None if self.target is None else self.target.record(),
            "provider_id": None if binding is None else binding.provider.id,
            "run_id": self.run_id,
        }


MAX_OPEN_TARGETS = integer_setting(
    "REA_MAX_OPEN_TARGETS", 1, 1024, 16, "targets", "Most targets one session keeps open at once."
)
ALIAS_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_TARGET_ID = re.compile(r"^t[0-9]+$")
# Process lineage is kept bounded: every run adds a few snapshots (about 4.5 KB for a scenario), and a session that
# ran thousands kept them all and sent them all in binary_session until it failed. The newest LINEAGE_KEPT are kept,
# every one is counted by event and status, and binary_session shows the newest LINEAGE_SHOWN.
LINEAGE_KEPT = 256
LINEAGE_SHOWN = 32


class Toolsets(msgspec.Struct, kw_only=True):
    """A connection's toolsets: those it listed at its start, those there are, whether a call or enable_toolsets may
    add the others, and those it lists now (added to in place as it enables more)."""

    advertised: list[str]
    available: list[str]
    on_demand: bool
    enabled: list[str]


class ConnectionSettings(msgspec.Struct, kw_only=True):
    """The server's settings as one connection runs under them (binary_session reports them)."""

    max_response_bytes: int
    input_schema_profile: str
    result_presentation: str
    toolsets: Toolsets


class Connection(msgspec.Struct, kw_only=True):
    """What the front end knows of a connection: the protocol version, the client's info and the features its
    capabilities name (None until the MCP server has seen them; a CLI session has none), the least log level it
    asked for, and its settings."""

    protocol_version: str | None = None
    # The client's own description (name, version, ...): its JSON as the SDK dumped it.
    client_info: JSONObject | None = None
    client_features: list[str] | None = None
    log_level: str = "warning"
    settings: ConnectionSettings | None = None


class Session:
    """One per MCP connection or CLI invocation: open targets (one of them active), the ledger, the lineage."""

    def __init__(self, registry: Registry, annotations: AnnotationStore | None = None) -> None:
        self.registry = registry
        self._annotations = annotations
        self.ledger = Ledger(memory_bytes=int(LEDGER_MEMORY_MB.read()) << 20)
        self._targets: dict[str, OpenTarget] = {}
        self._active_id: str | None = None
        self._opened = 0
        # The target a call named (``target``), for the duration of that call; else the active one.
        self._selected: contextvars.ContextVar[OpenTarget | None] = contextvars.ContextVar("rea_target", default=None)
        self._lock = threading.RLock()
        # Process lineage snapshots: the contract's open JSON observations (rea.process.owned's observe).
        self.lineage: deque[JSONObject] = deque(maxlen=LINEAGE_KEPT)
        # Every snapshot recorded, kept or not, by event and status (the summary of what scrolled out).
        self._lineage_counts: Counter[str] = Counter()
        self._lineage_total = 0
        # Tools read and write per-session state of their family here (e.g. a navigation cursor): any Python
        # object a family keeps between calls, read back only by the family that wrote it, so Any.
        self.state: dict[str, Any] = {}
        self.connection = Connection()
        # How closing the previous target went, when the last open replaced one.
        self.previous_cleanup: JSONObject | None = None

    @property
    def annotations(self) -> AnnotationStore:
        """The analyst's annotation store (shared by every connection; resolved from settings on first use)."""
        if self._annotations is None:
            self._annotations = default_store()
        return self._annotations

    @annotations.setter
    def annotations(self, store: AnnotationStore) -> None:
        self._annotations = store

    # -- the current target ---------------------------------------------------------------

    def _current(self) -> OpenTarget | None:
        chosen = self._selected.get()
        if chosen is not None:
            return chosen
        return self._targets.get(self._active_id) if self._active_id is not None else None

    @property
    def target(self) -> Target | None:
        current = self._current()
        return None if current is None else current.target

    @property
    def binding(self) -> Binding | None:
        current = self._current()
        return None if current is None else current.binding

    @property
    def run_id(self) -> str | None:
        current = self._current()
        return None if current is None else current.run_id

    @property
    def provider(self) -> AnalysisProvider | None:
        current = self._current()
        return None if current is None else current.provider

    @property
    def _client(self) -> AnalysisClient | None:
        current = self._current()
        return None if current is None else current.client

    @property
    def target_id(self) -> str | None:
        current = self._current()
        return None if current is None else current.target_id

    def open_targets(self) -> list[OpenTarget]:
        """Every open target, in the order they were opened (the active one last opened or chosen)."""
        with self._lock:
            return list(self._targets.values())

    def find(self, ref: str, path: str = "target") -> OpenTarget:
        """The open target ``ref`` names: its target_id or its alias."""
        with self._lock:
            found = self._targets.get(ref) or next((t for t in self._targets.values() if t.alias == ref), None)
            known = [t.alias or t.target_id for t in self._targets.values()]
        if found is None:
            raise invalid_request(
                f"no open target is named {ref!r}",
                [issue(path, "invalid_value", "open targets: " + (", ".join(known) or "none"))],
            )
        return found

    def target_named(self) -> bool:
        """Whether the running call named its target (``target``), rather than running on the active one."""
        return self._selected.get() is not None

    @contextlib.contextmanager
    def using(self, ref: str | None) -> Iterator[None]:
        """Run the enclosed call on the target ``ref`` names (None: the active target)."""
        if ref is None:
            yield
            return
        token = self._selected.set(self.find(ref))
        try:
            yield
        finally:
            self._selected.reset(token)

    # -- target lifecycle ---------------------------------------------------------------

    def open(self, path: str, provider_id: str | None, ctx: CallContext, alias: str | None = None) -> Selection:
        """Identify ``path``, select a provider, bind it and make the target active. The ledger is kept.

        Without ``alias`` the active target is replaced (closed first); with one, the target opens beside the
        others (replacing only a target of the same alias)."""
        if alias is not None and (not ALIAS_PATTERN.match(alias) or _TARGET_ID.match(alias)):
            raise invalid_request(
                f"alias {alias!r} is not a valid target alias",
                [issue("alias", "invalid_format", "a letter, then letters, digits, _ . - (not t<number>)")],
            )
        target = identify(path, ctx)
        selection = select(self.registry, target, provider_id)
        provider = self.registry.providers[selection.provider_id]
        d = provider.descriptor
        ident = ProviderIdentity(id=d.id, name=d.name, version=d.version)
        profile = ev_mod.make_profile(ident, provider.analysis_profile(target))
        ctx.check("opening target")
        with self._lock:
            if alias is None:
                replaced = self._targets.get(self._active_id) if self._active_id is not None else None
            else:
                replaced = next((t for t in self._targets.values() if t.alias == alias), None)
            if replaced is None and len(self._targets) >= (limit := int(MAX_OPEN_TARGETS.read())):
                raise ReaError(
                    "resource_constraint",
                    f"{limit} targets are open, the most {MAX_OPEN_TARGETS.name} allows",
                    remediation="Close a target (close_binary with target) or raise the setting.",
                    details={"resource": "open_targets", "limit": limit, "setting": MAX_OPEN_TARGETS.name},
                )
            slot = replaced or self._new_slot(alias)
            had_client = slot.client is not None
            # The operation lock is held across the whole swap: a concurrent call runs on the old client or the
            # new one, never sees the half-bound state between them.
            remaining, drained = self._drain_and_close_client(slot, keep_lock=True)
            try:
                # Closing the previous target is part of this transition: what it left is reported, not dropped.
                self.previous_cleanup = (
                    None
                    if not had_client
                    else {"cleanup": "incomplete" if remaining else "complete", "resources": sorted(remaining)}
                )
                # A run id exists before any provider starts.
                slot.run_id = "run_" + uuid.uuid4().hex
                slot.target = target
                slot.provider = provider
                slot.binding = Binding(
                    provider=ident,
                    selection_source=selection.selection_source,
                    analysis_profile=profile,
                    selection_reason=selection.selection_reason,
                    usable_candidates=selection.usable_candidates,
                )
                self._targets[slot.target_id] = slot
                self._active_id = slot.target_id
                try:
                    slot.client = provider.open(target, slot.run_id, ctx)
                except ReaError:
                    self._forget(slot)
                    raise
                except Exception as exc:
                    self._forget(slot)
                    if refused_allocation(exc):
                        raise server_memory_exhausted(f"opening the target with {d.id}") from None
                    raise ReaError(
                        "provider_unavailable",
                        f"provider {d.id} failed to open the target (an internal error of the provider plugin)",
                        details={"provider_id": d.id},
                    ) from exc
            finally:
                if drained:
                    slot.exec_lock.release()
        return selection

    def activate(self, ref: str) -> None:
        """Make the open target ``ref`` names the active one (calls without ``target`` run on it)."""
        found = self.find(ref)
        with self._lock:
            self._active_id = found.target_id

    def _new_slot(self, alias: str | None) -> OpenTarget:
        self._opened += 1
        return OpenTarget(f"t{self._opened}", alias)

    def _forget(self, slot: OpenTarget) -> None:
        # The run belongs to the binding: no target, no run (a failed open leaves none either).
        slot.target = slot.binding = slot.run_id = slot.client = slot.provider = None
        self._targets.pop(slot.target_id, None)
        if self._active_id == slot.target_id:
            self._active_id = next(reversed(self._targets), None)

    def close(self, drain_timeout: float = 30.0, target: str | None = None) -> list[str]:
        """Close one target (``target``: its id or alias), or every target and then clear the ledger.

        Returns the owned resource kinds left."""
        with self._lock:
            slots = [self.find(target)] if target is not None else list(self._targets.values())
            remaining: list[str] = []
            for slot in slots:
                left, drained = self._drain_and_close_client(slot, drain_timeout, keep_lock=True)
                remaining += left
                try:
                    self._forget(slot)
                finally:
                    if drained:
                        slot.exec_lock.release()
            if target is None:
                # Plugin state that owns processes (debug sessions) ends with the session, before it is dropped.
                for value in list(self.state.values()):
                    closer = getattr(value, "close_with_session", None)
                    if callable(closer):
                        try:
                            remaining += list(closer())
                        except Exception:
                            remaining.append("plugin-state")
                self.ledger.clear()
                self.state.clear()
                self.lineage.clear()
                self._lineage_counts.clear()
                self._lineage_total = 0
            return sorted(set(remaining)) if len(slots) > 1 else remaining

    def _drain_and_close_client(
        self, slot: OpenTarget, drain_timeout: float = 30.0, *, keep_lock: bool = False
    ) -> tuple[list[str], bool]:
        """Cancel the target's provider operations in flight, wait for them, then close its client.

        Returns what was left and whether the operation lock was taken (kept held when ``keep_lock``).
        """
        for signal in list(slot.active):
            signal.cancel()
        drained = slot.exec_lock.acquire(timeout=drain_timeout)
        try:
            remaining = self._close_client(slot)
        finally:
            if drained and not keep_lock:
                slot.exec_lock.release()
        if not drained:
            remaining.append("provider-operation")
        return remaining, drained

    def _close_client(self, slot: OpenTarget) -> list[str]:
        client, slot.client = slot.client, None
        if client is None:
            return []
        try:
            outcome = client.close()
            self.record_lineage(client.lineage())
        except Exception:
            return ["provider-session"]
        return list(outcome.remaining)

    # -- process lineage ----------------------------------------------------------------

    def record_lineage(self, observations: Sequence[JSONObject]) -> None:
        """Keep ownership observations of processes a tool or scenario driver started (and ended)."""
        with self._lock:
            for o in observations:
                self.lineage.append({**o, "run_id": o.get("run_id", self.run_id)})
                self._lineage_counts[_lineage_key(o)] += 1
                self._lineage_total += 1

    def process_lineage(self, limit: int = LINEAGE_SHOWN) -> JSONObject:
        """The contract's ``process_lineage``: ``not_observed``, or a bounded summary: the newest ``limit``
        snapshots in order (the live provider's last), how many there were, and all of them counted by event."""
        with self._lock:
            kept = list(self.lineage)
            counts = Counter(self._lineage_counts)
            total = self._lineage_total
        live = self.provider_lineage() if self.target is not None else []
        for o in live:
            counts[_lineage_key(o)] += 1
        total += len(live)
        snapshots = (kept + live)[-limit:]
        if not snapshots:
            return {"state": "not_observed"}
        out: JSONObject = {"state": "snapshots", "snapshots": snapshots, "total": total}
        if total > len(snapshots):
            out["omitted"] = total - len(snapshots)
            out["counts"] = dict(sorted(counts.items()))
        return out

    # -- provider access ----------------------------------------------------------------

    def provider_lineage(self) -> list[JSONObject]:
        """Ownership observations from the live client (dynamic providers); never raises."""
        client = self._client
        if client is None:
            return []
        try:
            return list(client.lineage())
        except Exception as exc:
            return [{"status": "unavailable", "reason": f"lineage check failed: {exc}"}]

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
        provider = self.provider
        return provider is not None and operation in provider.descriptor.operations

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        """Run one provider operation on the current target (the one the call named, else the active one)."""
        self.require_target()
        slot = self._current()
        provider = None if slot is None else slot.provider
        if slot is None or provider is None:
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
        slot.active.add(ctx.signal)
        try:
            while not slot.exec_lock.acquire(timeout=0.05):
                ctx.check(operation)
            try:
                ctx.check(operation)
                # Read under the lock: open and close swap them only while holding it.
                client, current = slot.client, slot.provider
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
                slot.exec_lock.release()
        except ReaError:
            raise
        except Exception as exc:
            if refused_allocation(exc):
                raise server_memory_exhausted(operation) from None
            # A plugin bug: its text may expose internals, so the caller gets a plain statement.
            raise ReaError(
                "execution_failure",
                f"provider {provider.descriptor.id} failed in {operation} (an internal error of the provider plugin)",
                remediation="Retry, or reopen the target with another provider; report the plugin's "
                "error to its authors.",
                details={"operation": operation, "provider_id": provider.descriptor.id},
            ) from exc
        finally:
            slot.active.discard(ctx.signal)
        ctx.check(operation)
        return result

    # -- Evidence -----------------------------------------------------------------------

    def subject_for(self, target: Target) -> Subject:
        # Display-only fields: a file name that is not UTF-8 is shown escaped (JSON cannot carry its bytes).
        return Subject(
            name=shown(target.name),
            local_path=shown(target.resolved_path),
            digest=ev_mod.Digest(sha256=target.sha256),
            size=target.size,
            format=target.format,
            architecture=target.architecture,
        )

    def evidence(
        self,
        operation: str,
        parameters: Mapping[str, JSONValue],
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


def _lineage_key(observation: JSONObject) -> str:
    """How an omitted snapshot is counted: its event and status (``started/verified``)."""
    return f"{observation.get('event', 'snapshot')}/{observation.get('status', 'unknown')}"
