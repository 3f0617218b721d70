"""Engine facts with a generic floor: one instruction, a datum's type, and call-target resolution.

A provider that declares ``inspect_native_instruction``, ``inspect_native_data_type`` or
``resolve_native_call_targets`` (docs/native-operations.md) answers in full. Otherwise these tools
answer what the common operations establish (the decoded instruction, a string's type, direct calls
and resolved jump tables) and report the engine-only facet ``unavailable`` with the reason.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import DataInspection
from rea.plugin import DataType
from rea.plugin import Evidence
from rea.plugin import InstructionInspection
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import PointerArray
from rea.plugin import ProcedureRef
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import Unavailable
from rea.plugin import alternatives_remediation
from rea.plugin import arg_str
from rea.plugin import decode
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_address
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.regions import Mapped
from rea_plugins.binary.core.regions import require_mapped
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import ADDRESS_PATTERN
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import containing
from rea_plugins.binary.core.schema import every_row
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import limitations_of
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import CallTarget
from rea_plugins.binary.core.shapes import CallTargets
from rea_plugins.binary.graph.arrays import pointer_array
from rea_plugins.binary.navigation.stepping import instructions
from rea_plugins.binary.notebook import types


def unavailable(call: ToolCall, operation: str, what: str = "") -> Unavailable:
    """The facet a provider without ``operation`` cannot give, with the providers usable here that can."""
    provider = call.session.provider.descriptor.id if call.session.provider else None
    remediation, _ = alternatives_remediation(
        call.session.registry, (operation,), call.session.target, exclude=provider
    )
    facet = f" ({what})" if what else ""
    return Unavailable(reason=f"provider {provider} does not offer {operation}{facet}", remediation=remediation)


class CallSiteRow(Record):
    """A call site composed from procedure_callees and computed references (the answer's key order: its targets
    before its status), and why an indirect call stays unresolved."""

    address: str
    kind: str
    targets: list[CallTarget]
    status: Literal["resolved", "unresolved"]
    resolution: Unavailable | None = None


def _result(call: ToolCall, body: object, *results: OperationResult) -> Evidence:
    """Evidence of ``body`` (a Struct, or a dict around a provider's answer) with every result's limitations."""
    return evidence(call, OperationResult(normalized=body, limitations=limitations_of(*results)))


# -- inspect_native_instruction -----------------------------------------------------------------------


def _decoded(call: ToolCall, procedure: str, address: str) -> JSONObject:
    """The instruction starting at ``address`` as the provider decodes its procedure (a copy of its row, its JSON)."""
    listed = instructions(call, procedure)
    here = int(address, 16)
    if address not in listed:
        start = max((a for a in listed if int(a, 16) < here), key=lambda a: int(a, 16), default=None)
        hint = f"; the instruction covering it starts at {start}" if start else ""
        raise invalid_request(
            f"{address} is not the start of an instruction of {procedure}{hint}",
            [issue("address", "invalid_value", "not an instruction boundary" + hint)],
        )
    page = run(
        call, "read_function_instructions", {"procedure": procedure, "offset": listed.index(address), "limit": 1}
    ).normalized
    return dict(page["instructions"][0])


def _inspect_instruction(call: ToolCall) -> Evidence:
    check_document(call)
    address, _ = require_mapped(call, arg_str(call.args, "address", ""))
    proc = containing(call, address)
    if call.session.supports("inspect_native_instruction"):
        result = run(call, "inspect_native_instruction", {"address": address})
        # One place for the procedure whichever path answers (the engines nest it in their instruction).
        item = {k: v for k, v in result.normalized.items() if k != "procedure"}
        facts = {"address": address, "procedure": proc, "source": "provider", "instruction": item}
        return _result(call, facts, result)
    semantics = unavailable(
        call, "inspect_native_instruction", "control flow, operand kinds, registers read and written"
    )
    if proc is None:
        reason = "no procedure contains the address, and the provider decodes instructions only in procedures"
        body = _Decoded(
            address=address, procedure=None, source=_LISTING, semantics=semantics, instruction=None, reason=reason
        )
    else:
        item = _decoded(call, str(proc["address"]), address)
        item["size"] = len(str(item.get("bytes", ""))) // 2
        nb = annotate.notebook(call)
        note = nb.note(address)
        for field in ("comment", "inline_comment"):
            if getattr(note, field) is not None:
                item[field] = getattr(note, field)
        body = _Decoded(address=address, procedure=proc, source=_LISTING, semantics=semantics, instruction=item)
    return _result(call, msgspec.to_builtins(body))


_LISTING = "read_function_instructions"


class _Decoded(Record):
    """inspect_native_instruction where the provider has no such operation: the instruction as its procedure's
    listing decodes it (``reason`` says why there is none)."""

    address: str
    # The containing procedure and the instruction row as the provider answered them (its JSON).
    procedure: JSONObject | None
    source: str
    semantics: Unavailable
    instruction: JSONObject | None
    reason: str | None = None


# -- inspect_native_data_type -------------------------------------------------------------------------


def _inspect_data_type(call: ToolCall) -> Evidence:
    check_document(call)
    address, where = require_mapped(call, arg_str(call.args, "address", ""))
    if call.session.supports("inspect_native_data_type"):
        result = run(call, "inspect_native_data_type", {"address": address})
        found = dict(result.normalized)
        if isinstance(found.get("type"), dict):
            found["type"] = {"status": "known", **found["type"]}
        typed = decode({**found, "address": address, "source_operation": "provider"}, DataInspection, call.tool.name)
        return _result(call, _with_user_type(call, address, where, _as_array(call, typed)), result)
    name = (
        run(call, "address_name", {"address": address}).normalized
        if call.session.supports("address_name")
        else {"name": None}
    )
    strings = run(call, "list_strings", {"address": address, "offset": 0, "limit": 1}).normalized["strings"]
    section = where["section"] or where["region"]
    body = DataInspection(
        address=address,
        name=name.get("name"),
        name_source=name.get("name_source"),
        section=section["name"],
        permissions=section["permissions"],
        type=unavailable(call, "inspect_native_data_type", "typed data from debug info or analysis"),
    )
    if strings and strings[0]["address"] == address:
        s = strings[0]
        body.type = DataType(
            kind="string", name=f"{s['encoding']} string", size=s["byte_length"], encoding=s["encoding"]
        )
        body.value = s["value"]
        body.source = "string-scan"
    return _result(call, _with_user_type(call, address, where, body))


def _with_user_type(
    call: ToolCall,
    address: str,
    where: Mapped,
    body: DataInspection,
) -> types.TypedDataInspection:
    """The result, with the bytes read as the analyst's type where set_data_type gave the address one."""
    typed = types.typed_data(call, address, where)
    return types.TypedDataInspection(**msgspec.structs.asdict(body), user_type=typed)


def _as_array(call: ToolCall, body: DataInspection) -> DataInspection:
    """A pointer slot inside an array that code indexes says so: ``array`` (kind, base, element size, count, indexers).

    ``type`` stays the slot's own (a pointer), so callers reading slot types see no change.
    """
    if not isinstance(body.type, DataType) or body.type.kind != "pointer" or not call.session.supports("xrefs"):
        return body
    found = pointer_array(call, body.address)
    if found is None or found.count < 2:
        return body
    size, count = found.element_size, found.count
    body.array = PointerArray(
        kind="array",
        name=f"pointer[{count}]",
        size=size * count,
        base=found.base,
        element_size=size,
        count=count,
        count_truncated=found.count_truncated,
        index=found.index,
        indexed_by=list(found.indexed_by),
        source="pointer-array",
    )
    return body


# -- resolve_native_call_targets ----------------------------------------------------------------------


def _call_targets(call: ToolCall) -> Evidence:
    check_document(call)
    asked = arg_str(call.args, "address")
    site = normalize_address(asked) if asked is not None else None
    info = run(call, "procedure_address", {"procedure": call.args["procedure"]}).normalized
    procedure = ProcedureRef(address=info["address"], name=info["name"])
    if call.session.supports("resolve_native_call_targets"):
        params = {"procedure": info["address"], **({"address": site} if site else {})}
        result = run(call, "resolve_native_call_targets", params)
        return _result(call, {**result.normalized, "source": "provider"}, result)
    callees = run(call, "procedure_callees", {"procedure": info["address"]})
    # Each site: its kind (the first that named it), its targets, and why it stays unresolved (an indirect call).
    sites: dict[str, tuple[str, list[CallTarget], list[Unavailable]]] = {}
    for c in callees.normalized["callees"]:
        for at in c.get("call_sites", []):
            _, targets, unresolved = sites.setdefault(at, (c.get("kind", "direct"), [], []))
            if c.get("address") is None:
                unresolved[:] = [unavailable(call, "resolve_native_call_targets", "targets of indirect calls")]
            else:
                provenance = "import" if c.get("kind") == "import" else "direct"
                targets.append(CallTarget(address=c["address"], name=c.get("name"), provenance=provenance))
    outgoing: JSONObject = {"procedure": info["address"], "direction": "outgoing"}
    for r in every_row(call, "procedure_references", "references", outgoing, "call targets"):
        # Jump tables the provider resolved: one computed reference per target of the dispatching jump.
        to, source, name = r.get("to"), r.get("from"), r.get("to_name")
        if r["kind"] == "computed" and isinstance(to, str) and isinstance(source, str):
            _, targets, _ = sites.setdefault(source, ("computed-jump", [], []))
            if all(t.address != to for t in targets):
                named = name if isinstance(name, str) else None
                targets.append(CallTarget(address=to, name=named, provenance="jump-table"))
    rows = [
        CallSiteRow(
            address=at,
            kind=kind,
            targets=sorted(targets, key=lambda t: int(t.address, 16)),
            status="unresolved" if unresolved else "resolved",
            resolution=unresolved[0] if unresolved else None,
        )
        for at, (kind, targets, unresolved) in sorted(sites.items(), key=lambda e: int(e[0], 16))
    ]
    if site is not None:
        rows = [r for r in rows if r.address == site]
        if not rows:
            raise invalid_request(
                f"{site} is not a call or dispatch site of {procedure.name or info['address']}",
                [issue("address", "invalid_value", "not a call site of the procedure")],
            )
    body = {
        "procedure": procedure,
        "call_sites": rows,
        "source": "procedure_callees",
        "unresolved_count": sum(1 for r in rows if r.status == "unresolved"),
    }
    return _result(call, body, callees)


def tools() -> list[ToolDef]:
    site = prop("string", "Only this call or dispatch site (0x hex).", ["0x4010ac"], pattern=ADDRESS_PATTERN)
    return [
        binary_tool(
            name="inspect_native_instruction",
            description=(
                "One instruction: bytes, mnemonic, operands and procedure; control flow, operand kinds "
                "and registers where the provider offers inspect_native_instruction (else that facet "
                "is unavailable)."
            ),
            input_schema=ADDRESS_INPUT,
            handler=_inspect_instruction,
            result_type=InstructionInspection,
            requires_operations=("list_segments", "resolve_containing_procedure", "read_function_instructions"),
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
        binary_tool(
            name="inspect_native_data_type",
            description=(
                "The datum at an address: name, section, a string's type and value; typed data from "
                "debug info or analysis where the provider offers inspect_native_data_type."
            ),
            input_schema=ADDRESS_INPUT,
            result_type=types.TypedDataInspection,
            handler=_inspect_data_type,
            requires_operations=("list_segments", "list_strings"),
            cli_subject="address",
            examples=({"address": "0x402004"},),
        ),
        binary_tool(
            name="resolve_native_call_targets",
            result_type=CallTargets,
            description=(
                "Call and dispatch sites of a procedure with their targets and provenance (direct, "
                "import, jump table); indirect sites are resolved where the provider offers "
                "resolve_native_call_targets, else listed unresolved."
            ),
            input_schema=obj({"procedure": PROCEDURE, "address": site, "document": DOCUMENT}, ("procedure",)),
            handler=_call_targets,
            requires_operations=("procedure_address", "procedure_callees", "procedure_references"),
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "main", "address": "0x4010ac"}),
        ),
    ]
