"""inspect_binary_layout: sections, mitigations and linkage; ``summary`` retains the complete record."""

from __future__ import annotations

from rea_plugins.binary.schema import obj, prop, run

from rea.catalog.tool import ToolCall, ToolDef
from rea.evidence import Evidence
from rea.providers import OperationResult


def _layout(call: ToolCall) -> Evidence:
    result = run(call, "binary_layout", {})
    complete = call.session.evidence("inspect_binary_layout", {"detail": "complete"}, result)
    if call.args.get("detail", "complete") == "complete":
        return complete
    call.session.ledger.record(complete)
    body = result.normalized
    summary = {
        "parent_evidence_id": complete.evidence_id, "view": "summary", "format": body["format"],
        "architecture": body["architecture"], "entry": body["entry"], "mitigations": body["mitigations"],
        "linkage": {"interpreter": body["linkage"].get("interpreter"), "needed": body["linkage"].get("needed", [])},
        "counts": {"sections": len(body["sections"]), "segments": len(body.get("segments", [])),
                   "imports": len(body.get("imports", [])), "exports": len(body.get("exports", []))},
    }
    return call.session.evidence("inspect_binary_layout", dict(call.args),
                                 OperationResult(normalized=summary, limitations=result.limitations,
                                                 confidence="derived"), links=[complete.evidence_id])


def tools() -> list[ToolDef]:
    return [ToolDef(
        name="inspect_binary_layout", family="binary",
        description=("Sections, mitigations (NX, PIE, RELRO, canary, fortify, CET/BTI where visible) and linkage "
                     "(interpreter, needed libraries, rpath). detail=summary retains the complete record and returns "
                     "a summary naming it."),
        input_schema=obj({"detail": prop("string", "complete (default) or summary.", ["summary"],
                                         enum=["summary", "complete"])}),
        handler=_layout, requires_target=True, requires_operations=("binary_layout",),
        examples=({}, {"detail": "summary"}))]
