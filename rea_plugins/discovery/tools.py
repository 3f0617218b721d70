"""``binary_session``: identity, tool availability, provider candidates, binding, run and lineage (registered by
the discovery plugin, ``rea_plugins.discovery``)."""

from __future__ import annotations

import functools
import os
import sys
from importlib import metadata
from typing import TYPE_CHECKING
from typing import Any

import msgspec

from rea.plugin import NEGOTIATED_FEATURES
from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Paged
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import ToolMode
from rea.plugin import __version__
from rea.plugin import arg_int
from rea.plugin import arg_str

if TYPE_CHECKING:
    from rea.plugin import Session
    from rea.plugin import ToolEntry

# Tools in one page of binary_session's detail "tools".
TOOL_PAGE = 100


@functools.cache
def _sdk_version() -> str | None:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


def server_path() -> str:
    return os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else sys.executable


def _missing_features(session: Session, features: tuple[str, ...]) -> list[str]:
    negotiated = set(session.connection.client_features or [])
    return [f for f in features if f in NEGOTIATED_FEATURES and f not in negotiated]


class ModeAvailability(Record):
    """Whether one mode of a tool can be called now."""

    name: str
    description: str
    available: bool
    reason: str
    requires_arguments: list[str]
    # Said only when the bound provider lacks an operation the mode needs.
    remediation: str | None = None


class ClientRequirements(Record):
    required: list[str]
    optional: list[str]
    missing: list[str]


class ToolAvailability(Record):
    """Whether one tool can be called now, and what to do when it cannot."""

    name: str
    family: str
    toolset: str
    available: bool
    reason: str
    remediation: str
    client_requirements: ClientRequirements
    effects: ToolEffects
    annotations: dict[str, bool]
    modes: list[ModeAvailability] | None = None


class UnavailableGroup(Record):
    reason: str
    remediation: str
    tools: list[str]


class AvailabilitySummary(Record):
    counts: dict[str, int]
    unavailable: list[UnavailableGroup]


class AlignmentCheck(Record):
    field: str
    # As the caller gave it (any JSON: the input schema asks for a string, this reports it back as given).
    expected: JSONValue
    actual: str
    matches: bool


class Named(Record):
    name: str
    version: str | None


class ServerProcess(Record):
    name: str
    path: str
    pid: int
    python: str


class Protocol(Record):
    version: str | None
    # The client's own initialize info, as it sent it (its JSON, not rea's).
    client: JSONValue


class Alignment(Record):
    state: str
    checks: list[AlignmentCheck]


class ServerIdentity(Record):
    package: Named
    server: ServerProcess
    sdk: Named
    protocol: Protocol
    catalog_digest: str
    tool_count: int
    alignment: Alignment


class AnalysisRun(Record):
    run_id: str | None
    # The kernel's lineage record of the owned processes (its JSON).
    process_lineage: JSONObject


class Plugins(Record):
    loaded: list[str]
    # The kernel's records of the plugins that failed to load, as JSON.
    broken: list[JSONObject]


class SessionReport(Record):
    """binary_session's answer. The target, open targets, settings, binding and provider candidates are the kernel's
    records, carried as the JSON it gives them."""

    server_identity: ServerIdentity
    settings: JSONObject
    target: JSONObject | None
    open_targets: list[JSONObject] | None = None
    active_target_id: str | None = None
    analysis_provider_binding: JSONObject | None
    analysis_provider_candidates: list[JSONObject]
    analysis_run: AnalysisRun
    retained_evidence_count: int
    availability_summary: AvailabilitySummary
    plugins: Plugins
    tool_availability: list[ToolAvailability] | None = None
    tool_page: Paged | None = None


def _mode(session: Session, tool: ToolDef | ToolEntry, mode: ToolMode) -> ModeAvailability:
    available, reason, remediation = True, "available", None
    if tool.requires_target and session.target is None:
        available, reason = False, "target_required"
    elif session.provider is not None and any(not session.supports(op) for op in mode.requires_operations):
        lacking = [op for op in mode.requires_operations if not session.supports(op)]
        available, reason = False, "provider_missing"
        remediation = f"the bound provider does not offer {', '.join(lacking)}"
    return ModeAvailability(
        name=mode.name,
        description=mode.description,
        available=available,
        reason=reason,
        requires_arguments=list(mode.requires_arguments),
        remediation=remediation,
    )


