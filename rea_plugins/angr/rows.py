"""The rows angr's answers are built of: the kernel's native answer records where they fit, Structs of their own
where angr's answer sends a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

import msgspec

from rea.plugin import JSONObject, NameItem, Record, StringItem


class InsnRow(Record, frozen=True, kw_only=True):
    """An instruction of a listing, symbolized: its text once, then the named form and its operands' symbols."""

    address: str
    bytes: str
    mnemonic: str
    operands: str
    text: str
    symbolized: str
    # The kernel's ``symbols_of`` rows (operand, address, name, string): JSON it builds.
    symbols: list[JSONObject]


class AddressedString(msgspec.Struct, frozen=True):
    """A string row and its address in angr's mapping (what lookups by address read)."""

    addr: int
    item: StringItem


class AddressedName(msgspec.Struct, frozen=True):
    """A name row and its address in angr's mapping."""

    addr: int
    item: NameItem
