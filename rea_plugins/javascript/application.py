"""The analyze_javascript_application handler, its Evidence identity and the summary view."""

from __future__ import annotations

import msgspec

from rea.plugin import AnalysisProfile
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import __version__ as rea_version
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import identify
from rea_plugins.javascript import analyze
from rea_plugins.javascript import facts
from rea_plugins.javascript import inputs
from rea_plugins.javascript import syntax
from rea_plugins.javascript.model import OPERATION
from rea_plugins.javascript.model import Application
from rea_plugins.javascript.model import Limits
from rea_plugins.javascript.results import ApplicationSummary
from rea_plugins.javascript.results import CoverageOverview
from rea_plugins.javascript.results import InputOverview
from rea_plugins.javascript.results import ModuleOverview
from rea_plugins.javascript.results import SourceMapOverview

PROVIDER = ProviderIdentity(
    id="javascript", name="rea JavaScript application analyzer (tree-sitter)", version=rea_version
)
VIEW_OPERATION = "inspect_analysis_view"
STATIC_LIMITATIONS = [
    "Static analysis only: no application code was executed.",
    "Source-map columns are read as the generated file's byte columns (the same for ASCII bundles).",
]
SUMMARY_LIMIT = 20
MAX_SUMMARY_LISTED = 50
MAX_INPUT_LISTED = 20


def profile() -> AnalysisProfile:
    """The settings that shape results: grammar versions and per-module bounds."""
    return ev_mod.make_profile(
        PROVIDER,
        {
            "grammars": syntax.grammar_versions(),
            "bounds": {
                "strings": facts.MAX_STRINGS,
                "string_chars": facts.MAX_STRING_CHARS,
                "functions": facts.MAX_FUNCTIONS,
                "per_function": facts.MAX_PER_FUNCTION,
                "returns": facts.MAX_RETURNS,
                "imports": facts.MAX_IMPORTS,
            },
        },
    )


def effective_limits(requested: JSONObject | None) -> Limits:
    """The default limits with the caller's ``limits`` argument (JSON its input schema shapes) over them."""
    base = msgspec.to_builtins(inputs.DEFAULT_LIMITS)
    base.update(requested or {})
    return msgspec.convert(base, Limits)


def handle(call: ToolCall) -> Evidence:
    args = call.args
    policy = arg_choice(args, "integrity_policy", inputs.POLICIES, "fail")
    limits = effective_limits(arg_object(args, "limits"))
    target = identify(arg_str(args, "input_path", ""), call.ctx, allow_directory=True)
    fmt = inputs.choose_format(target, arg_str(args, "format", "auto"))
    collected = inputs.collect(call.session.registry, target, fmt, limits, policy, call.ctx)
    # The parse workers' process observations, as the kernel records them (its JSON).
    lineage: list[JSONObject] = []
    try:
        normalized = analyze.build(collected, limits, call.ctx, lineage)
    finally:
        if lineage:
            call.session.record_lineage(lineage)
    del collected
    call.ctx.check(OPERATION)
    limitations = list(STATIC_LIMITATIONS)
    coverage = normalized.coverage
    if coverage.status == "partial":
        limitations.append("Coverage is partial: " + ", ".join(coverage.reasons) + ".")
    parameters: JSONObject = {"format": fmt, "integrity_policy": policy, "limits": msgspec.to_builtins(limits)}
    # The Evidence id encodes (and may decode again) the whole graph: no cycle collection over it meanwhile either.
    with analyze.without_cycle_collection():
        ev = call.session.evidence(
            OPERATION,
            parameters,
            OperationResult(normalized=normalized, limitations=limitations),
            bound=False,
            target=target,
            provider=PROVIDER,
            analysis_profile=profile(),
        )
    call.ctx.finish(f"analyzed {normalized.counts['modules']} modules")
    if arg_str(args, "detail", "summary") == "complete":
        return ev
    # The complete record stays retained (the workflows take its id, or this summary's); the caller gets a summary
    # with one page of the modules.
    call.session.ledger.record(ev)
    offset, limit = arg_int(args, "offset", 0), arg_int(args, "limit", SUMMARY_LIMIT)
    return ev_mod.build(
        operation=OPERATION,
        provider=PROVIDER,
        subject=ev.subject,
        analysis_profile=ev.analysis_profile,
        parameters={**parameters, "detail": "summary", "offset": offset, "limit": limit},
        normalized_result=summarize(ev.evidence_id, normalized, offset, limit),
        confidence=ev.confidence,
        limitations=limitations,
        evidence_links=[ev.evidence_id],
    )


def summarize(complete_id: str, app: Application, offset: int, limit: int) -> ApplicationSummary:
    """The summary of an application graph, with the modules from ``offset`` (at most ``limit``)."""
    page = app.modules[offset : offset + limit]
    end = offset + len(page)
    return ApplicationSummary(
        complete_evidence_id=complete_id,
        input=InputOverview(
            format=app.input.format,
            files_seen=app.input.files_seen,
            files_analyzed=app.input.files_analyzed,
            bytes_analyzed=app.input.bytes_analyzed,
            html_files=app.input.html_files[:MAX_INPUT_LISTED],
            html_files_total=len(app.input.html_files),
            package_json=app.input.package_json[:MAX_INPUT_LISTED],
            package_json_total=len(app.input.package_json),
        ),
        coverage=CoverageOverview(
            status=app.coverage.status, reasons=app.coverage.reasons, skipped_total=len(app.coverage.skipped)
        ),
        counts=app.counts,
        entry_points=app.entry_points[:MAX_SUMMARY_LISTED],
        source_maps=[
            SourceMapOverview(
                node_id=sm.node_id,
                generated=sm.generated,
                sources=len(sm.sources),
                sources_with_content=sum(1 for s in sm.sources if s.has_content),
                mappings_decoded=sm.mappings_decoded,
                tokens=sm.tokens,
                functions_mapped=sm.functions_mapped,
            )
            for sm in app.source_maps[:MAX_SUMMARY_LISTED]
        ],
        source_maps_total=len(app.source_maps),
        modules=[
            ModuleOverview(
                node_id=m.node_id,
                path=m.path,
                kind=m.kind,
                size=m.size,
                parse=m.parse,
                functions=sum(1 for f in m.functions if f.kind != "module-body"),
                strings=m.strings.total,
                exports=len(m.exports),
                imports=len(m.imports),
                container=m.container,
                source_map=m.source_map,
            )
            for m in page
        ],
        offset=offset,
        limit=limit,
        total=len(app.modules),
        next_offset=end if end < len(app.modules) else None,
        integrity_contradictions=app.integrity_contradictions[:MAX_SUMMARY_LISTED],
        integrity_contradictions_total=len(app.integrity_contradictions),
    )
