"""Moving the navigation cursor: goto_address, next_address and prev_address.

The cursor (``navigation.cursor``) lives in the connection's session state, so each MCP connection
moves its own. Steps go instruction by instruction inside a procedure and on to the neighbouring
procedure's entry (forward) or last instruction (backward) at its edges.
"""

from __future__ import annotations

import functools
from typing import Literal

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_address
from rea_plugins.binary.core.regions import require_mapped
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import containing
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import navigation_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import CursorMove
from rea_plugins.binary.core.shapes import CursorStep
from rea_plugins.binary.navigation.cursor import CURSOR
from rea_plugins.binary.navigation.cursor import cursor

PAGE = 1000
# Decoding stops here: a step inside a larger procedure is limited to its first instructions.
MAX_PAGES = 50
_INSTRUCTIONS = "binary.cursor_instructions"
_LIMITATION = "the cursor is rea's per-connection selection (no engine UI); it starts at the entry point"


def set_cursor(call: ToolCall, address: str) -> None:
    target = call.session.require_target()
    call.session.state[CURSOR] = {"sha256": target.sha256, "address": address}


def instructions(call: ToolCall, procedure: str) -> list[str]:
    """Instruction addresses of one procedure in address order (the last procedure's are cached)."""
    target = call.session.require_target()
    key = (target.sha256, call.session.provider.descriptor.id if call.session.provider else "", procedure)
    cached = call.session.state.get(_INSTRUCTIONS)
    if isinstance(cached, dict) and cached.get("key") == key:
        kept: list[str] = cached["addresses"]
        return kept
    found: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None and pages < MAX_PAGES:
        call.ctx.check("cursor")
        body = run(
            call, "read_function_instructions", {"procedure": procedure, "offset": offset, "limit": PAGE}
        ).normalized
        found.extend(i["address"] for i in body["instructions"])
        offset, pages = body["next_offset"], pages + 1
    found.sort(key=lambda a: int(a, 16))
    call.session.state[_INSTRUCTIONS] = {"key": key, "addresses": found}
    return found


