"""Lean pages on request: ``list_procedures``, ``search_procedures`` and ``procedure_references`` with
``detail: lean`` answer one positional row per item (``rea.operations.shapes.ProcedureRows``, ``ReferenceRows``:
about a third of the complete row's bytes); the complete rows stay their default, as the many readers of these
listings expect them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import PROCEDURE_KIND_CODES
from rea.plugin import PROCEDURE_LEGEND
from rea.plugin import REFERENCE_KIND_CODES
from rea.plugin import REFERENCES_LEGEND
from rea.plugin import Evidence
from rea.plugin import ProcedureRef
from rea.plugin import ProcedureRow
from rea.plugin import ProcedureRows
from rea.plugin import ReferenceRow
from rea.plugin import ReferenceRows
from rea.plugin import ToolCall
from rea.plugin import arg_str
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import COMPLETE
from rea_plugins.binary.core.schema import LEAN
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run

DETAIL = prop(
    "string",
    "complete rows (default) or lean positional rows (legend in the page).",
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


def lean_references(page: Any) -> ReferenceRows:
    """A complete page of one procedure's references as lean rows: the same facts, under the procedure each is in
    (``""``: none), each target's name once (not a made ``sub_<address>``)."""
    if not isinstance(page, dict):
        page = msgspec.to_builtins(page)
    grouped: dict[str, list[ReferenceRow]] = {}
    names: dict[str, str] = {}
    for r in page["references"]:
        to, name = r.get("to"), r.get("to_name")
        row = ReferenceRow(r["from"], to, REFERENCE_KIND_CODES[r["kind"]])
        grouped.setdefault(r.get("from_procedure") or "", []).append(row)
        if to is not None and name and not (name[:4] == "sub_" and name[4:] == to[2:]):
            names.setdefault(to, name)
    return ReferenceRows(
        offset=page["offset"],
        limit=page["limit"],
        total=page["total"],
        next_offset=page["next_offset"],
        procedure=ProcedureRef(address=page["procedure"]["address"], name=page["procedure"].get("name")),
        direction=page["direction"],
        legend=REFERENCES_LEGEND,
        references=grouped,
        names=names,
    )


_LEAN: dict[str, Callable[[Any], msgspec.Struct]] = {
    "list_procedures": lean_procedures,
    "search_procedures": lean_procedures,
    "procedure_references": lean_references,
}


def handler(operation: str) -> Callable[[ToolCall], Evidence]:
    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        lean = arg_str(call.args, "detail", COMPLETE) == LEAN
        result = run(call, operation, {k: v for k, v in params_of(call.args).items() if k != "detail"})
        # The complete page keeps the parameters (so the evidence id) it had before ``detail`` existed.
        parameters = {k: v for k, v in annotate.parameters(call).items() if k != "detail"}
        if not lean:
            return call.session.evidence(call.tool.name, parameters, result)
        body = _LEAN[operation](result.normalized)
        # The provider's limitations, locations and confidence stay as it said them.
        out = msgspec.structs.replace(result, normalized=body)
        return call.session.evidence(call.tool.name, {**parameters, "detail": LEAN}, out)

    return handle
