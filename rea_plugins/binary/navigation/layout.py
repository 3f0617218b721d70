"""inspect_binary_layout: sections, mitigations and linkage; ``summary`` retains the complete record."""

from __future__ import annotations

from rea.plugin import AnalysisView
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_str
from rea.plugin import build_view
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import BinaryLayout


def _layout(call: ToolCall) -> Evidence:
    result = run(call, "binary_layout", {})
    complete = call.session.evidence("inspect_binary_layout", {"detail": "complete"}, result)
    if arg_str(call.args, "detail", "complete") == "complete":
        return complete
    # The contract: retain the complete record, answer with its inspect_analysis_view summary.
    call.session.ledger.record(complete)
    return build_view(complete, {"kind": "summary"})


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="inspect_binary_layout",
            result_type=(BinaryLayout, AnalysisView),
            description=(
                "Sections, mitigations (NX, PIE, RELRO, canary, fortify, CET/BTI where visible) and linkage "
                "(interpreter, needed libraries, rpath). detail=summary retains the complete record and returns "
                "its inspect_analysis_view summary (parent_evidence_id names it)."
            ),
            input_schema=obj(
                {"detail": prop("string", "complete (default) or summary.", ["summary"], enum=["summary", "complete"])}
            ),
            handler=_layout,
            requires_operations=("binary_layout",),
            examples=({}, {"detail": "summary"}),
        )
    ]
