"""The rows radare2's answers are built of: the kernel's native answer records where they fit, Structs of their own
where radare2's answer says a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import msgspec

from rea.plugin import DocumentItem, Record, ReferenceItem, StringItem, answers

T = TypeVar("T")

RefKind = Literal["call", "jump", "data", "read", "write", "indirect", "computed", "external"]
CalleeKind = Literal["direct", "tail", "import", "indirect"]
NameKind = Literal["function", "data", "import", "export", "label"]
ProcKind = Literal["local", "import", "thunk", "external"]


class ReferenceRow(ReferenceItem, kw_only=True, omit_defaults=False):
    """A reference as radare2's answers send it: ``from_procedure`` and ``to_name`` always, null included (the
    contract's ``ReferenceItem`` leaves a null one out)."""


class XrefRow(Record, frozen=True, kw_only=True, rename={"source": "from"}):
    """One reference to an address (``xrefs``), in the order radare2's answer has always sent its keys."""

    source: str
    from_procedure: str | None
    kind: RefKind
    to: str


class NameRow(Record, frozen=True, kw_only=True):
    """One name of ``list_names`` (the contract's ``NameItem`` without the annotation fields the tools add)."""

    address: str
    name: str
    kind: NameKind
    external: bool


class RegionRow(Record, frozen=True, kw_only=True):
    """A segment or section of ``binary_layout``: a segment listing's row without its kind."""

    name: str
    start: str
    end: str
    size: int
    permissions: str
    file_offset: int
    file_size: int


class CallTarget(Record, frozen=True, kw_only=True):
    """One target of a call or dispatch site (``resolve_native_call_targets``) and where it was learnt."""

    address: str
    name: str | None
    provenance: str


class CallSiteRow(Record, frozen=True, kw_only=True):
    """A call or dispatch site and its targets; ``reason`` says why an unresolved one stays so."""

    address: str
    kind: str
    instruction: str
    targets: list[CallTarget]
    status: str
    reason: str | None = None


class SlicedDocument(DocumentItem, kw_only=True):
    """The document of ``list_documents``; a universal Mach-O's also names the slice read and every slice."""

    slice: str | None = None
    slices: list[str] | None = None


class AnalysisStats(Record, frozen=True, kw_only=True):
    """What the worker's ``analyze`` did (the first time; later calls say only the functions and seconds)."""

    functions: int
    seeded: int | None = None
    separated: int | None = None
    absorbed: int | None = None
    seconds: float


class AddressedString(msgspec.Struct, frozen=True):
    """A string row and its address as an integer (what the lookups by address read)."""

    addr: int
    item: StringItem


class AddressedName(msgspec.Struct, frozen=True):
    """A name row and its address as an integer."""

    addr: int
    item: NameRow


def page(key: str, items: Sequence[T], params: dict[str, Any], render: Callable[[T], object]) -> dict[str, object]:
    """``answers.page`` over rows rendered as Structs (its ``render`` returns dicts): the window under ``key``, then
    the paging fields, in that order."""
    offset, limit = answers.paging(params)
    window = items[offset : offset + limit]
    return {key: [render(x) for x in window], **answers.page_fields(offset, limit, len(window), len(items))}
