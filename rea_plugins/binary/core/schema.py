"""Shared input-schema pieces, the tool declaration and helpers of the binary tool family."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

from rea.plugin import RESULT_TYPES
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import __version__
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core import demangle

ADDRESS_PATTERN = "^0x[0-9a-fA-F]{1,16}$"
# Who answers what the family composes itself from other Evidence (comparisons), rather than a bound provider.
IDENTITY = ProviderIdentity(id="rea-binary", name="rea binary workflows", version=__version__)


# The input schemas are JSON Schema fragments (JSONObject): JSON Schema's vocabulary, not rea records.


def prop(kind: str, description: str, examples: list[JSONValue], **extra: JSONValue) -> JSONObject:
    out: JSONObject = {"type": kind, "description": description, "examples": examples}
    out.update(extra)
    return out


PROCEDURE = prop(
    "string",
    "Procedure: exact symbol name, or entry address as 0x hex.",
    ["main", "0x401136"],
    minLength=1,
    maxLength=4096,
)
ADDRESS = prop("string", "Address as 0x hex.", ["0x401136"], pattern=ADDRESS_PATTERN)
OFFSET = prop("integer", "First item of the page.", [0], minimum=0, default=0)
LIMIT = prop("integer", "Page size.", [100], minimum=1, maximum=1000, default=100)
DOCUMENT = prop("string", "The open document's name (optional).", ["ls"], minLength=1)
PATTERN = prop(
    "string",
    "Text to find (literal substring, or a regular expression with mode=regex).",
    ["main", "^sub_"],
    minLength=1,
    maxLength=1024,
)
MODE = prop("string", "literal (default) or regex.", ["literal", "regex"], enum=["literal", "regex"])
CASE = prop("boolean", "Match case exactly (default false).", [False])
DIRECTION = prop(
    "string", "incoming or outgoing (default outgoing).", ["outgoing", "incoming"], enum=["incoming", "outgoing"]
)
MIN_LENGTH = prop(
    "integer",
    "Shortest string listed (1-64, default 4); shorter strings that code references are "
    "listed at any default or lower floor.",
    [4],
    minimum=1,
    maximum=64,
    default=4,
)
ASSEMBLY_LIMIT = prop(
    "integer", "Rows of the page (1-20000, default 200).", [200], minimum=1, maximum=20000, default=200
)
SPLIT_OPERANDS = prop("boolean", "Add mnemonic and operands to each row (default false: text says them).", [True])
WINDOW = prop(
    "integer", "Instructions before (or after) the one at address (0-200, default 8).", [8], minimum=0, maximum=200
)
# A listing's detail: lean positional rows (a legend says their layout) or the complete objects.
LEAN: Final = "lean"
COMPLETE: Final = "complete"
# A search's request: what to find, how, and the page (search_procedures, search_strings).
SEARCH: JSONObject = {"pattern": PATTERN, "mode": MODE, "case_sensitive": CASE, "offset": OFFSET, "limit": LIMIT}
MAX_INSTRUCTIONS = prop("integer", "Cap on returned instructions.", [200], minimum=1, maximum=20000)


def obj(properties: JSONObject, required: tuple[str, ...] = ()) -> JSONObject:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# The input of a tool about one address, or one procedure, of the open document.
ADDRESS_INPUT = obj({"address": ADDRESS, "document": DOCUMENT}, ("address",))
PROCEDURE_INPUT = obj({"procedure": PROCEDURE, "document": DOCUMENT}, ("procedure",))


def check_document(call: ToolCall) -> None:
    """``document`` is accepted for REA compatibility; it must name the open document."""
    doc = call.args.get("document")
    if doc is None:
        return
    target = call.session.require_target()
    if doc not in (target.name, target.path, target.resolved_path):
        raise invalid_request(
            f"document {doc!r} is not open (the open document is {target.name!r})",
            [issue("document", "invalid_value", f"expected {target.name!r}")],
        )


def params_of(args: Arguments) -> Arguments:
    """A call's arguments as an operation's parameters (``document`` names the target, not the question)."""
    return {k: v for k, v in args.items() if k != "document"}


def run(call: ToolCall, operation: str, params: Arguments) -> OperationResult:
    """One provider operation, with the analyst's annotations applied to its result."""
    if operation not in annotate.NAMED_OPERATIONS:
        return call.session.execute(operation, params, call.ctx)
    nb = annotate.notebook(call)
    if operation == "search_procedures" and nb.names():
        # Engines search their own names: over a renamed target, search the annotated listing instead.
        return annotate.search_procedures(call, params, lambda p: run(call, "list_procedures", p))
    chosen = demangle.selector(call, annotate.selector(nb, params))
    result = call.session.execute(operation, annotate.for_engine(nb, operation, chosen), call.ctx)
    return annotate.apply(call, operation, result, nb)


