"""One tool per provider operation: the inventory and function-fact tools."""

from __future__ import annotations

from typing import Any

from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import (
    ADDRESS,
    ADDRESS_PATTERN,
    ASSEMBLY_LIMIT,
    CASE,
    DIRECTION,
    DOCUMENT,
    LIMIT,
    MAX_INSTRUCTIONS,
    MIN_LENGTH,
    MODE,
    OFFSET,
    PATTERN,
    PROCEDURE,
    SPLIT_OPERANDS,
    WINDOW,
    check_document,
    evidence,
    obj,
    params_of,
    prop,
    run,
)
from rea_plugins.binary.core.shapes import TypedProcedureInfo
from rea_plugins.binary.graph import arrays, crossbinary, thunks
from rea_plugins.binary.navigation import listing, rows
from rea_plugins.binary.search import strings

from rea.plugin import (
    RESULT_TYPES,
    Evidence,
    OperationResult,
    ProcedureRows,
    ReferenceRows,
    ResultType,
    ToolCall,
    ToolDef,
    runtime_observations,
)

FAMILY = "binary"


PSEUDO_OFFSET = prop("integer", "First line of the page (0-based).", [0], minimum=0, default=0)
PSEUDO_LIMIT = prop(
    "integer", "Lines of the page (1-20000, default 400).", [400], minimum=1, maximum=20000, default=400
)


def _procedure_info(call: ToolCall) -> Evidence:
    """The engine's facts, with what a debug session of this MCP session saw at the entry (``runtime``)."""
    check_document(call)
    result = run(call, "procedure_info", params_of(call.args))
    return evidence(
        call, runtime_observations.with_runtime(call.session.state, call.session.require_target().sha256, result)
    )


def _pseudo_code(call: ToolCall) -> Evidence:
    """The whole text is decompiled (and named) once; the page is its lines ``[offset, offset + limit)``, with
    ``lines`` saying where it lies when the page is not the whole text."""
    check_document(call)
    params = {k: v for k, v in params_of(call.args).items() if k not in ("offset", "limit")}
    result = run(call, "procedure_pseudo_code", params)
    offset, limit = call.args.get("offset", 0), call.args.get("limit", 400)
    body = result.normalized
    text = body.get("text") if isinstance(body, dict) else None
    if isinstance(text, str):
        rows = text.split("\n")
        if offset or len(rows) > limit:
            end = offset + limit
            lines = {
                "offset": offset,
                "limit": limit,
                "total": len(rows),
                "next_offset": end if end < len(rows) else None,
            }
            body = {**body, "text": "\n".join(rows[offset:end]), "lines": lines}
            result = OperationResult(
                normalized=body,
                raw=result.raw,
                limitations=list(result.limitations),
                locations=list(result.locations),
                confidence=result.confidence,
            )
    return evidence(call, result)


def _decompile_at(call: ToolCall) -> Evidence:
    """decompile_at: the provider's pseudo code from an address, named from the notebook as procedure_pseudo_code's."""
    check_document(call)
    nb = annotate.notebook(call)
    params = annotate.for_engine(nb, "procedure_pseudo_code", params_of(call.args))
    # Its types are looked up by the address decompiled: a prototype set there applies.
    result = call.session.execute(AT_OPERATION, params, call.ctx)
    return evidence(call, annotate.apply(call, "procedure_pseudo_code", result, nb))


AT_OPERATION = "pseudo_code_at"
DECOMPILE_AT = ToolDef(
    name="decompile_at",
    family=FAMILY,
    description="Decompile the code at an address as a function, whether or not a procedure is known to start there "
    "(a reverser's 'make function here'); end optionally bounds it.",
    input_schema=obj(
        {
            "address": ADDRESS,
            "end": prop(
                "string", "Exclusive end of the code to decompile (optional).", ["0x401180"], pattern=ADDRESS_PATTERN
            ),
            "document": DOCUMENT,
        },
        ("address",),
    ),
    handler=_decompile_at,
    requires_target=True,
    requires_operations=(AT_OPERATION,),
    result_type=RESULT_TYPES["procedure_pseudo_code"],
    cli_subject="address",
    examples=({"address": "0x401136"}, {"address": "0x401136", "end": "0x401180"}),
)


