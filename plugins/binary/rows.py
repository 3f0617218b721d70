"""Lean procedure pages: ``list_procedures`` and ``search_procedures`` with ``detail: lean`` answer one positional
row per procedure (``rea.operations.shapes.ProcedureRows``, about a third of the complete row's bytes); the
complete rows stay the default, as every consumer of the listing reads them."""

from __future__ import annotations

from typing import Any, Final

import msgspec
from rea_plugins.binary import annotate
from rea_plugins.binary.schema import check_document, params_of, prop, run

from rea.catalog.tool import ToolCall
from rea.evidence import Evidence
from rea.operations.shapes import PROCEDURE_KIND_CODES, PROCEDURE_LEGEND, ProcedureRow, ProcedureRows
from rea.providers import OperationResult

LEAN: Final = "lean"
COMPLETE: Final = "complete"
DETAIL = prop(
    "string",
    "complete rows (default) or lean [address, name, size, kind] rows.",
    ["lean"],
    enum=[COMPLETE, LEAN],
)


def lean_procedures(page: Any) -> ProcedureRows:
    """A complete page of procedures as lean rows: the same facts but ``end`` (address + size), the made
    ``sub_<address>`` name (null) and the name's source."""
    if not isinstance(page, dict):
        page = msgspec.to_builtins(page)
    rows: list[ProcedureRow] = []
    parts: dict[str, str] = {}
    for p in page["procedures"]:
        address, name = p["address"], p["name"]
        made = name[:4] == "sub_" and name[4:] == address[2:]
        rows.append(ProcedureRow(address, None if made else name, p["size"], PROCEDURE_KIND_CODES[p["kind"]]))
        if p.get("part_of"):
            parts[address] = p["part_of"]
    return ProcedureRows(
        offset=page["offset"],
        limit=page["limit"],
        total=page["total"],
        next_offset=page["next_offset"],
        legend=PROCEDURE_LEGEND,
        procedures=rows,
        parts=parts,
    )


def handler(operation: str) -> Any:
    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        lean = call.args.get("detail", COMPLETE) == LEAN
        result = run(call, operation, {k: v for k, v in params_of(call.args).items() if k != "detail"})
        # The complete page keeps the parameters (so the evidence id) it had before ``detail`` existed.
        parameters = {k: v for k, v in annotate.parameters(call).items() if k != "detail"}
        if not lean:
            return call.session.evidence(call.tool.name, parameters, result)
        body = lean_procedures(result.normalized)
        out = OperationResult(
            normalized=body, raw=result.raw, limitations=list(result.limitations), locations=list(result.locations)
        )
        return call.session.evidence(call.tool.name, {**parameters, "detail": LEAN}, out)

    return handle
