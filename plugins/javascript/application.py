"""The analyze_javascript_application handler, its Evidence identity and the summary view."""

from __future__ import annotations

from typing import Any

import msgspec
from rea_plugins.javascript import analyze, facts, inputs, syntax
from rea_plugins.javascript.model import OPERATION, Limits

import rea
from rea import evidence as ev_mod
from rea.catalog.tool import ToolCall
from rea.evidence import AnalysisProfile, Evidence, ProviderIdentity
from rea.providers import OperationResult
from rea.target import identify

PROVIDER = ProviderIdentity(
    id="javascript", name="rea JavaScript application analyzer (tree-sitter)", version=rea.__version__
)
VIEW_OPERATION = "inspect_analysis_view"
STATIC_LIMITATIONS = [
    "Static analysis only: no application code was executed.",
    "Source-map mappings are not decoded; sources are matched to modules by path and content.",
]


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


def effective_limits(requested: dict[str, Any] | None) -> Limits:
    base = msgspec.to_builtins(inputs.DEFAULT_LIMITS)
    base.update(requested or {})
    return msgspec.convert(base, Limits)


def handle(call: ToolCall) -> Evidence:
    args = call.args
    policy = args.get("integrity_policy", "fail")
    limits = effective_limits(args.get("limits"))
    target = identify(args["input_path"], call.ctx, allow_directory=True)
    fmt = inputs.choose_format(target, args.get("format", "auto"))
    collected = inputs.collect(call.session.registry, target, fmt, limits, policy, call.ctx)
    lineage: list[dict[str, Any]] = []
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
    parameters = {"format": fmt, "integrity_policy": policy, "limits": msgspec.to_builtins(limits)}
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
    if args.get("detail", "complete") == "summary":
        # The complete record stays retained; the caller gets the same summary inspect_analysis_view gives.
        from rea import views

        call.session.ledger.record(ev)
        return views.build_view(ev, {"kind": "summary"})
    return ev