def _handler(operation: str) -> Any:
    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        return evidence(call, run(call, operation, params_of(call.args)))

    return handle


# name: (description, properties, required, positionals, examples)
_SPECS: dict[str, tuple[str, dict[str, Any], tuple[str, ...], tuple[dict[str, Any], ...]]] = {
    "list_documents": (
        "List the open document: name, format, architecture, SHA-256, entry, bits, endianness.",
        {},
        (),
        ({},),
    ),
    "list_segments": (
        "List segments then sections with exclusive ends, permissions and file extents.",
        {"document": DOCUMENT},
        (),
        ({},),
    ),
    "list_procedures": (
        "Page through procedures by address: name, size, end and kind (local, import, thunk, external).",
        {"offset": OFFSET, "limit": LIMIT, "document": DOCUMENT, "detail": rows.DETAIL},
        (),
        ({}, {"offset": 100, "limit": 50}, {"limit": 1000, "detail": "lean"}),
    ),
    "search_procedures": (
        "Find procedures whose name matches a literal substring or a regex (bounded, paged).",
        {
            "pattern": PATTERN,
            "mode": MODE,
            "case_sensitive": CASE,
            "offset": OFFSET,
            "limit": LIMIT,
            "document": DOCUMENT,
            "detail": rows.DETAIL,
        },
        ("pattern",),
        ({"pattern": "main"}, {"pattern": "^sub_", "mode": "regex", "limit": 20}),
    ),
    "list_strings": (
        "Page through strings: address, value, encoding, byte length, truncation, section; address selects one.",
        {"offset": OFFSET, "limit": LIMIT, "address": ADDRESS, "min_length": MIN_LENGTH, "document": DOCUMENT},
        (),
        ({}, {"address": "0x402004"}),
    ),
    "search_strings": (
        "Find strings matching a literal substring or a regex (bounded, paged).",
        {
            "pattern": PATTERN,
            "mode": MODE,
            "case_sensitive": CASE,
            "offset": OFFSET,
            "limit": LIMIT,
            "min_length": MIN_LENGTH,
            "document": DOCUMENT,
        },
        ("pattern",),
        ({"pattern": "usage"}, {"pattern": "^%s", "mode": "regex", "case_sensitive": True}),
    ),
    "list_names": (
        "Page through names (functions, data, imports, exports, labels); address selects one.",
        {"offset": OFFSET, "limit": LIMIT, "address": ADDRESS, "document": DOCUMENT},
        (),
        ({}, {"address": "0x401136"}),
    ),
    "address_name": (
        "The primary name at an address, or null.",
        {"address": ADDRESS, "document": DOCUMENT},
        ("address",),
        ({"address": "0x401136"},),
    ),
    "procedure_address": (
        "Resolve a procedure name or address to its canonical entry.",
        {"procedure": PROCEDURE, "document": DOCUMENT},
        ("procedure",),
        ({"procedure": "main"},),
    ),
    "resolve_containing_procedure": (
        "Find the procedure containing any address, interior addresses included.",
        {"address": ADDRESS, "document": DOCUMENT},
        ("address",),
        ({"address": "0x401140"},),
    ),
    "procedure_info": (
        "Entry, size, end, kind, section, basic-block and instruction counts, signature if known.",
        {"procedure": PROCEDURE, "document": DOCUMENT},
        ("procedure",),
        ({"procedure": "main"}, {"procedure": "0x401136"}),
    ),
    "procedure_assembly": (
        "Assembly listing of one procedure, a page at a time (200 rows by default); a longer "
        "listing names its retained complete record.",
        {
            "procedure": PROCEDURE,
            "offset": OFFSET,
            "limit": ASSEMBLY_LIMIT,
            "max_instructions": MAX_INSTRUCTIONS,
            "split_operands": SPLIT_OPERANDS,
            "document": DOCUMENT,
        },
        ("procedure",),
        ({"procedure": "main"}, {"procedure": "main", "max_instructions": 50}),
    ),
    "read_function_instructions": (
        "A procedure's instructions by offset and limit, or the instructions before and "
        "after an address; decodes only what it returns.",
        {
            "procedure": PROCEDURE,
            "offset": OFFSET,
            "limit": LIMIT,
            "address": ADDRESS,
            "before": WINDOW,
            "after": WINDOW,
            "split_operands": SPLIT_OPERANDS,
            "document": DOCUMENT,
        },
        (),
        (
            {"procedure": "main"},
            {"procedure": "main", "offset": 20, "limit": 20},
            {"address": "0x401140", "before": 4, "after": 4},
        ),
    ),
    "procedure_callers": (
        "Procedures that call this one, with call sites; an import's callers through its thunk.",
        {"procedure": PROCEDURE, "document": DOCUMENT},
        ("procedure",),
        ({"procedure": "main"},),
    ),
    "procedure_callees": (
        "Procedures this one calls (direct, import, indirect), with call sites.",
        {"procedure": PROCEDURE, "document": DOCUMENT},
        ("procedure",),
        ({"procedure": "main"},),
    ),
    "procedure_references": (
        "Paged raw reference edges of one procedure, incoming or outgoing, all kinds.",
        {
            "procedure": PROCEDURE,
            "direction": DIRECTION,
            "offset": OFFSET,
            "limit": LIMIT,
            "document": DOCUMENT,
            "detail": rows.DETAIL,
        },
        ("procedure",),
        ({"procedure": "main"}, {"procedure": "main", "direction": "incoming", "detail": "lean"}),
    ),
    "xrefs": (
        "References to an address (call, jump, data, read, write, indirect, computed, external); "
        "through_arrays: code indexing a pointer array that holds it.",
        {"address": ADDRESS, "document": DOCUMENT},
        ("address",),
        ({"address": "0x402004"},),
    ),
    "procedure_pseudo_code": (
        "Decompile one procedure (provider text; never the original source); a long one is paged by lines "
        "(lines: offset, limit, total, next_offset).",
        {"procedure": PROCEDURE, "offset": PSEUDO_OFFSET, "limit": PSEUDO_LIMIT, "document": DOCUMENT},
        ("procedure",),
        ({"procedure": "main"}, {"procedure": "main", "offset": 400, "limit": 400}),
    ),
}