def _availability(session: Session, tool: ToolDef | ToolEntry) -> ToolAvailability:
    missing_features = _missing_features(session, tool.client_features_required)
    available, reason, remediation = True, "available", ""
    if missing_features:
        available, reason = False, "client_capability_missing"
        remediation = f"Use a client that negotiates: {', '.join(missing_features)}."
    elif tool.requires_target and session.target is None:
        available, reason, remediation = False, "target_required", "Call open_binary with a path first."
    elif tool.requires_operations and session.provider is not None:
        lacking = [op for op in tool.requires_operations if not session.supports(op)]
        if lacking:
            available, reason = False, "provider_missing"
            from rea.plugin import alternatives_remediation

            remediation, _ = alternatives_remediation(
                session.registry, tool.requires_operations, session.target, exclude=session.provider.descriptor.id
            )
    elif tool.requires_operations and not any(
        all(op in p.descriptor.operations for op in tool.requires_operations)
        for p in session.registry.providers.values()
    ):
        available, reason = False, "provider_missing"
        remediation = "Install a provider plugin that offers " + ", ".join(tool.requires_operations) + "."
    return ToolAvailability(
        name=tool.name,
        family=tool.family,
        toolset=tool.toolset_id,
        available=available,
        reason=reason,
        remediation=remediation,
        client_requirements=ClientRequirements(
            required=list(tool.client_features_required),
            optional=list(tool.client_features_optional),
            missing=missing_features + _missing_features(session, tool.client_features_optional),
        ),
        effects=tool.effects,
        annotations=tool.effects.annotations(),
        modes=[_mode(session, tool, m) for m in tool.modes] if tool.modes else None,
    )


def _settings(session: Session) -> JSONObject:
    """The connection's settings; its enabled toolsets only once they differ from those it started with."""
    # The kernel's record of the connection's settings, reported as the JSON it encodes to.
    kept = session.connection.settings
    settings: JSONObject = {} if kept is None else msgspec.to_builtins(kept)
    toolsets = settings.get("toolsets")
    if isinstance(toolsets, dict) and toolsets.get("enabled") == toolsets.get("advertised"):
        return {**settings, "toolsets": {k: v for k, v in toolsets.items() if k != "enabled"}}
    return settings


def session_report(session: Session, args: Arguments) -> JSONObject:
    """The full ``binary_session`` result for the current connection (as JSON: the kernel takes a tool's answer
    without Evidence as a JSON object)."""
    from rea.plugin import COMPLETE
    from rea.plugin import binding_report
    from rea.plugin import catalog_digest
    from rea.plugin import provider_candidates

    reg = session.registry
    digest = catalog_digest(reg)
    path = server_path()
    checks = [
        AlignmentCheck(field=field, expected=args[field], actual=actual, matches=args[field] == actual)
        for field, actual in (
            ("expected_package_version", __version__),
            ("expected_catalog_digest", digest),
            ("expected_server_path", path),
        )
        if field in args
    ]
    state = (
        "unknown" if not checks else ("aligned" if all(c.matches for c in checks) else "mcp_server_restart_required")
    )
    identity = ServerIdentity(
        package=Named(name="rea", version=__version__),
        server=ServerProcess(name="rea", path=path, pid=os.getpid(), python=sys.version.split()[0]),
        sdk=Named(name="mcp", version=_sdk_version()),
        protocol=Protocol(version=session.connection.protocol_version, client=session.connection.client_info),
        catalog_digest=digest,
        tool_count=len(reg.tools),
        alignment=Alignment(state=state, checks=checks),
    )

    detail = arg_str(args, "detail", "summary")
    bound = session.binding.provider.id if session.binding else None
    cands: list[JSONObject] = []
    for c in provider_candidates(reg):
        entry: JSONObject = msgspec.to_builtins(c)
        entry["selected"] = c.provider_id == bound
        if detail == "summary":
            # Which operations a candidate offers matters when choosing tools: it comes with detail "tools".
            del entry["operations"]
            entry["operation_count"] = len(c.operations)
        cands.append(entry)
    target = session.target
    rows = [_availability(session, t) for t in sorted(reg.tool_info().values(), key=lambda t: t.name)]
    page: list[ToolAvailability] | None = None
    paging: Paged | None = None
    if detail == "tools":
        offset, limit = arg_int(args, "offset", 0), arg_int(args, "limit", TOOL_PAGE)
        end = min(len(rows), offset + limit)
        page = rows[offset:end]
        paging = Paged(offset=offset, limit=limit, total=len(rows), next_offset=end if end < len(rows) else None)
    opened = session.open_targets()
    report = SessionReport(
        server_identity=identity,
        settings=_settings(session),
        target=None if target is None else target.record(),
        # Every open target (the active one is target above); a target-bound tool takes target to pick another.
        open_targets=[t.describe() for t in opened] if len(opened) > 1 else None,
        active_target_id=session.target_id or None,
        # Whole in every presentation: with open_binary, where the provenance lean records name is said.
        analysis_provider_binding=None
        if session.binding is None or target is None
        else msgspec.to_builtins(binding_report(session.subject_for(target), session.binding, COMPLETE)),
        analysis_provider_candidates=cands,
        # run_id is null with no target; process lineage covers providers and scenario drivers alike.
        analysis_run=AnalysisRun(run_id=session.run_id, process_lineage=session.process_lineage()),
        retained_evidence_count=len(session.ledger),
        availability_summary=availability_summary(rows),
        plugins=Plugins(loaded=sorted(reg.plugins), broken=[msgspec.to_builtins(b) for b in reg.broken]),
        tool_availability=page,
        tool_page=paging,
    )
    out: JSONObject = msgspec.to_builtins(report)
    return out


