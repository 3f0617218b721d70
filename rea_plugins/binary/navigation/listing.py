"""Instruction listings as an agent reads them: each row's text once, pages by default, a window around an address.

Providers return full rows (``mnemonic``, ``operands``, ``text``, ``symbolized``, ``symbols``: the provider contract).
The tools present them lean: ``text``, plus ``symbolized`` only where it says more, ``mnemonic``/``operands`` only
when ``split_operands`` asks. A listing longer than its page answers with the page and names the retained complete
record, as ``analyze_function`` does.
"""

from __future__ import annotations

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import Paged
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import int_param
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_address
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import ASSEMBLY_LIMIT
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import MAX_INSTRUCTIONS
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import SPLIT_OPERANDS
from rea_plugins.binary.core.schema import WINDOW
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import every_row
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import run

ASSEMBLY_PAGE = 200
MAX_ASSEMBLY = 20_000
WINDOW_DEFAULT = 8
WINDOW_MAX = 200
_SPLIT = ("mnemonic", "operands")


# An instruction row is the provider's JSON (the provider contract's keys, and any of its own): the tools keep it as
# it came, less what says the text again.


def lean_row(row: JSONObject, split_operands: bool = False) -> JSONObject:
    """One instruction row with its text said once (``symbolized`` where it differs, symbols that name something)."""
    out = {k: v for k, v in row.items() if k not in _SPLIT and k not in ("symbolized", "symbols")}
    symbolized, symbols = row.get("symbolized"), row.get("symbols")
    if symbolized and symbolized != row.get("text"):
        out["symbolized"] = symbolized
    # A symbol that names nothing only repeats an address the text already shows.
    named: list[JSONValue] = (
        [sym for sym in symbols or () if isinstance(sym, dict) and (sym.get("name") or sym.get("string"))]
        if isinstance(symbols, list)
        else []
    )
    if named:
        out["symbols"] = named
    if split_operands:
        out.update({k: row[k] for k in _SPLIT if k in row})
    return out


def lean_rows(rows: list[JSONObject], split_operands: bool = False) -> list[JSONObject]:
    return [lean_row(r, split_operands) for r in rows]


def _procedure_assembly(call: ToolCall) -> Evidence:
    check_document(call)
    args = call.args
    split = arg_bool(args, "split_operands")
    cap = arg_int(args, "max_instructions", MAX_ASSEMBLY)
    listing = run(call, "procedure_assembly", {"procedure": args["procedure"], "max_instructions": cap})
    body = {**listing.normalized, "instructions": lean_rows(listing.normalized["instructions"], split)}
    rows = body["instructions"]
    offset = int_param(args, "offset", 0, 0)
    limit = int_param(args, "limit", ASSEMBLY_PAGE, 1, MAX_ASSEMBLY)
    if offset > len(rows):
        raise invalid_request(
            f"offset is past the end ({len(rows)} instructions)",
            [issue("offset", "out_of_range", f"at most {len(rows)}")],
        )
    complete_params = {k: v for k, v in annotate.parameters(call).items() if k not in ("offset", "limit")}
    complete = call.session.evidence(
        call.tool.name, complete_params, OperationResult(normalized=body, limitations=listing.limitations)
    )
    end = min(len(rows), offset + limit)
    if offset == 0 and end == len(rows):
        return complete
    call.session.ledger.record(complete)
    page = Paged(offset=offset, limit=limit, total=len(rows), next_offset=end if end < len(rows) else None)
    return evidence(
        call,
        OperationResult(
            normalized={
                **body,
                "instructions": rows[offset:end],
                "page": page,
                "complete_evidence_id": complete.evidence_id,
            },
            limitations=listing.limitations,
        ),
        links=[complete.evidence_id],
    )


def _all_rows(call: ToolCall, procedure: str) -> list[JSONObject]:
    params: Arguments = {"procedure": procedure}
    return every_row(call, "read_function_instructions", "instructions", params, "read_function_instructions")


class _Window(Record):
    """The instructions around an address: its procedure (as the provider names it), the rows, where they lie."""

    address: str
    name: str
    instructions: list[JSONObject]
    offset: int
    limit: int
    total: int
    next_offset: int | None


