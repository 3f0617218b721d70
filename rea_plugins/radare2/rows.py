"""The rows radare2's answers are built of: the kernel's native answer records where they fit, Structs of their own
where radare2's answer says a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import DocumentItem, NameItem, Record, StringItem

RefKind = Literal["call", "jump", "data", "read", "write", "indirect", "computed", "external"]
CalleeKind = Literal["direct", "tail", "import", "indirect"]
NameKind = Literal["function", "data", "import", "export", "label"]
ProcKind = Literal["local", "import", "thunk", "external"]


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
    item: NameItem