def object_of(value: JSONValue) -> JSONObject:
    """``value`` when it is a JSON object, else the empty one (an optional part of an answer, read by key)."""
    return value if isinstance(value, dict) else {}


def objects_in(value: JSONValue) -> list[JSONObject]:
    """The JSON objects of the list ``value`` (an answer's rows; none when it is not a list)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


PAGE = 1000  # rows asked for per page when a tool reads a whole paged answer


def every_row(call: ToolCall, operation: str, key: str, params: Arguments, phase: str) -> list[JSONObject]:
    """Every row of a paged operation's list ``key``, page after page (the provider's rows, its JSON)."""
    rows: list[JSONObject] = []
    offset: int | None = 0
    while offset is not None:
        call.ctx.check(phase)
        page = run(call, operation, {**params, "offset": offset, "limit": PAGE}).normalized
        rows.extend(page[key])
        offset = page["next_offset"]
    return rows


def limitations_of(*results: OperationResult) -> list[str]:
    """The results' limitations, each once, in the order they were first said."""
    return list(dict.fromkeys(lim for r in results for lim in r.limitations))


def containing(call: ToolCall, address: str) -> JSONObject | None:
    """The procedure containing ``address`` as the provider answers it (a copy of its row, read by key), or None."""
    found = run(call, "resolve_containing_procedure", {"address": address}).normalized["procedure"]
    return dict(found) if found else None


def evidence(call: ToolCall, result: OperationResult, links: list[str] | None = None) -> Evidence:
    """Evidence of this call; its parameters carry the annotation revision the result reflects."""
    return call.session.evidence(call.tool.name, annotate.parameters(call), result, links=links)


# -- declaring a tool ----------------------------------------------------------------------------------------------

# Every tool of the family is declared through ``binary_tool``: the binary family's, bound to the open target (a tool
# over several targets, or over Evidence alone, says ``requires_target=False``). The cursor's tools are the navigation
# toolset's, the analyst's notes and types the notebook's.
binary_tool = functools.partial(ToolDef, family="binary", requires_target=True)
navigation_tool = functools.partial(binary_tool, toolset="navigation")
notebook_tool = functools.partial(binary_tool, toolset="notebook")


def _answering(operation: str) -> Callable[[ToolCall], Evidence]:
    """A handler that answers with ``operation``'s result, the analyst's annotations applied."""

    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        return evidence(call, run(call, operation, params_of(call.args)))

    return handle


def operation_tool(
    operation: str,
    *,
    description: str,
    input_schema: JSONObject,
    examples: tuple[Arguments, ...],
    cli_subject: str = "",
    handler: Callable[[ToolCall], Evidence] | None = None,
) -> ToolDef:
    """The tool of one operation: named after it, requiring it and answering in its result type (``RESULT_TYPES``);
    its handler answers with the operation's result as it is (annotations applied) unless one is given."""
    return binary_tool(
        name=operation,
        description=description,
        input_schema=input_schema,
        handler=handler or _answering(operation),
        requires_operations=(operation,),
        result_type=RESULT_TYPES[operation],
        cli_subject=cli_subject,
        examples=examples,
    )