class _Procedures:
    """Procedures by index in address order, read one at a time (a binary search needs few); each is the provider's
    ``list_procedures`` row (an engine's JSON)."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.seen: dict[int, JSONObject] = {}
        first = run(call, "list_procedures", {"offset": 0, "limit": 1}).normalized
        self.total: int = first["total"]
        if first["procedures"]:
            self.seen[0] = first["procedures"][0]

    def at(self, index: int) -> JSONObject:
        if index not in self.seen:
            self.call.ctx.check("cursor")
            page = run(self.call, "list_procedures", {"offset": index, "limit": 1}).normalized["procedures"]
            self.seen[index] = page[0]
        return self.seen[index]

    def first_index(self, above: int, strictly: bool) -> int:
        """The first index whose entry is above ``above`` (or at it, unless ``strictly``)."""
        lo, hi = 0, self.total
        while lo < hi:
            mid = (lo + hi) // 2
            start = int(str(self.at(mid)["address"]), 16)
            if start > above or (not strictly and start == above):
                hi = mid
            else:
                lo = mid + 1
        return lo


def _decoded(call: ToolCall, procedure: JSONObject) -> list[str]:
    """The instruction addresses of a procedure (the provider's row); none where the provider decodes none there."""
    try:
        return instructions(call, str(procedure["address"]))
    except ReaError as exc:
        if exc.code not in ("invalid_request", "capability_unavailable"):
            raise
        return []


def _last_instruction(call: ToolCall, procedure: JSONObject) -> str:
    if procedure.get("kind") not in (None, "local", "thunk"):
        return str(procedure["address"])
    found = _decoded(call, procedure)
    return found[-1] if found else str(procedure["address"])


# The answers (``CursorStep``, ``CursorMove``): every key said, the procedure as the provider answered
# resolve_containing_procedure (an engine's JSON: another provider's keys are kept).


class _Step(Record):
    address: str
    previous_address: str
    moved: bool
    unit: Literal["instruction", "procedure"] | None
    procedure: JSONObject | None


class _Move(Record):
    address: str
    previous_address: str | None
    region: str
    procedure: JSONObject | None


def _step(call: ToolCall, forward: bool) -> Evidence:
    check_document(call)
    given = arg_str(call.args, "address")
    start = normalize_address(given) if given is not None else cursor(call)
    if start is None:
        raise invalid_request(
            "the cursor has no address yet (the target has no entry point); pass address",
            [issue("address", "missing_argument", "give the address to step from")],
        )
    here = int(start, 16)
    proc = containing(call, start)
    new: str | None = None
    unit: Literal["instruction", "procedure"] | None = None
    if proc is not None:
        addresses = _decoded(call, proc)
        if forward:
            new = next((a for a in addresses if int(a, 16) > here), None)
        else:
            new = next((a for a in reversed(addresses) if int(a, 16) < here), None)
        unit = "instruction" if new is not None else None
    if new is None:
        procs = _Procedures(call)
        if forward:
            index = procs.first_index(here, strictly=True)
            if index < procs.total:
                new, unit = str(procs.at(index)["address"]), "procedure"
        else:
            edge = int(str(proc["address"]), 16) if proc is not None else here
            index = procs.first_index(edge, strictly=False) - 1
            if index >= 0:
                new, unit = _last_instruction(call, procs.at(index)), "procedure"
    moved = new is not None
    if new is not None:
        set_cursor(call, new)
    where = new or start
    body = _Step(
        address=where,
        previous_address=start,
        moved=moved,
        unit=unit,
        procedure=containing(call, where) if where != start else proc,
    )
    lims = [_LIMITATION]
    if not moved:
        lims.append(f"no {'later' if forward else 'earlier'} instruction or procedure: the cursor stays at {start}")
    return evidence(call, OperationResult(normalized=body, limitations=lims))


def _goto(call: ToolCall) -> Evidence:
    check_document(call)
    address, where = require_mapped(call, arg_str(call.args, "address", ""))  # required by the schema
    previous = cursor(call)
    set_cursor(call, address)
    body = _Move(
        address=address, previous_address=previous, region=where["region"]["name"], procedure=containing(call, address)
    )
    return evidence(call, OperationResult(normalized=body, limitations=[_LIMITATION]))


def tools() -> list[ToolDef]:
    from_address = prop(
        "string", "Step from this address instead of the cursor (0x hex).", ["0x401136"], pattern=ADDRESS["pattern"]
    )
    needs = ("list_procedures", "resolve_containing_procedure", "read_function_instructions")
    moving = ToolEffects(mutates_session=True, idempotent=False)
    return [
        navigation_tool(
            name="goto_address",
            result_type=CursorMove,
            description="Move this connection's cursor to a mapped address; returns it with its procedure.",
            input_schema=ADDRESS_INPUT,
            handler=_goto,
            requires_operations=("list_segments", "resolve_containing_procedure"),
            effects=ToolEffects(mutates_session=True),
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
        # The two steps, alike but for the way they go: the tool, whether it steps forward, what it does, an example.
        *(
            navigation_tool(
                name=name,
                result_type=CursorStep,
                description=description,
                input_schema=obj({"address": from_address, "document": DOCUMENT}),
                handler=functools.partial(_step, forward=forward),
                requires_operations=needs,
                effects=moving,
                cli_subject="address",
                examples=({}, {"address": example}),
            )
            for name, forward, description, example in (
                (
                    "next_address",
                    True,
                    "Step the cursor to the next instruction of its procedure, or past the procedure's end "
                    "to the next procedure's entry.",
                    "0x401136",
                ),
                (
                    "prev_address",
                    False,
                    "Step the cursor to the previous instruction of its procedure, or before its entry to "
                    "the previous procedure's last instruction.",
                    "0x401140",
                ),
            )
        ),
    ]
