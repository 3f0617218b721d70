"""The program as code searches read it: procedures, mapped units and instruction rows, gathered once.

Bytes come from the target file through the segments every provider lists (``image.regions``); instruction
rows from each procedure's ``read_function_instructions`` pages, cached per target, provider and annotation
revision. A hit's containing procedure comes from one procedure list, bisected locally.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import TypeVar

import msgspec

from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.regions import locate
from rea_plugins.binary.core.regions import read_file
from rea_plugins.binary.core.regions import regions
from rea_plugins.binary.core.schema import every_row
from rea_plugins.binary.core.shapes import Placed

MAX_SCAN_BYTES = 1 << 30
MAX_PROGRAM_INSTRUCTIONS = 5_000_000
_PROCEDURES = "binary.codesearch.procedures"
_INSTRUCTIONS = "binary.codesearch.instructions"
_NO_CODE = ("import", "external")
T = TypeVar("T")


class Procedure(msgspec.Struct, frozen=True, order=True, array_like=True):
    start: int
    end: int
    name: str


class Row(msgspec.Struct, frozen=True, array_like=True):
    """One instruction of the program: address, symbolized text, owning procedure's start, addresses it names."""

    address: int
    text: str
    procedure: int
    refs: tuple[int, ...] = ()


def cache_key(call: ToolCall) -> tuple[str, str, Any]:
    target = call.session.require_target()
    provider = call.session.provider.descriptor.id if call.session.provider else ""
    return target.sha256, provider, annotate.parameters(call).get(annotate.REVISION_PARAMETER)


# Where a search looks (its ``where`` argument): instruction operands, data words, or both (search_immediates,
# identify_crypto).
Where = Literal["code", "data", "both"]
WHERE: tuple[Where, ...] = ("code", "data", "both")


