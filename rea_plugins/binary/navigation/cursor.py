"""Navigation: a per-session cursor (starting at the entry point) and address context facets."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolMode
from rea.plugin import arg_str
from rea.plugin import normalize_address
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import containing
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import navigation_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import AddressContext
from rea_plugins.binary.core.shapes import CurrentAddress
from rea_plugins.binary.core.shapes import CurrentDocument
from rea_plugins.binary.core.shapes import CurrentProcedure
from rea_plugins.binary.core.shapes import NavigationContext

CURSOR = "binary.cursor"
_ANNOTATION_FACETS = ("comment", "inline_comment", "bookmark")


def _document(call: ToolCall) -> JSONObject:
    """The provider's document, as it answered it (an engine's JSON: another provider's keys are kept)."""
    return dict(run(call, "list_documents", {}).normalized["documents"][0])


def cursor(call: ToolCall) -> str | None:
    """The session cursor for the open target; starts at the entry point."""
    target = call.session.require_target()
    state = call.session.state.get(CURSOR)
    if not isinstance(state, dict) or state.get("sha256") != target.sha256:
        state = {"sha256": target.sha256, "address": _document(call).get("entry")}
        call.session.state[CURSOR] = state
    address = state.get("address")
    return address if isinstance(address, str) else None


def _procedure_at(call: ToolCall, address: str | None) -> JSONObject | None:
    """The provider's containing procedure of ``address``, as it answered it."""
    return None if address is None else containing(call, address)


# The answers (``CurrentDocument``, ``CurrentProcedure``, ``NavigationContext``, ``AddressContext``), every key said;
# the document and the procedure as the provider answered them (an engine's JSON: another provider's keys are kept).


class _Document(Record):
    document: JSONObject


class _Here(Record):
    address: str | None
    procedure: JSONObject | None


class _Context(Record):
    mode: Literal["current_selection", "explicit_document"]
    document: JSONObject
    address: str | None
    procedure: JSONObject | None


def _result(call: ToolCall, body: CurrentAddress | Record) -> Evidence:
    return evidence(
        call,
        OperationResult(
            normalized=body,
            limitations=["the cursor is rea's per-session selection (no engine UI); it starts at the entry point"],
        ),
    )


def _current_document(call: ToolCall) -> Evidence:
    return _result(call, _Document(document=_document(call)))


def _current_address(call: ToolCall) -> Evidence:
    check_document(call)
    return _result(call, CurrentAddress(address=cursor(call)))


def _current_procedure(call: ToolCall) -> Evidence:
    check_document(call)
    address = cursor(call)
    return _result(call, _Here(address=address, procedure=_procedure_at(call, address)))


def _navigation_context(call: ToolCall) -> Evidence:
    check_document(call)
    address = cursor(call)
    mode: Literal["current_selection", "explicit_document"] = (
        "explicit_document" if call.args.get("document") else "current_selection"
    )
    return _result(
        call, _Context(mode=mode, document=_document(call), address=address, procedure=_procedure_at(call, address))
    )


class FacetOk(Record, omit_defaults=False):
    """A facet's value, null when there is none (both said always)."""

    status: Literal["ok"] = "ok"
    # The annotation store's text, or the provider's answer for the facet as it gave it (an engine's JSON).
    value: JSONValue


class FacetUnavailable(Record, omit_defaults=False):
    """A facet the bound provider cannot answer, and why."""

    status: Literal["unavailable"] = "unavailable"
    reason: str


def _facet(call: ToolCall, operation: str, params: Arguments, key: str) -> FacetOk | FacetUnavailable:
    if not call.session.supports(operation):
        return FacetUnavailable(reason=f"the bound provider does not offer {operation}")
    return FacetOk(value=run(call, operation, params).normalized.get(key))


class _AddressFacets(Record):
    address: str
    facets: dict[str, FacetOk | FacetUnavailable]
    sources: dict[str, Literal["user", "rea", "provider"]]


def _address_context(call: ToolCall) -> Evidence:
    check_document(call)
    address = normalize_address(arg_str(call.args, "address", ""))  # required by the schema
    note = annotate.notebook(call).note(address)
    facets: dict[str, FacetOk | FacetUnavailable] = {
        "name": (
            FacetOk(value=note.name)
            if note.name is not None
            else _facet(call, "address_name", {"address": address}, "name")
        ),
        "procedure": _facet(call, "resolve_containing_procedure", {"address": address}, "procedure"),
    }
    sources: dict[str, Literal["user", "rea", "provider"]] = {"name": "user" if note.name is not None else "provider"}
    # rea's annotation store answers for every provider; a provider that keeps its own annotations (Hopper,
    # through address_annotations) fills what the analyst has not set in rea.
    engine = (
        run(call, "address_annotations", {"address": address}).normalized
        if call.session.supports("address_annotations")
        else {}
    )
    for facet in _ANNOTATION_FACETS:
        mine = getattr(note, facet)
        if mine is None and engine.get(facet) is not None:
            facets[facet] = FacetOk(value=engine[facet])
            sources[facet] = "provider"
        else:
            facets[facet] = FacetOk(value={"name": mine} if facet == "bookmark" and mine is not None else mine)
            sources[facet] = "rea"
    function = {k: getattr(note, k) for k in ("signature", "notes") if getattr(note, k) is not None}
    facets["function"] = FacetOk(value=function or None)
    return evidence(call, OperationResult(normalized=_AddressFacets(address=address, facets=facets, sources=sources)))


def tools() -> list[ToolDef]:
    doc_only = obj({"document": DOCUMENT})
    return [
        navigation_tool(
            name="current_document",
            result_type=CurrentDocument,
            description="The open document (name, format, sha256).",
            input_schema=obj({}),
            handler=_current_document,
            requires_operations=("list_documents",),
            examples=({},),
        ),
        navigation_tool(
            name="current_address",
            result_type=CurrentAddress,
            description="The session cursor address (starts at the entry point).",
            input_schema=doc_only,
            handler=_current_address,
            requires_operations=("list_documents",),
            examples=({}, {"document": "ls"}),
        ),
        navigation_tool(
            name="current_procedure",
            result_type=CurrentProcedure,
            description="The procedure containing the cursor.",
            input_schema=doc_only,
            handler=_current_procedure,
            requires_operations=("list_documents", "resolve_containing_procedure"),
            examples=({}, {"document": "ls"}),
        ),
        navigation_tool(
            name="get_navigation_context",
            result_type=NavigationContext,
            description=(
                "Document, cursor address and containing procedure together (modes "
                "current_selection and explicit_document)."
            ),
            input_schema=doc_only,
            handler=_navigation_context,
            requires_operations=("list_documents", "resolve_containing_procedure"),
            modes=(
                ToolMode(
                    name="current_selection",
                    description="the session cursor's document, address and procedure",
                    requires_operations=("list_documents", "resolve_containing_procedure"),
                ),
                ToolMode(
                    name="explicit_document",
                    description="the same for a document the caller names "
                    "(works whether or not the provider tracks a current document)",
                    requires_operations=("list_documents",),
                    requires_arguments=("document",),
                ),
            ),
            examples=({}, {"document": "ls"}),
        ),
        binary_tool(  # the family's own toolset, not the cursor's
            name="inspect_address_context",
            result_type=AddressContext,
            description=(
                "Name (user-given or the provider's), procedure, comment, inline-comment, bookmark and "
                "function-annotation facets of one address; facets the provider lacks are reported "
                "unavailable."
            ),
            input_schema=ADDRESS_INPUT,
            handler=_address_context,
            requires_operations=("list_documents",),
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
    ]