# Tools whose handler is not the one-operation default.
_HANDLERS = {
    "list_strings": strings.handle,
    "search_strings": strings.handle,
    "xrefs": arrays.handle_xrefs,
    "procedure_callers": thunks.handle_callers,
    "procedure_callees": crossbinary.handle_callees,
    **listing.HANDLERS,
    "list_procedures": rows.handler("list_procedures"),
    "search_procedures": rows.handler("search_procedures"),
    "procedure_references": rows.handler("procedure_references"),
    "procedure_pseudo_code": _pseudo_code,
    "procedure_info": _procedure_info,
}
# Tools with a lean projection beside the complete shape.
_RESULT_TYPES: dict[str, ResultType] = {
    "list_procedures": (RESULT_TYPES["list_procedures"], ProcedureRows),
    "search_procedures": (RESULT_TYPES["search_procedures"], ProcedureRows),
    "procedure_references": (RESULT_TYPES["procedure_references"], ReferenceRows),
}
# Tools whose operation name differs from the tool name.
_OPERATION = {"procedure_pseudo_code": "procedure_pseudo_code"}


def tools() -> list[ToolDef]:
    out = []
    for name, (description, properties, required, examples) in _SPECS.items():
        operation = _OPERATION.get(name, name)
        positional = required[0] if required else ("procedure" if "procedure" in properties else "")
        out.append(
            ToolDef(
                name=name,
                family=FAMILY,
                description=description,
                input_schema=obj(properties, required),
                handler=_HANDLERS.get(name) or _handler(operation),
                requires_target=True,
                requires_operations=(operation,),
                result_type=TypedProcedureInfo
                if name == "procedure_info"
                else _RESULT_TYPES.get(name, RESULT_TYPES[name]),
                cli_subject=positional,
                examples=examples,
            )
        )
    out.append(DECOMPILE_AT)
    return out
