"""The normalized results of the native operations, one msgspec Struct per shape (docs/native-operations.md).

Every provider's result of an operation decodes into its shape (the conformance suite checks it), and the
catalog generates each tool's advertised output schema from it. Addresses are ``0x`` hex strings. A field
with a default is one some providers or tools add and others omit (its comment says when); extra keys
are additive and allowed, so a provider may say more than the shape, never less or otherwise.
"""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import TypeVar

import msgspec

from rea.errors import ReaError
from rea.records import JSONObject

ProcedureKind = Literal["local", "import", "thunk", "external"]
SegmentKind = Literal["segment", "section"]
StringEncoding = Literal["ascii", "utf-8", "utf-16le"]
NameKind = Literal["function", "data", "import", "export", "label"]
ReferenceKind = Literal["call", "jump", "data", "read", "write", "indirect", "computed", "external"]


class Shape(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A normalized result (or a part of one)."""


class Page(Shape):
    """The paging fields every paged result has: ``next_offset`` is null on the last page."""

    offset: int
    limit: int
    total: int
    next_offset: int | None


class ProcedureRef(Shape):
    """A procedure named by its entry."""

    address: str
    name: str | None


# -- inventory ---------------------------------------------------------------------------------


class DocumentItem(Shape):
    name: str
    format: str
    architecture: str
    sha256: str
    entry: str | None
    bits: int
    endianness: str


class Documents(Shape):
    documents: list[DocumentItem]


class SegmentItem(Shape):
    name: str
    start: str
    end: str
    size: int
    permissions: str
    file_offset: int | None
    file_size: int
    kind: SegmentKind


class Segments(Shape):
    segments: list[SegmentItem]


class LibraryMatch(Shape):
    """Where a name given by a library signature comes from (native: FLIRT patterns of the host's static
    libraries); ``confidence`` is high (unique, 16+ known bytes), medium (fewer known bytes) or low (several
    library functions have these bytes)."""

    library: str
    object: str
    confidence: Literal["high", "medium", "low"]


class ProcedureItem(Shape):
    address: str
    name: str
    size: int
    kind: ProcedureKind
    end: str
    # Where the name came from (symbol, import, entry-heuristic, parent, generated, user); native and user names.
    name_source: str | None = None
    # A split-off part's parent entry (native).
    part_of: str | None = None
    # The engine's name a user name replaced.
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None
    # A name given by a library signature (name_source "signature"): its library, object and confidence.
    library: LibraryMatch | None = None


class Procedures(Page):
    procedures: list[ProcedureItem]


# The lean projection of a procedure listing (list_procedures with ``detail: lean``): ``end`` is address + size, the
# name is null where it is the made ``sub_<address>``, the kind one letter; the few split-off parts in ``parts``.
PROCEDURE_KIND_CODES: dict[str, Literal["l", "i", "t", "e"]] = {
    "local": "l",
    "import": "i",
    "thunk": "t",
    "external": "e",
}
PROCEDURE_LEGEND = (
    "procedures: [address, name, size, kind]; name null: sub_<address>; kind l local, i import, t thunk, "
    "e external; parts: a split-off part's parent"
)


class ProcedureRow(msgspec.Struct, array_like=True, frozen=True):
    """One procedure as ``[address, name, size, kind]`` (``PROCEDURE_LEGEND``)."""

    address: str
    name: str | None
    size: int
    kind: Literal["l", "i", "t", "e"]


class ProcedureRows(Page):
    """A page of procedures, lean (``legend`` says the row layout; ``parts`` maps a split-off part to its parent)."""

    legend: str
    procedures: list[ProcedureRow]
    parts: dict[str, str] = {}


class StringItem(Shape):
    address: str
    value: str
    encoding: StringEncoding
    byte_length: int
    truncated: bool
    section: str | None
    # A short string an instruction or a data pointer names (the tools add these; omitted otherwise).
    referenced: bool = False


class Strings(Page):
    strings: list[StringItem]


class NameItem(Shape):
    address: str
    name: str
    kind: NameKind
    external: bool
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None
    # A name given by a library signature (name_source "signature"): its library, object and confidence.
    library: LibraryMatch | None = None


class Names(Page):
    names: list[NameItem]


class AddressName(Shape):
    address: str
    name: str | None
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None


class ProcedureAddress(Shape):
    procedure: str
    address: str
    name: str
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None


class ContainingProcedure(Shape):
    address: str
    name: str
    size: int
    end: str
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None


class ResolvedContainer(Shape):
    address: str
    procedure: ContainingProcedure | None


# -- one procedure ------------------------------------------------------------------------------


class PartRef(Shape):
    address: str
    name: str
    end: str


class ProcedureInfo(Shape):
    address: str
    name: str
    size: int
    end: str
    kind: ProcedureKind
    section: str | None
    basic_block_count: int | None
    instruction_count: int | None
    signature: str | None
    calling_convention: str | None
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None
    # A name given by a library signature (name_source "signature"): its library, object and confidence.
    library: LibraryMatch | None = None
    # Native: how the start was found, and split-off parts.
    source: str | None = None
    part_of: ProcedureRef | None = None
    parts: list[PartRef] = []
    # The analyst's signature, notes and comment (annotations).
    original_signature: str | None = None
    signature_source: str | None = None
    notes: str | None = None
    comment: str | None = None


class OperandSymbol(Shape):
    operand: int
    address: str
    name: str | None
    string: str | None = None
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None


class InstructionRow(Shape):
    """One instruction: its text once; ``symbolized`` only where it differs, operands split only when asked."""

    address: str
    bytes: str
    text: str
    symbolized: str | None = None
    symbols: list[OperandSymbol] = []
    mnemonic: str | None = None
    operands: str | None = None
    comment: str | None = None
    inline_comment: str | None = None
    # The row at the address a window was asked around (read_function_instructions' address/before/after).
    at: bool = False


class Assembly(Shape):
    address: str
    name: str
    instructions: list[InstructionRow]
    truncated: bool
    # A paged listing: where this page is, and the retained complete record of a longer one.
    page: Page | None = None
    complete_evidence_id: str | None = None


class Instructions(Page):
    address: str
    name: str
    instructions: list[InstructionRow]


class CallerItem(Shape):
    address: str
    name: str | None
    call_sites: list[str] = []
    # ``thunk``: an import's one-jump stub, listed before the procedures calling it (``via_thunk``).
    kind: str | None = None
    via_thunk: str | None = None
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None


class Callers(Shape):
    procedure: ProcedureRef
    callers: list[CallerItem]


class ExportedBy(Shape):
    """A cross-binary edge: the open library target that exports an import, and the export's address there."""

    target_id: str
    address: str
    name: str
    alias: str | None = None


class CalleeItem(Shape):
    address: str | None
    name: str | None
    kind: Literal["direct", "tail", "import", "indirect"]
    call_sites: list[str]
    name_source: str | None = None
    original_name: str | None = None
    # The symbol as the binary spells it, where ``name`` is its demangled form (C++, Rust).
    mangled_name: str | None = None
    # With the library open beside the program (open_binary with alias): where the import leads.
    exported_by: ExportedBy | None = None


class Callees(Shape):
    procedure: ProcedureRef
    callees: list[CalleeItem]


class CallEdge(Shape):
    """One caller-to-callee edge of the whole program: ``calls`` call sites; ``callee`` is null for an import
    or computed target with no address in this binary (``callee_name`` names it)."""

    caller: str
    callee: str | None
    kind: Literal["direct", "tail", "import", "indirect"]
    calls: int
    callee_name: str | None = None


class ProgramCallGraph(Page):
    """Every call edge of the program, ordered by caller then callee, paged; ``names`` gives the name of each
    procedure this page mentions (once, not per edge)."""

    procedures: int
    edges: list[CallEdge]
    names: dict[str, str]


# The lean projection of the whole-program call graph (get_call_graph's default; ``detail: complete`` answers the
# ProgramCallGraph above): each caller once with its callees as positional rows, the kind by one letter, names once
# per page. About 30 bytes an edge where the complete form is about 80.
EDGE_KIND_CODES: dict[str, Literal["d", "i", "x", "t"]] = {"direct": "d", "import": "i", "indirect": "x", "tail": "t"}
CALL_GRAPH_LEGEND = (
    "callees: {caller: [[callee, kind, calls], ...]}; callee: an address, the name of one without an address, or "
    "null (a computed target); kind d direct, i import, x indirect, t tail; names: the page's addresses that have a "
    "name other than sub_<address>"
)


class CalleeRow(msgspec.Struct, array_like=True, frozen=True):
    """One edge from its caller as ``[callee, kind, calls]`` (``CALL_GRAPH_LEGEND``)."""

    callee: str | None
    kind: Literal["d", "i", "x", "t"]
    calls: int


class ProgramCallGraphRows(Page):
    """Every call edge of the program, lean: ``callees`` maps each caller of the page (in address order) to its
    edges' rows, ``legend`` says the layout; ``names`` holds each name the page mentions (a procedure's, or an
    import slot's a callee reaches), once, except the made ``sub_<address>``. ``offset``, ``limit`` and ``total``
    count edges."""

    legend: str
    procedures: int
    callees: dict[str, list[CalleeRow]]
    names: dict[str, str]


class ProcedureFingerprint(Shape):
    """A procedure's content hash (``rea.fingerprint``) and how many instructions it hashed."""

    address: str
    name: str | None
    kind: str
    instructions: int
    hash: str


class ProcedureFingerprints(Page):
    """Every procedure's fingerprint, in address order, paged."""

    fingerprints: list[ProcedureFingerprint]


class ReferenceItem(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    """One reference edge (``from`` is a Python keyword, so the field is ``source``)."""

    source: str
    to: str | None
    kind: ReferenceKind
    from_procedure: str | None = None
    to_name: str | None = None


class SentReferenceItem(ReferenceItem, kw_only=True, omit_defaults=False):
    """A reference with ``from_procedure`` and ``to_name`` always sent, null included (as radare2's and angr's
    answers have always sent them)."""


class XrefItem(Shape, rename={"source": "from"}):
    """One reference to an address (``xrefs``), its keys in the order the providers' answers send them."""

    source: str
    from_procedure: str | None
    kind: ReferenceKind
    to: str


class References(Page):
    procedure: ProcedureRef
    direction: Literal["incoming", "outgoing"]
    references: list[ReferenceItem]


# The lean projection of a procedure's references (procedure_references with ``detail: lean``): the rows under the
# procedure each reference is in, the kind by one letter, names once per page.
REFERENCE_KIND_CODES: dict[str, Literal["c", "j", "d", "r", "w", "i", "x", "e"]] = {
    "call": "c",
    "jump": "j",
    "data": "d",
    "read": "r",
    "write": "w",
    "indirect": "i",
    "computed": "x",
    "external": "e",
}
REFERENCES_LEGEND = (
    'references: {from_procedure: [[from, to, kind], ...]} ("": in no procedure); kind c call, j jump, d data, '
    "r read, w write, i indirect, x computed, e external; names: the page's targets that have a name other than "
    "sub_<address>"
)


class ReferenceRow(msgspec.Struct, array_like=True, frozen=True):
    """One reference as ``[from, to, kind]`` (``REFERENCES_LEGEND``)."""

    source: str
    to: str | None
    kind: Literal["c", "j", "d", "r", "w", "i", "x", "e"]


class ReferenceRows(Page):
    """A page of one procedure's references, lean: ``references`` maps the procedure each is in to its rows, in the
    page's order (``legend`` says the layout); ``offset``, ``limit`` and ``total`` count references."""

    procedure: ProcedureRef
    direction: Literal["incoming", "outgoing"]
    legend: str
    references: dict[str, list[ReferenceRow]]
    names: dict[str, str]


class ArrayStep(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    """Code that indexes, from its base, a pointer array whose slot holds the address (``xrefs``)."""

    source: str
    procedure: str | None
    via: str  # array-base
    slot: str
    base: str
    index: int


class ForeignReference(ReferenceItem, kw_only=True):
    """A reference in another open target (a program calling this export through its import)."""

    target_id: str


class Xrefs(Shape):
    address: str
    references: list[ReferenceItem]
    through_arrays: list[ArrayStep] = []
    through_arrays_truncated: bool = False
    # With several targets open (the xrefs tool): where an import here leads, and who imports an export here.
    exported_by: ExportedBy | None = None
    imported_by: list[ForeignReference] = []
    imported_by_truncated: bool = False


class PseudoCode(Shape):
    address: str
    name: str
    language: str
    text: str
    decompiler: str
    dialect: str | None = None
    # The text's line range when it is one page of a longer text (``procedure_pseudo_code`` offset/limit, in lines).
    lines: Page | None = None


class OperandDetail(Shape):
    text: str
    kind: str
    access: str | None = None
    value: int | None = None
    name: str | None = None
    address: str | None = None


class InstructionFacts(InstructionRow, kw_only=True):
    """An instruction row with its size, and the engine's semantics where it has them (angr, radare2)."""

    size: int
    flow: str | None = None
    targets: list[str] = []
    fallthrough: str | None = None
    operand_details: list[OperandDetail] = []
    reads: list[str] = []
    writes: list[str] = []
    groups: list[str] = []


class Unavailable(Shape, tag_field="status", tag="unavailable"):
    """A facet the bound provider cannot give (``status: "unavailable"``), and which providers can."""

    reason: str
    remediation: str


class InstructionInspection(Shape):
    address: str
    procedure: ContainingProcedure | None
    # provider: the engine's own instruction facts; read_function_instructions: decoded from its procedure.
    source: Literal["provider", "read_function_instructions"]
    instruction: InstructionFacts | None
    semantics: Unavailable | None = None
    reason: str | None = None


class ElementType(Shape):
    name: str
    kind: str
    size: int


class DataType(Shape, tag_field="status", tag="known"):
    """The type of a datum (``status: "known"``): a string, pointer, array, function or undefined bytes."""

    name: str
    kind: Literal["string", "pointer", "array", "function", "integer", "undefined", "struct"]
    size: int
    element: ElementType | None = None
    count: int | None = None
    # A pointer's target.
    target: str | None = None
    encoding: str | None = None


class IndexingCode(msgspec.Struct, kw_only=True, rename={"source": "from"}):
    source: str
    procedure: str


class PointerArray(Shape):
    """The array a pointer slot lies in, found from the code that indexes it from its base."""

    kind: Literal["array"]
    name: str
    size: int
    base: str
    element_size: int
    count: int
    count_truncated: bool
    index: int
    indexed_by: list[IndexingCode]
    source: Literal["pointer-array"]


class DataInspection(Shape):
    address: str
    name: str | None
    type: DataType | Unavailable
    name_source: str | None = None
    section: str | None = None
    permissions: str | None = None
    # A string's text, or a pointer's target.
    value: str | None = None
    target_name: str | None = None
    # Where the type comes from: analysis, symbol (the engine's), string-scan (the floor without one).
    source: str | None = None
    source_operation: Literal["provider"] | None = None
    array: PointerArray | None = None


S = TypeVar("S", bound=msgspec.Struct)


def decode(value: Any, shape: type[S], operation: str) -> S:
    """A provider's answer to ``operation`` as its Struct; an answer of another shape is the provider's failure."""
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise ReaError(
            "execution_failure",
            f"the provider answered {operation} in a shape rea does not know (an internal error of the provider)",
            details={"operation": operation, "reason": "result_shape", "path": str(exc).rpartition("at ")[2][:200]},
        ) from None


# The shape of each operation tool's normalized_result.
RESULT_TYPES: dict[str, type[msgspec.Struct]] = {
    "list_documents": Documents,
    "list_segments": Segments,
    "list_procedures": Procedures,
    "search_procedures": Procedures,
    "list_strings": Strings,
    "search_strings": Strings,
    "list_names": Names,
    "address_name": AddressName,
    "procedure_address": ProcedureAddress,
    "resolve_containing_procedure": ResolvedContainer,
    "procedure_info": ProcedureInfo,
    "procedure_assembly": Assembly,
    "read_function_instructions": Instructions,
    "procedure_callers": Callers,
    "procedure_callees": Callees,
    "procedure_references": References,
    "xrefs": Xrefs,
    "procedure_pseudo_code": PseudoCode,
}


# The shape of each provider operation no tool answers as is (a tool builds on it: get_call_graph, corpus triage).
OPERATION_TYPES: dict[str, type[msgspec.Struct]] = {
    "program_call_graph": ProgramCallGraph,
    "procedure_fingerprints": ProcedureFingerprints,
}


def describe(shape: type[msgspec.Struct]) -> str:
    """The shape in the docs' notation: ``{"key",...}``, a nested object or list in place, ``?`` after a key
    some results omit (docs/native-operations.md's table is this text; a test keeps them equal)."""
    return _describe(msgspec.inspect.type_info(shape))


def _describe(info: msgspec.inspect.Type) -> str:
    if isinstance(info, msgspec.inspect.UnionType):
        inner = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        return _describe(inner[0]) if len(inner) == 1 else ""
    if isinstance(info, msgspec.inspect.LiteralType):
        return "\\|".join(f'"{v}"' for v in info.values)
    if isinstance(info, msgspec.inspect.ListType):
        item = _describe(info.item_type)
        return f"[{item}]" if item else ""
    if isinstance(info, msgspec.inspect.StructType):
        keys = []
        for field in info.fields:
            nested = _describe(field.type)
            optional = "?" if not field.required else ""
            keys.append(f'"{field.encode_name}"{optional}' + (f":{nested}" if nested else ""))
        return "{" + ",".join(keys) + "}"
    return ""


class AnalysisView(Shape):
    """A view of a retained record (inspect_analysis_view, or a tool's detail=summary): which record, which view,
    and the digest of the facts it selected; the selection's own keys (summary, section and rows, item, facet)
    follow these."""

    parent_evidence_id: str
    parent_operation: str
    # The view argument as the caller gave it, defaults filled in: a user's document, JSON.
    view: JSONObject
    facts_digest: str