def availability_summary(rows: list[ToolAvailability]) -> AvailabilitySummary:
    """Tools counted by state, and the unavailable ones grouped by reason and remediation (each said once)."""
    counts: dict[str, int] = {}
    groups: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        counts[row.reason] = counts.get(row.reason, 0) + 1
        if not row.available:
            groups.setdefault((row.reason, row.remediation), []).append(row.name)
    return AvailabilitySummary(
        counts=counts,
        unavailable=[UnavailableGroup(reason=r, remediation=m, tools=names) for (r, m), names in groups.items()],
    )


def _binary_session(call: ToolCall) -> JSONObject:
    return session_report(call.session, call.args)


@functools.cache
def binary_session_tool() -> ToolDef:
    """The binary_session tool (built on first use: its schemas import the catalog's schema helpers)."""
    from rea.plugin import object_output_schema

    return ToolDef(
        name="binary_session",
        family="session",
        description=(
            "Report rea's identity, the open target and its provider binding, the analysis run, provider "
            "candidates and a summary of tool availability (unavailable tools with reason and remediation). "
            "detail 'tools' adds every tool's availability, paged; starts no analysis."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "expected_package_version": {
                    "type": "string",
                    "description": "Compare with the live package version.",
                    "examples": ["0.1.0"],
                },
                "expected_catalog_digest": {
                    "type": "string",
                    "description": "Compare with the live catalog digest.",
                    "examples": ["sha256:" + "0" * 64],
                },
                "expected_server_path": {
                    "type": "string",
                    "description": "Compare with the live server path.",
                    "examples": ["/usr/local/bin/rea"],
                },
                "detail": {
                    "type": "string",
                    "enum": ["summary", "tools"],
                    "default": "summary",
                    "description": "summary (default), or tools: every tool's availability (paged) and each "
                    "candidate's operations.",
                    "examples": ["tools"],
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "First tool of the page.",
                    "examples": [0],
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 1000,
                    "default": TOOL_PAGE,
                    "description": "Tools in the page.",
                    "examples": [100],
                },
            },
            "additionalProperties": False,
        },
        output_schema=object_output_schema(
            {
                "server_identity": {"type": "object"},
                "availability_summary": {"type": "object"},
                "tool_availability": {"type": "array"},
                "tool_page": {"type": "object"},
                "analysis_provider_candidates": {"type": "array"},
                "analysis_provider_binding": {"type": ["object", "null"]},
                "analysis_run": {
                    "type": "object",
                    "properties": {"run_id": {"type": ["string", "null"]}, "process_lineage": {"type": "object"}},
                    "required": ["run_id", "process_lineage"],
                },
                "target": {"type": ["object", "null"]},
            },
            [
                "server_identity",
                "availability_summary",
                "analysis_provider_candidates",
                "analysis_provider_binding",
                "analysis_run",
                "target",
            ],
        ),
        effects=ToolEffects(records_evidence=False),
        examples=({}, {"expected_package_version": "0.1.0"}, {"detail": "tools"}),
        handler=_binary_session,
    )


def __getattr__(name: str) -> Any:
    if name == "BINARY_SESSION":
        return binary_session_tool()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