def kept(call: ToolCall, slot: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept in the session's ``slot`` per target, provider and annotation revision (``cache_key``)."""
    key = cache_key(call)
    held = call.session.state.get(slot)
    if isinstance(held, tuple) and held[0] == key:
        found: T = held[1]
        return found
    value = compute()
    call.session.state[slot] = (key, value)
    return value


def yara_match(rules: Any, data: bytes, timeout: int, scan: str, remediation: str) -> Any:
    """``rules``' matches in ``data``; past ``timeout`` seconds a provider_timeout naming the scan, and what to do."""
    import yara

    try:
        return rules.match(data=data, timeout=timeout)
    except yara.TimeoutError:
        raise ReaError(
            "provider_timeout",
            f"the {scan} took longer than {timeout} s",
            remediation=remediation,
            details={"reported_limits": {"timeout_s": timeout}},
        ) from None


def procedures(call: ToolCall) -> list[Procedure]:
    """Every procedure with code, by start (cached per target, provider and annotation revision)."""

    def listed() -> list[Procedure]:
        if not call.session.supports("list_procedures"):
            return []
        return sorted(
            Procedure(int(str(p["address"]), 16), int(str(p["end"]), 16), str(p["name"]))
            for p in every_row(call, "list_procedures", "procedures", {}, "list_procedures")
            if p.get("kind") not in _NO_CODE
        )

    return kept(call, _PROCEDURES, listed)


def containing(procs: list[Procedure], address: int) -> Procedure | None:
    """The innermost procedure whose extent holds ``address`` (nested extents are rare: look back a few)."""
    i = bisect.bisect_right(procs, address, key=lambda p: p.start) - 1
    for p in procs[max(0, i - 16) : i + 1][::-1]:
        if p.start <= address < p.end:
            return p
    return None


def procedure_ref(procs: list[Procedure], address: int | None) -> ProcedureRef | None:
    p = None if address is None else containing(procs, address)
    return None if p is None else ProcedureRef(address=hex(p.start), name=p.name)


# -- the file and its mapped units ---------------------------------------------------------------------------


class Unit(msgspec.Struct, frozen=True, kw_only=True):
    """A mapped unit with file bytes: a segment (a section where the format has no segments)."""

    name: str
    start: int
    file_offset: int
    file_size: int
    permissions: str


def _units(call: ToolCall, kind: Literal["segment", "section"]) -> list[Unit]:
    """The regions of ``kind`` that have file bytes, in the provider's order."""
    return [
        Unit(
            name=r["name"],
            start=int(r["start"], 16),
            file_offset=offset,
            file_size=r["file_size"],
            permissions=r.get("permissions") or "---",
        )
        for r in regions(call)
        if r["kind"] == kind
        and isinstance(offset := r.get("file_offset"), int)
        and isinstance(r.get("file_size"), int)
        and r["file_size"] > 0
    ]


def units(call: ToolCall) -> list[Unit]:
    """The mapped units with file bytes (segments; sections where there are none), by file offset."""
    kind: Literal["segment", "section"] = "segment" if any(r["kind"] == "segment" for r in regions(call)) else "section"
    return sorted(_units(call, kind), key=lambda u: u.file_offset)


def sections(call: ToolCall) -> list[Unit]:
    """The sections with file bytes, in the provider's order."""
    return _units(call, "section")


def address_of(mapped: list[Unit], file_offset: int) -> int | None:
    for u in mapped:
        if u.file_offset <= file_offset < u.file_offset + u.file_size:
            return u.start + file_offset - u.file_offset
    return None


def file_bytes(call: ToolCall) -> bytes:
    target = call.session.require_target()
    if target.size > MAX_SCAN_BYTES:
        raise ReaError(
            "resource_constraint",
            f"the target is larger than the {MAX_SCAN_BYTES >> 20} MiB a search reads",
            details={"resource": "memory", "reported_limits": {"max_scan_bytes": MAX_SCAN_BYTES}},
        )
    data = read_file(target, 0, target.size)
    if len(data) != target.size:
        raise ReaError(
            "artifact_changed",
            f"{target.resolved_path} changed size while open",
            details={"path": target.resolved_path},
        )
    return data


def ranges(call: ToolCall, scope: str, size: int) -> list[tuple[int, int]]:
    """File ranges to search: the whole file, or the file bytes of mapped units (merged)."""
    if scope == "file":
        return [(0, size)]
    merged: list[tuple[int, int]] = []
    for u in units(call):
        start, end = u.file_offset, min(size, u.file_offset + u.file_size)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif start < end:
            merged.append((start, end))
    return merged


def place(call: ToolCall, procs: list[Procedure], mapped: list[Unit], file_offset: int) -> Placed:
    """Address, segment, section and procedure of a file offset (the keys that say nothing are left out)."""
    address = address_of(mapped, file_offset)
    if address is None:
        return Placed(file_offset=file_offset)
    segment, section = locate(call, address)
    return Placed(
        file_offset=file_offset,
        address=hex(address),
        segment=None if segment is None else segment["name"],
        section=None if section is None else section["name"],
        procedure=procedure_ref(procs, address),
    )


def program_rows(call: ToolCall) -> list[Row]:
    """Every instruction of every procedure with code, by address (gathered once, then cached)."""
    return kept(call, _INSTRUCTIONS, lambda: _gathered_rows(call))


def _gathered_rows(call: ToolCall) -> list[Row]:
    procs = procedures(call)
    rows: dict[int, Row] = {}
    for n, p in enumerate(procs):
        if n % 64 == 0:
            call.ctx.progress(f"instructions: procedure {n} of {len(procs)}", done=n, total=len(procs))
        rows_of = every_row(
            call,
            "read_function_instructions",
            "instructions",
            {"procedure": hex(p.start)},
            "read_function_instructions",
        )
        for item in rows_of:
            address = int(str(item["address"]), 16)
            if address not in rows:
                symbols = item.get("symbols")
                refs = tuple(
                    int(sym["address"], 16)
                    for sym in (symbols if isinstance(symbols, list) else ())
                    if isinstance(sym, dict) and isinstance(sym.get("address"), str)
                )
                rows[address] = Row(address, str(item.get("symbolized") or item.get("text") or ""), p.start, refs)
        if len(rows) > MAX_PROGRAM_INSTRUCTIONS:
            raise ReaError(
                "resource_constraint",
                f"the program has more than {MAX_PROGRAM_INSTRUCTIONS} "
                "instructions; search a procedure with read_function_instructions instead",
                details={
                    "resource": "memory",
                    "reported_limits": {"max_program_instructions": MAX_PROGRAM_INSTRUCTIONS},
                },
            )
    return [rows[a] for a in sorted(rows)]
