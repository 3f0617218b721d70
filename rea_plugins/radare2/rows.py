"""The rows radare2's answers are built of: the kernel's native answer records where they fit, Structs of their own
where radare2's answer says a key the record omits; each is encoded once, in the worker's reply."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import DocumentItem
from rea.plugin import ExportRow
from rea.plugin import ImportRow
from rea.plugin import JSONObject
from rea.plugin import ProcedureRef
from rea.plugin import Record
from rea.plugin import RegionRow

CalleeKind = Literal["direct", "tail", "import", "indirect"]


class CallTarget(Record):
    """One target of a call or dispatch site (``resolve_native_call_targets``) and where it was learnt."""

    address: str
    name: str | None
    provenance: str


class CallSiteRow(Record):
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


class AnalysisStats(Record):
    """What the worker's ``analyze`` did (the first time; later calls say only the functions and seconds)."""

    functions: int
    seeded: int | None = None
    separated: int | None = None
    absorbed: int | None = None
    seconds: float


class Mitigations(Record):
    """binary_layout's hardening as radare2's binary info reports it (CET and BTI are not read: ``"unknown"``)."""

    nx: bool
    pie: bool
    relro: str
    canary: bool
    fortify: bool
    cet_ibt: str
    cet_shstk: str
    bti: str


class Linkage(Record):
    interpreter: str | None
    needed: list[str]
    rpath: list[str]
    runpath: list[str]


class Layout(Record):
    format: str
    architecture: str
    entry: str | None
    bits: int
    image_base: str
    segments: list[RegionRow]
    sections: list[RegionRow]
    mitigations: Mitigations
    linkage: Linkage
    imports: list[ImportRow]
    exports: list[ExportRow]


class TypeRow(Record):
    """inspect_native_data_type's type of a pointer, code or a sized symbol."""

    name: str
    kind: str
    size: int
    target: str | msgspec.UnsetType = msgspec.UNSET


class DataInspection(Record):
    """inspect_native_data_type: what lies at an address, then where that was learnt (``source``)."""

    address: str
    name: str | None
    # A string's type as the kernel's ``string_type`` writes it for every provider (JSON), else radare2's own.
    type: TypeRow | JSONObject
    value: str | msgspec.UnsetType = msgspec.UNSET
    target_name: str | msgspec.UnsetType | None = msgspec.UNSET
    source: str


class InstructionFacts(Record):
    """inspect_native_instruction: radare2's decoding of one instruction, symbolized, with its flow and registers."""

    address: str
    size: int
    bytes: str
    mnemonic: str
    operands: str
    text: str
    symbolized: str
    procedure: ProcedureRef | None
    flow: str | None
    targets: list[str]
    fallthrough: str | None
    # The kernel's operand-detail rows (its symbolizer reads them by key), completed from radare2's ``opex``.
    operand_details: list[JSONObject]
    reads: list[str]
    writes: list[str]
    groups: list[str]