def _window(call: ToolCall) -> _Window:
    """``before`` and ``after`` instructions around the one that holds ``address``, in its procedure."""
    args = call.args
    address = normalize_address(arg_str(args, "address", ""), "address")  # given: the caller checked
    at = int(address, 16)
    owner = run(call, "resolve_containing_procedure", {"address": address}).normalized.get("procedure")
    if owner is None:
        raise invalid_request(
            f"{address} is in no procedure",
            [issue("address", "invalid_value", "the address lies outside every procedure")],
        )
    rows = _all_rows(call, owner["address"])
    starts = [int(str(r["address"]), 16) for r in rows]
    index = next((i for i in range(len(rows) - 1, -1, -1) if starts[i] <= at), None)
    if index is None or at >= starts[index] + max(1, len(str(rows[index].get("bytes", ""))) // 2):
        raise invalid_request(
            f"{address} is not inside a decoded instruction of {owner['name']}",
            [issue("address", "invalid_value", "no instruction holds the address")],
        )
    before = int_param(args, "before", WINDOW_DEFAULT, 0, WINDOW_MAX)
    after = int_param(args, "after", WINDOW_DEFAULT, 0, WINDOW_MAX)
    lo, hi = max(0, index - before), min(len(rows), index + after + 1)
    window = lean_rows(rows[lo:hi], arg_bool(args, "split_operands"))
    window[index - lo]["at"] = True
    return _Window(
        address=owner["address"],
        name=owner["name"],
        instructions=window,
        offset=lo,
        limit=hi - lo,
        total=len(rows),
        next_offset=hi if hi < len(rows) else None,
    )


def _read_function_instructions(call: ToolCall) -> Evidence:
    check_document(call)
    args = call.args
    if (args.get("procedure") is None) == (args.get("address") is None):
        raise invalid_request(
            "give procedure (a page of its instructions) or address (the instructions around it)",
            [issue("procedure", "missing_argument", "exactly one of procedure and address")],
        )
    if args.get("address") is not None:
        if args.get("offset") is not None or args.get("limit") is not None:
            raise invalid_request(
                "offset and limit page a procedure; around an address use before and after",
                [issue("offset", "invalid_value", "not with address")],
            )
        return evidence(call, OperationResult(normalized=_window(call)))
    if args.get("before") is not None or args.get("after") is not None:
        raise invalid_request(
            "before and after count instructions around an address",
            [issue("before", "invalid_value", "only with address")],
        )
    params = {k: v for k, v in params_of(args).items() if k != "split_operands"}
    result = run(call, "read_function_instructions", params)
    body = {
        **result.normalized,
        "instructions": lean_rows(result.normalized["instructions"], arg_bool(args, "split_operands")),
    }
    return evidence(call, OperationResult(normalized=body, limitations=result.limitations))


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "procedure_assembly",
            description="Assembly listing of one procedure, a page at a time (200 rows by default); a longer "
            "listing names its retained complete record.",
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "offset": OFFSET,
                    "limit": ASSEMBLY_LIMIT,
                    "max_instructions": MAX_INSTRUCTIONS,
                    "split_operands": SPLIT_OPERANDS,
                    "document": DOCUMENT,
                },
                ("procedure",),
            ),
            handler=_procedure_assembly,
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "main", "max_instructions": 50}),
        ),
        operation_tool(
            "read_function_instructions",
            description="A procedure's instructions by offset and limit, or the instructions before and "
            "after an address; decodes only what it returns.",
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "offset": OFFSET,
                    "limit": LIMIT,
                    "address": ADDRESS,
                    "before": WINDOW,
                    "after": WINDOW,
                    "split_operands": SPLIT_OPERANDS,
                    "document": DOCUMENT,
                }
            ),
            handler=_read_function_instructions,
            cli_subject="procedure",
            examples=(
                {"procedure": "main"},
                {"procedure": "main", "offset": 20, "limit": 20},
                {"address": "0x401140", "before": 4, "after": 4},
            ),
        ),
    ]
