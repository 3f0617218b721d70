"""Provider selection: one parser and one policy for CLI --provider, REA_ANALYSIS_PROVIDER and open_binary."""

from __future__ import annotations

import os
from typing import Literal

import msgspec

from rea.errors import ReaError
from rea.providers import AnalysisProvider
from rea.providers import Availability
from rea.providers import TargetSupport
from rea.records import JSONObject
from rea.records import JSONValue
from rea.registry import Registry
from rea.registry import valid_provider_id
from rea.target import Target

ENV_VAR = "REA_ANALYSIS_PROVIDER"
SelectionSource = Literal["request", "environment", "auto"]


class Rejection(msgspec.Struct, frozen=True, kw_only=True):
    provider_id: str
    code: str
    reason: str
    # What the provider reported beside its reason (a version, a path it probed): its own facts, open JSON.
    diagnostics: JSONObject = {}


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """Target-free discovery entry: host availability, target support ``unknown``."""

    provider_id: str
    name: str
    version: str
    kind: str
    auto_priority: int
    availability: Availability
    target_support: TargetSupport
    formats: tuple[str, ...]
    operations: tuple[str, ...]


class Selection(msgspec.Struct, frozen=True, kw_only=True):
    provider_id: str
    selection_source: SelectionSource
    requested: str
    # Why this provider: for auto, the usable candidates and the priority that decided.
    selection_reason: str = ""
    usable_candidates: tuple[str, ...] = ()


def parse_provider_choice(value: object, *, setting: str = "provider_id") -> str:
    """Accept a concrete provider id or ``auto``; reject anything else (``""``, ``Auto``, ``"x "``)."""
    if isinstance(value, str) and (value == "auto" or valid_provider_id(value)):
        return value
    constraint = "'auto' or a provider id matching ^[a-z][a-z0-9-]*$ (at most 64 characters)"
    if setting == ENV_VAR:
        raise ReaError(
            "configuration_invalid",
            f"{ENV_VAR} must be {constraint} (got {value!r})",
            remediation=f"Set {ENV_VAR}=auto or a provider id from `rea providers list`, or unset it.",
            details={"settings": [{"setting": ENV_VAR, "constraint": constraint}]},
        )
    # An explicitly empty choice is an error too, never "unset".
    raise ReaError(
        "invalid_request",
        f"{setting} must be {constraint} (got {value!r})",
        remediation="Pass 'auto' or a provider id from binary_session.analysis_provider_candidates, or omit it.",
        details={
            "selection_reason": "invalid_options",
            "requested_provider_id": value if isinstance(value, str) else None,
            "issues": [{"path": setting, "reason": "invalid_format", "message": f"expected {constraint}"}],
        },
    )


def requested_choice(explicit: str | None) -> tuple[str, SelectionSource]:
    """Precedence: request or CLI flag, then the environment, then ``auto``."""
    if explicit is not None:
        choice = parse_provider_choice(explicit)
        return choice, "request" if choice != "auto" else "auto"
    env = os.environ.get(ENV_VAR)
    if env is not None:
        choice = parse_provider_choice(env, setting=ENV_VAR)
        return choice, "environment" if choice != "auto" else "auto"
    return "auto", "auto"


def _safe_availability(provider: AnalysisProvider) -> Availability:
    try:
        return provider.availability()
    except Exception as exc:  # a broken check must not take discovery down
        return Availability(
            status="unavailable",
            code="runtime_missing",
            reason=f"availability check failed (an internal error of the plugin): {exc}",
            remediation="Run `rea doctor` and report the plugin's error to its authors.",
        )


def _safe_support(provider: AnalysisProvider, target: Target) -> TargetSupport:
    try:
        return provider.target_support(target)
    except Exception as exc:
        return TargetSupport(
            status="unsupported",
            code="target_kind_unsupported",
            reason=f"target check failed (an internal error of the plugin): {exc}",
        )


def candidates(registry: Registry) -> list[Candidate]:
    """Target-free discovery, sorted by provider id; creates no analysis client."""
    out = []
    for pid in sorted(registry.providers):
        p = registry.providers[pid]
        d = p.descriptor
        out.append(
            Candidate(
                provider_id=pid,
                name=d.name,
                version=d.version,
                kind=d.kind,
                auto_priority=d.auto_priority,
                availability=_safe_availability(p),
                target_support=TargetSupport(status="unknown"),
                formats=d.formats,
                operations=d.operations,
            )
        )
    return out


def _selection_error(
    reason: str, message: str, requested: str, candidate_ids: list[str], rejections: list[Rejection], remediation: str
) -> ReaError:
    # Naming a provider that is not registered is a mistake in the request, not a missing capability.
    code = {
        "provider_unavailable": "provider_unavailable",
        "target_unsupported": "unsupported_target",
        "unknown_provider": "invalid_request",
    }.get(reason, "capability_unavailable")
    return ReaError(
        code,
        message,
        remediation=remediation,
        details={
            "selection_reason": reason,
            "requested_provider_id": requested,
            "candidate_ids": candidate_ids,
            "rejections": [msgspec.to_builtins(r) for r in rejections],
        },
    )


