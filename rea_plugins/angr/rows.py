"""The rows angr's answers are built of: the kernel's native answer records where they fit, Structs of their own
where angr's answer sends a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import msgspec

from rea.plugin import JSONObject, Record, ReferenceItem, StringItem, answers

T = TypeVar("T")


class ReferenceRow(ReferenceItem, kw_only=True, omit_defaults=False):
    """A reference with ``from_procedure`` and ``to_name`` always sent, null included."""


class XrefRow(Record, frozen=True, kw_only=True, rename={"source": "from"}):
    """One reference to an address (``xrefs``), its keys in the order the answer sends them."""

    source: str
    from_procedure: str | None
    kind: Literal["call", "jump", "data", "read", "write", "indirect", "computed", "external"]
    to: str


class NameRow(Record, frozen=True, kw_only=True):
    """One name of ``list_names`` (the contract's ``NameItem`` without the fields the tools add)."""

    address: str
    name: str
    kind: Literal["function", "data", "import", "export", "label"]
    external: bool


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
    item: NameRow


def page(key: str, items: Sequence[T], params: dict[str, Any], render: Callable[[T], object]) -> dict[str, object]:
    """``answers.page`` for rows rendered as Structs (its ``render`` returns dicts)."""
    offset, limit = answers.paging(params)
    window = items[offset : offset + limit]
    return {key: [render(x) for x in window], **answers.page_fields(offset, limit, len(window), len(items))}
