"""Rows the engine providers build alike (angr's and radare2's workers, the native provider) and the pages over them.

An engine keeps its string and name rows with their address as an integer, in its own mapping, for the lookups by
address; ``list_strings``, ``search_strings`` and ``list_names`` page them here by the rules
``rea.operations.answers`` applies to an engine's records, and a string row keeps the bounds here
(``string_options`` records them in the analysis profile). ``InsnRow`` is a listing's instruction; ``RegionRow``,
``ImportRow`` and ``ExportRow`` are binary_layout's rows; ``DataFlow`` is procedure_data_flow's answer, which the
binary tools declare and the native provider sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from rea.arguments import Arguments
from rea.operations.answers import search
from rea.operations.paging import page
from rea.operations.shapes import NameItem
from rea.operations.shapes import SegmentItem
from rea.operations.shapes import SegmentKind
from rea.operations.shapes import StringItem
from rea.records import JSONObject
from rea.records import Record

StringsPage = dict[str, list[StringItem] | int | None]
NamesPage = dict[str, list[NameItem] | int | None]

# A string is listed from this many characters; its value is cut at the maximum (``truncated`` says so).
MIN_STRING_CHARS: Final = 4
MAX_STRING_CHARS: Final = 1024


class AddressedString(msgspec.Struct, frozen=True):
    """A string row and its address as an integer, in the engine's mapping (what lookups by address read)."""

    addr: int
    item: StringItem


class AddressedName(msgspec.Struct, frozen=True):
    """A name row and its address as an integer, in the engine's mapping."""

    addr: int
    item: NameItem


def _string_item(s: AddressedString) -> StringItem:
    return s.item


def _name_item(n: AddressedName) -> NameItem:
    return n.item


def string_options(source: str) -> JSONObject:
    """The analysis profile's ``strings``: where the engine finds them, and the bounds above."""
    return {"source": source, "min_chars": MIN_STRING_CHARS, "max_chars": MAX_STRING_CHARS}


def strings_page(strings: Sequence[AddressedString], params: Arguments, at: int | None = None) -> StringsPage:
    """list_strings: a page of the strings, or of the string holding the address ``at`` (answers' rule)."""
    if at is not None:
        strings = [s for s in strings if s.addr <= at < s.addr + max(s.item.byte_length, 1)]
    return page("strings", strings, params, _string_item)


def found_strings_page(strings: Sequence[AddressedString], params: Arguments) -> StringsPage:
    """search_strings: a page of the strings whose value matches the request."""
    return page("strings", search(strings, lambda s: s.item.value, params), params, _string_item)


def names_page(names: Sequence[AddressedName], params: Arguments, at: int | None = None) -> NamesPage:
    """list_names: a page of the names, or of those at the address ``at``."""
    if at is not None:
        names = [n for n in names if n.addr == at]
    return page("names", names, params, _name_item)


def names_by_address(names: Sequence[AddressedName]) -> dict[int, list[str]]:
    """Every address's names, in the names' order (address_name answers the first)."""
    index: dict[int, list[str]] = {}
    for n in names:
        index.setdefault(n.addr, []).append(n.item.name)
    return index


class InsnRow(Record):
    """An instruction row as an engine's listing sends it: its text once, then, once symbolized, the named form and
    its operands' symbols (an engine that has not symbolized it leaves them out)."""

    address: str
    bytes: str
    mnemonic: str
    operands: str
    text: str
    symbolized: str | None = None
    # The kernel's ``symbols_of`` rows (operand, address, name, string): JSON it builds.
    symbols: list[JSONObject] | None = None


class RegionRow(Record):
    """A segment or section of binary_layout: a segment listing's row without its kind."""

    name: str
    start: str
    end: str
    size: int
    permissions: str
    file_offset: int
    file_size: int

    @classmethod
    def spanning(cls, name: str, start: int, end: int, permissions: str, file_offset: int, file_size: int) -> RegionRow:
        """The row of ``[start, end)``."""
        return cls(
            name=name,
            start=hex(start),
            end=hex(end),
            size=end - start,
            permissions=permissions,
            file_offset=file_offset,
            file_size=file_size,
        )

    def segment(self, kind: SegmentKind) -> SegmentItem:
        """The segment listing's row: this one and its kind."""
        return SegmentItem(**msgspec.structs.asdict(self), kind=kind)


class ImportRow(Record):
    """An import of binary_layout: its library and its slot, where the file says."""

    name: str
    library: str | None
    slot: str | None


class ExportRow(Record):
    """An export of binary_layout."""

    name: str
    address: str | None


class FlowStep(Record):
    """One p-code op defining the value (or a value it is computed from), ``depth`` ops from the argument."""

    depth: int
    address: str
    opcode: str
    output: str | None
    inputs: list[str]


class DataFlow(Record):
    address: str
    name: str
    site: str
    argument: int
    arguments: int
    value: str
    steps: list[FlowStep]
    # Where the slice starts from: constants (with the string or name there), named memory, the function's inputs.
    sources: list[str]
    truncated: bool
