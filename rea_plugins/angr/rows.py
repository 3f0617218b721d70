"""The rows angr's answers are built of: the kernel's native answer records where they fit, Structs of their own
where angr's answer sends a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

from rea.plugin import JSONObject, Record


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
