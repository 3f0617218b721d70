"""The analysis-provider plugin kind: descriptor, availability, target support and client protocol."""

from __future__ import annotations

import abc
from typing import Any
from typing import Literal

import msgspec

from rea.arguments import Arguments
from rea.context import CallContext
from rea.evidence import Location
from rea.evidence import Parameters
from rea.evidence import as_object
from rea.records import JSONObject
from rea.target import Target

ProviderKind = Literal["static", "deep", "dynamic"]

# Fixed rejection codes for availability and target-support checks.
REJECTION_CODES = frozenset(
    {
        "not_configured",
        "executable_missing",
        "runtime_missing",
        "unsupported_host",
        "unsupported_version",
        "target_kind_unsupported",
        "target_format_unsupported",
        "architecture_unsupported",
        "target_role_unsupported",
        "open_options_invalid",
        "version_unresolved",
    }
)


class ProviderDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    """What a provider declares about itself; nothing here starts an engine."""

    id: str
    name: str
    version: str
    kind: ProviderKind
    formats: tuple[str, ...]
    architectures: tuple[str, ...]
    operations: tuple[str, ...]
    # Higher wins under ``auto``; a tie at the top is an ``ambiguous`` selection error.
    auto_priority: int
    description: str = ""


class Feature(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An optional part of an available provider that can be missing on its own (the native provider's decompiler
    on an interpreter that cannot load it): `rea doctor` and `rea providers` report each one."""

    name: str
    status: Literal["available", "unavailable"]
    reason: str = ""
    remediation: str | None = None


class Availability(msgspec.Struct, frozen=True, kw_only=True):
    status: Literal["available", "unavailable"]
    code: str | None = None
    reason: str = ""
    remediation: str | None = None
    features: tuple[Feature, ...] = ()

    @classmethod
    def ok(cls, reason: str = "ready", features: tuple[Feature, ...] = ()) -> Availability:
        return cls(status="available", reason=reason, features=features)

    @classmethod
    def missing(cls, code: str, reason: str, remediation: str) -> Availability:
        assert code in REJECTION_CODES, code
        return cls(status="unavailable", code=code, reason=reason, remediation=remediation)


class TargetSupport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Whether a provider reads a target; ``code`` and ``reason`` say why not (omitted when there is nothing to say)."""

    status: Literal["supported", "unsupported", "unknown"]
    code: str | None = None
    reason: str = ""


class OperationResult(msgspec.Struct, kw_only=True):
    """What a provider returns for one operation; the kernel wraps it into Evidence."""

    normalized: Any
    raw: Any = None
    limitations: list[str] = msgspec.field(default_factory=list)
    locations: list[Location] = msgspec.field(default_factory=list)
    confidence: Literal["observed", "derived", "inferred"] = "observed"

    @classmethod
    def located(cls, normalized: Any, raw: Any = None, limitations: list[str] | None = None) -> OperationResult:
        """An engine's answer, located at the address it is about (a result with a top-level ``address``)."""
        top = as_object(normalized)
        address = top.get("address") if isinstance(top, dict) else None
        return cls(
            normalized=normalized,
            raw=raw,
            limitations=limitations or [],
            locations=[{"address": address}] if isinstance(address, str) else [],
        )


class CloseOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Owned resource kinds that could not be released (empty when cleanup is complete)."""

    remaining: tuple[str, ...] = ()
    reason: str = ""


class AnalysisClient(abc.ABC):
    """A provider's live session on one target. Created by ``AnalysisProvider.open``."""

    @abc.abstractmethod
    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        """Run one declared operation; raise ``ReaError`` on failure."""

    def close(self) -> CloseOutcome:
        """Release every owned resource (engine, worker, temp files)."""
        return CloseOutcome()

    def lineage(self) -> list[JSONObject]:
        """Ownership observations of started processes (dynamic providers)."""
        return []


class AnalysisProvider(abc.ABC):
    """An analysis engine behind rea's one interface."""

    descriptor: ProviderDescriptor

    @abc.abstractmethod
    def availability(self) -> Availability:
        """Host check: side-effect free, starts no engine."""

    def target_support(self, target: Target) -> TargetSupport:
        """Whether this provider supports ``target``: side-effect free, from declared formats."""
        d = self.descriptor
        if target.format not in d.formats:
            return TargetSupport(
                status="unsupported",
                code="target_format_unsupported",
                reason=f"{d.id} reads {', '.join(d.formats)}, not {target.format}",
            )
        if target.architecture is not None and d.architectures and target.architecture not in d.architectures:
            return TargetSupport(
                status="unsupported",
                code="architecture_unsupported",
                reason=f"{d.id} supports {', '.join(d.architectures)}, not {target.architecture}",
            )
        return TargetSupport(status="supported", reason="format and architecture supported")

    def analysis_profile(self, target: Target) -> Parameters:
        """Parameters that shape this provider's results; part of Evidence identity."""
        return {}

    def prestart(self) -> None:  # noqa: B027 - optional: most providers start nothing ahead of time
        """Start this provider's own processes ahead of the first open, as ``rea serve`` starts; never blocks, and
        loads nothing into the server's process (the spawn is all it may cost there: see ``rea.warmup``)."""

    def prewarm(self) -> None:  # noqa: B027 - optional: most providers start nothing ahead of time
        """Start cheap shared machinery ahead of the first open (called once by ``rea serve``, after its first
        tools/list); never blocks."""

    @abc.abstractmethod
    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        """Create the client (``ctx`` carries the open request's cancellation). Lazy engines start later."""