def select(registry: Registry, target: Target, explicit: str | None = None) -> Selection:
    """Choose the provider for ``target``. Never falls back to another provider."""
    choice, source = requested_choice(explicit)
    ids = sorted(registry.providers)
    if choice != "auto":
        provider = registry.providers.get(choice)
        if provider is None:
            raise _selection_error(
                "unknown_provider",
                f"no provider with id {choice!r} is registered",
                choice,
                ids,
                [],
                f"Use one of: {', '.join(ids) or '(none)'}; `rea providers list` shows them.",
            )
        avail = _safe_availability(provider)
        if avail.status != "available":
            raise _selection_error(
                "provider_unavailable",
                f"provider {choice!r} is unavailable: {avail.reason}",
                choice,
                [choice],
                [Rejection(provider_id=choice, code=avail.code or "not_configured", reason=avail.reason)],
                avail.remediation or "Run `rea doctor`.",
            )
        support = _safe_support(provider, target)
        if support.status == "unsupported":
            raise _selection_error(
                "target_unsupported",
                f"provider {choice!r} does not support this target: {support.reason}",
                choice,
                [choice],
                [
                    Rejection(
                        provider_id=choice, code=support.code or "target_format_unsupported", reason=support.reason
                    )
                ],
                "Choose another provider (`rea providers list`) or use provider_id 'auto'.",
            )
        how = "the request" if source == "request" else f"{ENV_VAR}"
        return Selection(
            provider_id=choice,
            selection_source=source,
            requested=choice,
            selection_reason=f"{choice} was named by {how}; no other provider is considered",
            usable_candidates=(choice,),
        )

    usable: list[AnalysisProvider] = []
    rejections: list[Rejection] = []
    supporting_but_unavailable: list[str] = []
    for pid in ids:
        provider = registry.providers[pid]
        support = _safe_support(provider, target)
        if support.status == "unsupported":
            rejections.append(
                Rejection(provider_id=pid, code=support.code or "target_format_unsupported", reason=support.reason)
            )
            continue
        avail = _safe_availability(provider)
        if avail.status != "available":
            supporting_but_unavailable.append(pid)
            rejections.append(Rejection(provider_id=pid, code=avail.code or "not_configured", reason=avail.reason))
            continue
        usable.append(provider)
    if not usable:
        if supporting_but_unavailable:
            raise _selection_error(
                "provider_unavailable",
                f"the providers that read this {target.format} target are unavailable: "
                f"{', '.join(supporting_but_unavailable)}",
                "auto",
                supporting_but_unavailable,
                rejections,
                "Run `rea doctor` and install one of them.",
            )
        raise _selection_error(
            "target_unsupported",
            f"no registered provider reads this {target.format} target"
            + (" (it is not a recognized binary format)" if target.format == "file" else ""),
            "auto",
            [],
            rejections,
            "Choose a binary in a supported format (`rea providers list` shows each provider's formats).",
        )
    top = max(p.descriptor.auto_priority for p in usable)
    best = sorted(p.descriptor.id for p in usable if p.descriptor.auto_priority == top)
    if len(best) > 1:
        raise _selection_error(
            "ambiguous",
            f"auto selection is ambiguous between {', '.join(best)} (equal auto_priority {top})",
            "auto",
            best,
            rejections,
            f"Pass provider_id explicitly: one of {', '.join(best)}.",
        )
    ranked = ", ".join(
        f"{p.descriptor.id} ({p.descriptor.auto_priority})"
        for p in sorted(usable, key=lambda p: (-p.descriptor.auto_priority, p.descriptor.id))
    )
    return Selection(
        provider_id=best[0],
        selection_source="auto",
        requested="auto",
        selection_reason=f"auto: {best[0]} has the highest auto_priority ({top}) of the usable candidates: {ranked}",
        usable_candidates=tuple(sorted(p.descriptor.id for p in usable)),
    )


def alternatives(
    registry: Registry, operations: tuple[str, ...] | list[str], target: Target | None, exclude: str | None = None
) -> tuple[list[str], list[tuple[str, str]]]:
    """Providers offering every one of ``operations``: (usable here for ``target``, [(id, how to get it)])."""
    usable: list[str] = []
    installable: list[tuple[str, str]] = []
    for pid in sorted(registry.providers):
        provider = registry.providers[pid]
        if pid == exclude or not all(op in provider.descriptor.operations for op in operations):
            continue
        if target is not None and _safe_support(provider, target).status == "unsupported":
            continue
        avail = _safe_availability(provider)
        if avail.status == "available":
            usable.append(pid)
        elif avail.code not in ("unsupported_host",) and avail.remediation:
            installable.append((pid, avail.remediation))
    return usable, installable


def alternatives_remediation(
    registry: Registry, operations: tuple[str, ...] | list[str], target: Target | None, exclude: str | None = None
) -> tuple[str, dict[str, JSONValue]]:
    """A remediation naming only providers usable here, plus how to install the ones that would be."""
    usable, installable = alternatives(registry, operations, target, exclude)
    parts = []
    if usable:
        parts.append(f"Reopen the target with provider_id one of: {', '.join(usable)}.")
    for pid, how in installable:
        parts.append(f"{pid} would offer it: {how}")
    if not parts:
        parts.append(
            "No provider on this host offers " + ", ".join(operations) + " for this target; "
            "`rea providers list` shows what is installed."
        )
    return " ".join(parts), {
        "providers_with_it": usable,
        "installable_providers": [{"provider_id": p, "remediation": h} for p, h in installable],
    }
