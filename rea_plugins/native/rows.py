"""The native provider's answers as it writes them (docs/native-operations.md), field for field.

Each Struct encodes exactly the JSON object the provider has always answered: fields in the order the keys were
written, a key that is always written has no default (so a null is sent, never left out), and a key written only
in some answers defaults to ``UNSET`` (left out unless set). They differ from the kernel's
``rea.operations.shapes``, which leave out null fields: the native answers (and so their Evidence ids and the bytes
an agent receives) stay what they were. ``Operations`` hands the binary plugin their builtins (it reads every
provider's answer as JSON objects).
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET
from msgspec import UnsetType

from rea.plugin import DocumentItem
from rea.plugin import ExportRow
from rea.plugin import ImportRow as LayoutImportRow
from rea.plugin import JSONObject
from rea.plugin import Paged
from rea.plugin import Record
from rea_plugins.native.model import Linkage
from rea_plugins.native.model import Mitigations


class LibraryRow(Record):
    """Where a procedure named by a library signature comes from."""

    library: str
    object: str
    confidence: str


class ProcHead(Record):
    """What a procedure's listing row and its procedure_info open with."""

    address: str | None
    name: str
    size: int
    kind: str
    end: str | None
    name_source: str | None


class ProcRow(ProcHead):
    """A row of list_procedures and search_procedures."""

    part_of: str | None
    library: LibraryRow | UnsetType | None = UNSET


class ProcRef(Record):
    """A procedure named by its start (or any address and its name: the rows below that start so derive from it)."""

    address: str | None
    name: str | None


class PartRow(ProcRef):
    end: str | None


class ProcInfo(ProcHead):
    """procedure_info: the procedure's row (its parent named), then what the index knows of it."""

    part_of: ProcRef | None
    library: LibraryRow | UnsetType | None = UNSET
    section: str | None
    basic_block_count: int
    instruction_count: int
    signature: None
    calling_convention: str | None
    source: str
    parts: list[PartRow]


class Extent(ProcRef):
    """resolve_containing_procedure's procedure."""

    size: int
    end: str | None


class Containing(Record):
    address: str | None
    procedure: Extent | None


class DocumentRow(DocumentItem, kw_only=True):
    """The kernel's document row; a universal Mach-O's also names the slice read and every slice."""

    slice: str | UnsetType | None = UNSET
    slices: list[str] | UnsetType = UNSET


class Documents(Record):
    documents: list[DocumentRow]


class RegionRow(Record):
    """A segment or section of list_segments (with its kind) and binary_layout (without)."""

    name: str
    start: str | None
    end: str | None
    size: int
    permissions: str
    file_offset: int | None
    file_size: int
    kind: str | UnsetType = UNSET


class Segments(Record):
    segments: list[RegionRow]


class StringRow(Record):
    address: str | None
    value: str
    encoding: str
    byte_length: int
    truncated: bool
    section: str | None


class NameRow(Record):
    address: str | None
    name: str
    kind: str
    external: bool
    name_source: str | UnsetType = UNSET
    library: LibraryRow | UnsetType = UNSET


class ProcedureAddress(Record):
    procedure: str | None
    address: str | None
    name: str


class InsnRow(Record):
    address: str | None
    bytes: str
    mnemonic: str
    operands: str
    text: str
    symbolized: str
    # The kernel's symbolizer's rows (``symbols_of``): JSON objects it writes for every provider.
    symbols: list[JSONObject]


class Assembly(Record):
    address: str | None
    name: str
    instructions: list[InsnRow]
    truncated: bool


class InstructionPage(Record):
    """read_function_instructions: the page's rows first, then its paging fields and the procedure."""

    instructions: list[InsnRow]
    offset: int
    limit: int
    total: int
    next_offset: int | None
    address: str | None
    name: str


class BlockRow(Record):
    start: str | None
    end: str | None
    instruction_count: int
    successors: list[str | None]


class EdgeRow(Record, rename={"source": "from"}):
    source: str | None
    to: str | None
    kind: str


class Blocks(Record):
    address: str | None
    name: str
    blocks: list[BlockRow]
    edges: list[EdgeRow]


class CalleeRow(ProcRef):
    kind: str
    call_sites: list[str | None]


class Callees(Record):
    procedure: ProcRef
    callees: list[CalleeRow]


class CallerRow(ProcRef):
    call_sites: list[str | None]


class Callers(Record):
    procedure: ProcRef
    callers: list[CallerRow]


class RefRow(Record, rename={"source": "from"}):
    """A row of procedure_references."""

    source: str | None
    to: str | None
    kind: str
    from_procedure: str | None
    to_name: str | None


class XrefRow(Record, rename={"source": "from"}):
    source: str | None
    from_procedure: str | None
    kind: str
    to: str | None


class Xrefs(Record):
    address: str | None
    references: list[XrefRow]


class CallTarget(ProcRef):
    provenance: str


class CallSiteRow(Record):
    """A call or dispatch site whose targets the references give."""

    address: str | None
    kind: str
    status: str
    targets: list[CallTarget]


class IndirectSiteRow(Record):
    """A register dispatch: its targets from a bounded pointer table before it, or unresolved with the reason."""

    address: str | None
    kind: str
    targets: list[CallTarget]
    instruction: str | UnsetType = UNSET
    status: str
    reason: str | UnsetType = UNSET


class CallTargets(Record):
    procedure: ProcRef
    call_sites: list[CallSiteRow | IndirectSiteRow]
    unresolved_count: int


class TypeRow(Record):
    name: str
    kind: str
    size: int
    target: str | UnsetType | None = UNSET


class DataInspection(Record):
    address: str | None
    name: str | None
    source: str
    # A string's type as the kernel's ``string_type`` writes it for every provider (JSON), else the native one.
    type: TypeRow | JSONObject
    value: str | UnsetType | None = UNSET
    target_name: str | UnsetType | None = UNSET


class ImportRow(LayoutImportRow):
    """binary_layout's import row, and what the import binds: ``function`` or ``data``."""

    kind: str


class Layout(Record):
    format: str
    architecture: str
    entry: str | None
    bits: int
    image_base: str | None
    segments: list[RegionRow]
    sections: list[RegionRow]
    mitigations: Mitigations
    linkage: Linkage
    imports: list[ImportRow]
    exports: list[ExportRow]


def builtins(answer: msgspec.Struct) -> JSONObject:
    """``answer`` as the JSON object it encodes to: the binary plugin reads every provider's answer by key."""
    out: JSONObject = msgspec.to_builtins(answer)
    return out


class FingerprintRow(Record):
    """A procedure's content hash and how many instructions it hashed."""

    address: str | None
    name: str
    kind: str
    instructions: int
    hash: str


class Fingerprints(Paged):
    fingerprints: list[FingerprintRow]


class CallEdgeRow(Record):
    """A caller-to-callee edge; a callee that is no procedure but has a name (an import's slot) carries it."""

    caller: str
    callee: str | None
    kind: str
    calls: int
    callee_name: str | UnsetType = UNSET


class CallGraphPage(Paged):
    """program_call_graph's complete page: ``names`` holds the page's procedures."""

    procedures: int
    edges: list[CallEdgeRow]
    names: dict[str, str]
