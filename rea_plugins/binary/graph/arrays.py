"""Pointer arrays in data: from one slot to the array holding it and the code that indexes it (any provider).

Code indexing ``table[i]`` references only the array's base; a string in the 2nd slot is referenced by that slot
alone. An array here is a run of contiguous pointer-sized slots, each pointing into the image (read from the
target's file bytes, mapped through ``list_segments``); its base is the nearest slot at or before the given one
that code references (``xrefs`` with a ``from_procedure``). The ``xrefs`` tool reports those steps as
``through_arrays``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import IndexingCode
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea_plugins.binary.core.regions import locate
from rea_plugins.binary.core.regions import read_file
from rea_plugins.binary.core.regions import region_file_offset
from rea_plugins.binary.core.regions import regions
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.graph.crossbinary import xrefs_across

MAX_BACK = 256  # slots looked back for the base
MAX_COUNT = 4096  # slots counted from the base


Order = Literal["little", "big"]


def _layout(call: ToolCall) -> tuple[int, Order]:
    """Pointer size in bytes and byte order of the open document."""
    doc = run(call, "list_documents", {}).normalized["documents"][0]
    order: Order = "big" if doc.get("endianness") == "big" else "little"
    return (4 if doc.get("bits") == 32 else 8), order


def _mapped(call: ToolCall, value: int) -> bool:
    return value != 0 and any(
        int(r["start"], 16) <= value < int(r["end"], 16) for r in regions(call) if r.get("size", 0) > 0
    )


def _slots(call: ToolCall, start: int, count: int, size: int, order: Order) -> list[int | None]:
    """The pointer values of ``count`` slots from ``start`` (None where a slot is not file-backed)."""
    segment, section = locate(call, start)
    region = section or segment
    offset = None if region is None else region_file_offset(region, start)
    if region is None or offset is None:
        return [None] * count
    backed = int(region.get("file_size") or 0) - (start - int(region["start"], 16))
    data = read_file(call.session.require_target(), offset, max(0, min(count * size, backed)))
    return [
        int.from_bytes(data[i * size : (i + 1) * size], order) if (i + 1) * size <= len(data) else None
        for i in range(count)
    ]


def _code_refs(call: ToolCall, address: int) -> list[IndexingCode]:
    refs = run(call, "xrefs", {"address": hex(address)}).normalized["references"]
    return [IndexingCode(source=r["from"], procedure=r["from_procedure"]) for r in refs if r.get("from_procedure")]


class FoundArray(Record):
    """A pointer array holding a slot: its base, element size, count (``count_truncated`` at MAX_COUNT), the slot's
    index in it, and the code indexing it from its base."""

    base: str
    element_size: int
    count: int
    count_truncated: bool
    index: int
    slot: str
    indexed_by: list[IndexingCode]


class ThroughArray(Record, rename={"source": "from"}):
    """A ``through_arrays`` row of xrefs (its ArrayStep): code indexing, from its base, the array holding a slot."""

    source: str
    procedure: str | None
    via: str
    slot: str
    base: str
    index: int


def pointer_array(call: ToolCall, slot: str) -> FoundArray | None:
    """The array holding the pointer slot ``slot`` and the code indexing it from its base; None if there is none."""
    size, order = _layout(call)
    here = int(slot, 16)
    segment, section = locate(call, here)
    region = section or segment
    first = _slots(call, here, 1, size, order)[0]
    if region is None or first is None or not _mapped(call, first):
        return None
    # An array lies within one section: look back no further than its start.
    back = min(MAX_BACK, (here - int(region["start"], 16)) // size)
    before = _slots(call, here - back * size, back, size, order) if back else []
    base, indexed_by = here, _code_refs(call, here)
    step = 0
    while not indexed_by and step < len(before):
        step += 1
        value = before[-step]
        # The array ends where a slot holds no pointer into the image.
        if value is None or not _mapped(call, value):
            return None
        base = here - step * size
        indexed_by = _code_refs(call, base)
    if not indexed_by:
        return None
    values = _slots(call, base, MAX_COUNT, size, order)
    count = 0
    while count < len(values) and values[count] is not None and _mapped(call, values[count] or 0):
        count += 1
    return FoundArray(
        base=hex(base),
        element_size=size,
        count=count,
        count_truncated=count >= MAX_COUNT,
        index=(here - base) // size,
        slot=hex(here),
        indexed_by=indexed_by,
    )


MAX_FOLLOWED = 16  # data slots xrefs follows back to an array base


def handle_xrefs(call: ToolCall) -> Evidence:
    """xrefs, plus ``through_arrays``: code indexing, from its base, a pointer array whose slot holds the address."""
    check_document(call)
    result = run(call, "xrefs", params_of(call.args))
    slots = [r["from"] for r in result.normalized["references"] if not r.get("from_procedure")]
    steps: list[ThroughArray] = []
    for slot in slots[:MAX_FOLLOWED]:
        found = pointer_array(call, slot)
        if found is not None:
            steps.extend(
                ThroughArray(
                    source=site.source,
                    procedure=site.procedure,
                    via="array-base",
                    slot=slot,
                    base=found.base,
                    index=found.index,
                )
                for site in found.indexed_by
            )
    body = {**result.normalized, "through_arrays": steps, **xrefs_across(call, result.normalized["address"])}
    lims = list(result.limitations)
    if len(slots) > MAX_FOLLOWED:
        body["through_arrays_truncated"] = True
        lims.append(f"through_arrays follows the first {MAX_FOLLOWED} of {len(slots)} data slots")
    return evidence(call, msgspec.structs.replace(result, normalized=body, limitations=lims))


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "xrefs",
            description="References to an address (call, jump, data, read, write, indirect, computed, external); "
            "through_arrays: code indexing a pointer array that holds it.",
            input_schema=ADDRESS_INPUT,
            handler=handle_xrefs,
            cli_subject="address",
            examples=({"address": "0x402004"},),
        ),
    ]
