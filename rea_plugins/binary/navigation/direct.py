"""One tool per provider operation: the inventory and function-fact tools.

The operations whose tools add to the provider's answer are declared beside that code: the listings in ``listing``,
the strings in ``search.strings``, callers, callees and xrefs in ``graph``."""

from __future__ import annotations

from rea.plugin import RESULT_TYPES
from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import Paged
from rea.plugin import ProcedureRows
from rea.plugin import ReferenceRows
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_int
from rea.plugin import next_offset
from rea.plugin import runtime_observations
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import ADDRESS_PATTERN
from rea_plugins.binary.core.schema import DIRECTION
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import PROCEDURE_INPUT
from rea_plugins.binary.core.schema import SEARCH
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import TypedProcedureInfo
from rea_plugins.binary.navigation import rows

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
    offset, limit = arg_int(call.args, "offset", 0), arg_int(call.args, "limit", 400)
    body = result.normalized
    text = body.get("text") if isinstance(body, dict) else None
    if isinstance(text, str):
        rows = text.split("\n")
        if offset or len(rows) > limit:
            shown = rows[offset : offset + limit]
            lines = Paged(
                offset=offset, limit=limit, total=len(rows), next_offset=next_offset(offset, len(shown), len(rows))
            )
            body = {**body, "text": "\n".join(shown), "lines": lines}
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


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "list_documents",
            description="List the open document: name, format, architecture, SHA-256, entry, bits, endianness.",
            input_schema=obj({}),
            examples=({},),
        ),
        operation_tool(
            "list_segments",
            description="List segments then sections with exclusive ends, permissions and file extents.",
            input_schema=obj({"document": DOCUMENT}),
            examples=({},),
        ),
        binary_tool(
            name="list_procedures",
            description="Page through procedures by address: name, size, end and kind (local, import, thunk, "
            "external).",
            input_schema=obj({"offset": OFFSET, "limit": LIMIT, "document": DOCUMENT, "detail": rows.DETAIL}),
            handler=rows.handler("list_procedures"),
            requires_operations=("list_procedures",),
            result_type=(RESULT_TYPES["list_procedures"], ProcedureRows),
            examples=({}, {"offset": 100, "limit": 50}, {"limit": 1000, "detail": "lean"}),
        ),
        binary_tool(
            name="search_procedures",
            description="Find procedures whose name matches a literal substring or a regex (bounded, paged).",
            input_schema=obj(
                {
                    **SEARCH,
                    "document": DOCUMENT,
                    "detail": rows.DETAIL,
                },
                ("pattern",),
            ),
            handler=rows.handler("search_procedures"),
            requires_operations=("search_procedures",),
            result_type=(RESULT_TYPES["search_procedures"], ProcedureRows),
            cli_subject="pattern",
            examples=({"pattern": "main"}, {"pattern": "^sub_", "mode": "regex", "limit": 20}),
        ),
        operation_tool(
            "list_names",
            description="Page through names (functions, data, imports, exports, labels); address selects one.",
            input_schema=obj({"offset": OFFSET, "limit": LIMIT, "address": ADDRESS, "document": DOCUMENT}),
            examples=({}, {"address": "0x401136"}),
        ),
        operation_tool(
            "address_name",
            description="The primary name at an address, or null.",
            input_schema=ADDRESS_INPUT,
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
        operation_tool(
            "procedure_address",
            description="Resolve a procedure name or address to its canonical entry.",
            input_schema=PROCEDURE_INPUT,
            cli_subject="procedure",
            examples=({"procedure": "main"},),
        ),
        operation_tool(
            "resolve_containing_procedure",
            description="Find the procedure containing any address, interior addresses included.",
            input_schema=ADDRESS_INPUT,
            cli_subject="address",
            examples=({"address": "0x401140"},),
        ),
        binary_tool(
            name="procedure_info",
            description="Entry, size, end, kind, section, basic-block and instruction counts, signature if known.",
            input_schema=PROCEDURE_INPUT,
            handler=_procedure_info,
            requires_operations=("procedure_info",),
            result_type=TypedProcedureInfo,
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "0x401136"}),
        ),
        binary_tool(
            name="procedure_references",
            description="Paged raw reference edges of one procedure, incoming or outgoing, all kinds.",
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "direction": DIRECTION,
                    "offset": OFFSET,
                    "limit": LIMIT,
                    "document": DOCUMENT,
                    "detail": rows.DETAIL,
                },
                ("procedure",),
            ),
            handler=rows.handler("procedure_references"),
            requires_operations=("procedure_references",),
            result_type=(RESULT_TYPES["procedure_references"], ReferenceRows),
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "main", "direction": "incoming", "detail": "lean"}),
        ),
        operation_tool(
            "procedure_pseudo_code",
            description="Decompile one procedure (provider text; never the original source); a long one is paged by "
            "lines (lines: offset, limit, total, next_offset).",
            input_schema=obj(
                {"procedure": PROCEDURE, "offset": PSEUDO_OFFSET, "limit": PSEUDO_LIMIT, "document": DOCUMENT},
                ("procedure",),
            ),
            handler=_pseudo_code,
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "main", "offset": 400, "limit": 400}),
        ),
        binary_tool(
            name="decompile_at",
            description="Decompile the code at an address as a function, whether or not a procedure is known to start "
            "there (a reverser's 'make function here'); end optionally bounds it.",
            input_schema=obj(
                {
                    "address": ADDRESS,
                    "end": prop(
                        "string",
                        "Exclusive end of the code to decompile (optional).",
                        ["0x401180"],
                        pattern=ADDRESS_PATTERN,
                    ),
                    "document": DOCUMENT,
                },
                ("address",),
            ),
            handler=_decompile_at,
            requires_operations=(AT_OPERATION,),
            result_type=RESULT_TYPES["procedure_pseudo_code"],
            cli_subject="address",
            examples=({"address": "0x401136"}, {"address": "0x401136", "end": "0x401180"}),
        ),
    ]
