"""Result shapes of the binary family's own tools (the operation tools' are in ``rea.operations.shapes``)."""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import TypedDict

import msgspec

from rea.plugin import Assembly
from rea.plugin import CalleeItem
from rea.plugin import CallerItem
from rea.plugin import ContainingProcedure
from rea.plugin import DocumentItem
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Page
from rea.plugin import Paged
from rea.plugin import Picture
from rea.plugin import ProcedureInfo
from rea.plugin import ProcedureItem
from rea.plugin import ProcedureRef
from rea.plugin import PseudoCode
from rea.plugin import Record
from rea.plugin import ReferenceItem
from rea.plugin import SegmentItem
from rea.plugin import Shape
from rea.plugin import StringItem
from rea.plugin import TargetView
from rea.plugin import Unavailable
from rea.plugin import runtime_observations
from rea.plugin import typelib


class PageFields(TypedDict):
    """The paging fields of a page, to build a paged shape from (``**paging_of(page)``)."""

    offset: int
    limit: int
    total: int
    next_offset: int | None


def paging_of(page: Paged | Page) -> PageFields:
    """Where ``page`` lies: its offset, limit, total and next offset."""
    return PageFields(offset=page.offset, limit=page.limit, total=page.total, next_offset=page.next_offset)


class CurrentDocument(Shape):
    document: DocumentItem


class CurrentAddress(Shape):
    # None: the target has no entry point and nothing moved the cursor yet.
    address: str | None


class CurrentProcedure(Shape):
    address: str | None
    procedure: ContainingProcedure | None


class NavigationContext(Shape):
    mode: Literal["current_selection", "explicit_document"]
    document: DocumentItem
    address: str | None
    procedure: ContainingProcedure | None


class CursorMove(Shape):
    """Where the cursor went (goto_address), from where, and the procedure there."""

    address: str
    previous_address: str | None
    region: str
    procedure: ContainingProcedure | None


class CursorStep(Shape):
    """One step of the cursor (next_address, prev_address): ``moved`` false when nothing lies that way."""

    address: str
    previous_address: str
    moved: bool
    unit: Literal["instruction", "procedure"] | None
    procedure: ContainingProcedure | None


# -- the notebook ------------------------------------------------------------------------------------

AnnotationField = Literal["name", "comment", "inline_comment", "bookmark"]


class CommentAt(Shape):
    address: str
    comment: str | None
    procedure: ProcedureRef | None


class InlineCommentAt(Shape):
    address: str
    inline_comment: str | None
    procedure: ProcedureRef | None


class Bookmark(Shape):
    address: str
    name: str
    # Given for the first bookmarks only (a limitation says how many).
    procedure: ProcedureRef | None


class Bookmarks(Shape):
    bookmarks: list[Bookmark]
    total: int


class AnnotationChange(Shape):
    """One annotation field written at an address: its value now and before, and the store's revision."""

    address: str
    field: AnnotationField
    value: str | None
    previous: str | None
    changed: bool
    annotation_revision: str | None


class NameChange(Shape):
    address: str
    name: str | None
    previous: str | None
    changed: bool


class NamesChange(Shape):
    names: list[NameChange]
    changed_count: int
    annotation_revision: str | None


class FieldChange(Shape):
    value: str | None
    previous: str | None


class AnnotatedProcedure(Shape):
    address: str
    name: str
    original_name: str


class FunctionAnnotation(Shape):
    procedure: AnnotatedProcedure
    fields: dict[str, FieldChange]
    annotation_revision: str | None


# -- bytes and offsets ---------------------------------------------------------------------------------


class RegionBrief(Shape):
    """The segment or section an address lies in."""

    name: str
    kind: Literal["segment", "section"]
    start: str
    end: str
    permissions: str
    file_offset: int | None
    file_size: int | None


class FileOffset(Shape):
    address: str
    file_offset: int | None
    file_offset_hex: str | None
    backed_by_file: bool
    region: RegionBrief
    section: str | None
    # Why there is no file offset (the zero-filled part of the region).
    reason: str | None = None


class BytesRead(Shape):
    address: str
    length: int
    bytes_read: int
    hex: str
    ascii: str
    file_offset: int | None
    # Bytes past the file-backed part of the region, read as zero (their load-time value).
    zero_filled: int
    truncated: bool
    region: RegionBrief
    section: str | None


# -- search inside code --------------------------------------------------------------------------------


class Placed(Shape):
    """Where a file offset lies: its address, segment, section and procedure (keys that say nothing omitted)."""

    file_offset: int
    address: str | None = None
    segment: str | None = None
    section: str | None = None
    procedure: ProcedureRef | None = None


class Capped(Page, kw_only=True):
    """A page of hits, and the bound that stopped the search when one did."""

    truncated: bool = False
    bound: str | None = None


class ByteHit(Placed, kw_only=True):
    # The matched bytes, when the pattern had wildcards.
    bytes: str | None = None


class ByteSearch(Capped, kw_only=True):
    pattern: str
    scope: Literal["segments", "file"]
    hits: list[ByteHit]


class CodeHit(Shape):
    address: str
    text: str
    procedure: ProcedureRef | None = None


class ConstantHit(Shape):
    """An instruction operand (where: code) or an aligned word in data (where: data, with its width)."""

    where: Literal["code", "data"]
    # How the instruction holds the constant: an immediate operand, a memory displacement, the last of an
    # AArch64 mov/movz + movk run or of an ARM movw + movt pair (the value the register then holds), or a
    # pc-relative load of a literal-pool word. Absent on data hits.
    form: Literal["immediate", "displacement", "movk", "movt", "literal_pool"] | None = None
    address: str | None = None
    text: str | None = None
    procedure: ProcedureRef | None = None
    file_offset: int | None = None
    segment: str | None = None
    section: str | None = None
    width: int | None = None


class Constant(Shape):
    value: str | None = None
    min: int | None = None
    max: int | None = None


class ConstantSearch(Capped, kw_only=True):
    constant: Constant
    where: Literal["code", "data", "both"]
    hits: list[ConstantHit]


class InstructionSearch(Capped, kw_only=True):
    pattern: str
    # How the pattern was matched: as asked, or as a regular expression where a literal pattern written in regex
    # syntax found nothing as text.
    mode: Literal["literal", "regex"] = "literal"
    hits: list[CodeHit]
    # What the search did beyond the request (a literal pattern run as a regex), or why it may have found nothing.
    hint: str | None = None


class YaraMatch(Placed, kw_only=True):
    rule: str
    string_id: str
    length: int
    bytes: str


class YaraScan(Capped, kw_only=True):
    scope: Literal["file", "segments", "both"]
    rules_matched: list[str]
    matches: list[YaraMatch]


# -- workflows -----------------------------------------------------------------------------------------


class OverviewCounts(Shape):
    procedures: int
    strings: int
    segments: int
    sections: int
    # Where the provider lists names.
    names: int | None = None


class BinaryOverview(Shape):
    document: DocumentItem
    format: str
    architecture: str
    entry: str | None
    segments: list[SegmentItem]
    counts: OverviewCounts
    procedures_sample: list[ProcedureItem]
    notable_strings: list[StringItem]
    notable_imports: list[str] = []
    notable_exports: list[str] = []
    # The names behind notable_imports/exports are a first page only.
    names_sampled: bool = False
    # What else the file is (a .NET assembly in a PE, ...) and the tools that read it.
    views: list[TargetView] = []


class LayoutRegion(Shape):
    name: str
    start: str
    end: str
    size: int
    permissions: str
    file_offset: int | None
    file_size: int | None


# A mitigation is seen (true or false) or not visible to the provider ("unknown"); relro says none|partial|full.
Mitigation = bool | Literal["unknown"]


class Mitigations(Shape):
    nx: Mitigation
    pie: Mitigation
    relro: Literal["none", "partial", "full", "unknown"]
    canary: Mitigation
    fortify: Mitigation
    cet_ibt: Mitigation
    cet_shstk: Mitigation
    bti: Mitigation


class Linkage(Shape):
    interpreter: str | None
    needed: list[str]
    rpath: list[str]
    runpath: list[str]


class LayoutImport(Shape):
    name: str
    library: str | None
    slot: str | None
    # function or data, where the provider tells them apart (native).
    kind: Literal["function", "data"] | None = None


class LayoutExport(Shape):
    name: str
    address: str | None


class BinaryLayout(Shape):
    format: str
    architecture: str
    entry: str | None
    bits: int
    image_base: str | None
    segments: list[LayoutRegion]
    sections: list[LayoutRegion]
    mitigations: Mitigations
    linkage: Linkage
    imports: list[LayoutImport] = []
    # Listed where the provider reads exports (native, angr).
    exports: list[LayoutExport] = []


class BlockItem(Shape):
    start: str
    end: str
    instruction_count: int
    successors: list[str]


class CfgEdge(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    source: str
    to: str
    kind: Literal["fallthrough", "jump", "conditional"]


class ReferencedName(Shape):
    address: str
    name: str


NoteKind = Literal["comment", "inline_comment", "bookmark", "signature", "notes"]


class NotebookRow(Shape):
    """An annotation inside the procedure: a comment, inline comment, bookmark, signature or notes."""

    address: str
    kind: NoteKind
    text: str


class UserName(Shape):
    address: str
    name: str
    original_name: str | None


class PseudocodeShown(Shape, tag_field="status", tag="ok"):
    address: str
    name: str
    language: str
    text: str
    decompiler: str
    truncated: bool
    dialect: str | None = None


class PseudocodeFailed(Shape, tag_field="status", tag="error"):
    # The canonical error the decompiler's call ended with (ReaError.projection_dict: the kernel's error document).
    error: JSONObject


class RowPage(Shape):
    """Where one collection's page lies (rows, or UTF-16 code units of the pseudocode)."""

    unit: str
    offset: int
    limit: int
    total: int
    next_offset: int | None
    length: int | None = None


class Dossier(Shape):
    """analyze_function: the procedure, its blocks, calls, references, strings, names, assembly and pseudocode;
    a dossier longer than one page is answered by its page (``pages``) and names its retained complete record."""

    procedure: ProcedureInfo
    basic_blocks: list[BlockItem] | Unavailable
    callers: list[CallerItem]
    callees: list[CalleeItem]
    references: list[ReferenceItem]
    referenced_strings: list[StringItem]
    referenced_names: list[ReferencedName]
    pseudocode: PseudocodeShown | Unavailable | PseudocodeFailed
    comments: list[NotebookRow]
    user_names: list[UserName]
    cfg_edges: list[CfgEdge] = []
    # Absent when include_assembly is false.
    assembly: Assembly | None = None
    pages: dict[str, RowPage] = {}
    complete_evidence_id: str | None = None


# -- comparisons ---------------------------------------------------------------------------------------


class FacetComparison(Shape):
    """One fact of two dossiers: ``absent`` when neither has it, ``unknown`` when one lacks it."""

    facet: str
    status: Literal["unchanged", "changed", "unknown", "absent"]
    # Each dossier's value of the fact, as its JSON says it.
    left: JSONValue
    right: JSONValue


class ComparedDossier(Shape):
    evidence_id: str
    provider: str
    procedure: str | None


class FunctionComparison(Shape):
    status: Literal["unchanged", "changed", "unknown"]
    facets: list[FacetComparison]
    # providers: one binary read by two engines; same_target: two profiles of one engine; versions: two binaries.
    comparison: Literal["providers", "same_target", "versions"]
    left: ComparedDossier
    right: ComparedDossier


# -- the API surface -----------------------------------------------------------------------------------


class ApiCaller(Shape):
    address: str
    name: str
    call_sites: list[str]


class ApiImport(Shape):
    name: str
    plain_name: str
    purpose: str
    library: str | None
    # binary: the file names it; sole-needed-library: an ELF import, from its one DT_NEEDED entry.
    library_source: Literal["binary", "sole-needed-library"] | None
    slot: str | None
    address: str | None
    # data: an imported variable (never called).
    kind: Literal["data"] | None = None
    # With procedure: where it calls this import.
    call_sites: list[str] | None = None
    # Without procedure: who calls it (null past max_operations lookups).
    callers: list[ApiCaller] | None = None
    # The analyst's C prototype of the import (set_function_prototype).
    prototype: str | None = None


class ApiLibrary(Shape):
    library: str | None
    import_count: int
    purposes: list[str]
    imports: list[ApiImport]


class ApiPurpose(Shape):
    purpose: str
    description: str
    imports: list[str]


class ApiSurface(Shape):
    procedure: str | None
    libraries: list[ApiLibrary]
    purposes: list[ApiPurpose]
    needed: list[str]
    import_count: int


# -- names, batches ------------------------------------------------------------------------------------


class NameReference(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    """A reference to a name; ``thunk`` marks an import's stub, and the code calling it follows (``via_thunk``)."""

    source: str
    to: str | None
    kind: str
    from_procedure: str | None = None
    to_name: str | None = None
    via_thunk: str | None = None


class NameMatch(Shape):
    address: str
    name: str
    kind: str
    external: bool
    references: list[NameReference]
    # With several targets open and none named: the target this match is in.
    target_id: str | None = None


class NameXrefs(Shape):
    name: str
    matches: list[NameMatch]


class Decompiled(Shape, tag_field="status", tag="ok"):
    procedure: str
    result: PseudoCode


class DecompileFailed(Shape, tag_field="status", tag="error"):
    procedure: str
    # The canonical error the call ended with (ReaError.projection_dict: the kernel's error document).
    error: JSONObject


class BatchDecompile(Shape):
    items: list[Decompiled | DecompileFailed]
    ok: int
    failed: int


# -- call graphs ---------------------------------------------------------------------------------------


class GraphNode(Shape):
    address: str
    name: str | None
    depth: int
    # A procedure of another open target (a library the walk followed an import into).
    target_id: str | None = None


class GraphEdge(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    source: str
    to: str
    call_sites: list[str]
    kind: str
    # The open target of an end that is not the graph's own (a cross-binary edge).
    from_target: str | None = None
    to_target: str | None = None


class StoppedBy(Shape):
    """A bound that cut a walk short: max_nodes, or depth (with the procedures left at it)."""

    bound: str
    limit: int
    procedures: int | None = None
    at: list[str] = []
    at_truncated: bool = False


class DepthStop(StoppedBy, omit_defaults=False):
    """The depth bound's stop: every field said (``at_truncated`` false too), as the walk has always answered."""


class CallGraph(Shape):
    root: ProcedureRef
    direction: Literal["forward", "backward"]
    depth: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    unresolved_call_sites: int
    truncated: bool
    stopped_by: list[StoppedBy]
    max_nodes: int
    # Drawn only when the call asks (format: mermaid or dot).
    picture: Picture | None = None


# -- trace_feature -------------------------------------------------------------------------------------


class FeatureSite(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    """Code that references a matching string (directly, or indexing a pointer array that holds it)."""

    source: str
    procedure: str | None
    via: str | None = None
    slot: str | None = None
    base: str | None = None
    index: int | None = None


class FeatureString(StringItem, kw_only=True):
    referenced_from: list[FeatureSite]


class FeatureStep(Shape):
    """Why a procedure is in the trace: the string it references (or the array holding it), or its name."""

    string: str | None = None
    name: str | None = None
    via: str | None = None
    base: str | None = None
    index: int | None = None


class FeatureProcedure(Shape):
    address: str
    via: list[FeatureStep]
    name: str | None = None


class FeatureTrace(Shape):
    query: str
    strings: list[FeatureString]
    procedures: list[FeatureProcedure]
    call_paths: list[list[ProcedureRef]]
    truncated: bool
    limits: dict[str, int]


# -- trace_call_path -----------------------------------------------------------------------------------


class PathHop(msgspec.Struct, kw_only=True, omit_defaults=True, rename={"source": "from"}):
    """One hop of a path: a call (its call sites; ``import`` when it enters another open target), or an address
    taken at a call site (its reference sites)."""

    source: str
    to: str
    edge: str
    call_sites: list[str] | None = None
    reference_sites: list[str] | None = None


class PathNode(ProcedureRef):
    """A procedure on a path; ``target_id`` names another open target (a library the path follows an import into)."""

    target_id: str | None = None


class CallPath(Shape):
    nodes: list[PathNode]
    hops: list[PathHop]
    length: int


class PathStop(Shape):
    bound: str
    limit: int
    procedures: int
    at: list[PathNode]
    at_truncated: bool


class CallPathTrace(Shape):
    start: PathNode
    goal: PathNode | None
    direction: Literal["forward", "backward"]
    # None without a goal (every path from the start).
    reached: bool | None
    paths: list[CallPath]
    procedures_reached: int
    operations: int
    unresolved_call_sites: int
    truncated: bool
    stopped_by: list[PathStop]
    limits: dict[str, int]
    # Drawn only when the call asks (format: mermaid or dot): every path's hops, merged.
    picture: Picture | None = None


# -- the load image ------------------------------------------------------------------------------------


class LoadUnit(RegionBrief, kw_only=True):
    size: int
    zero_fill: int
    # The sections a segment holds (empty where the units are sections).
    sections: list[str]


class Extent(Shape):
    start: str
    end: str


class EntryPlace(Shape):
    address: str
    region: str | None
    section: str | None
    executable: bool


class LoadImage(Shape):
    document: DocumentItem
    file_size: int
    image_base: str | None
    mapped_extent: Extent | None
    units: Literal["segments", "sections"]
    segments: list[LoadUnit]
    section_count: int
    entry: EntryPlace | None
    writable_and_executable: list[str]
    file_bytes_after_last_unit: int
    # Where the provider offers binary_layout.
    linkage: Linkage | None = None
    mitigations: Mitigations | None = None


# -- inspect_address_context ---------------------------------------------------------------------------


class Facet(Shape):
    """One fact about an address: ``ok`` with its value (null when there is none), or ``unavailable`` and why."""

    status: Literal["ok", "unavailable"]
    value: Any = None
    reason: str | None = None


class AddressContext(Shape):
    address: str
    # name, procedure, comment, inline_comment, bookmark, function.
    facets: dict[str, Facet]
    # Who answered each annotation facet: user (the analyst's name), rea (its store) or provider (the engine).
    sources: dict[str, Literal["user", "rea", "provider"]]


# -- resolve_native_call_targets -----------------------------------------------------------------------


class CallTarget(Shape):
    address: str
    name: str | None
    # direct, import, pointer-table, jump-table, or how the engine resolved it.
    provenance: str


class CallSiteTargets(Shape):
    address: str
    # direct, import, tail, indirect, computed-jump, ...
    kind: str
    status: Literal["resolved", "unresolved"]
    targets: list[CallTarget]
    instruction: str | None = None
    reason: str | None = None
    # A provider without resolve_native_call_targets: why an indirect site stays unresolved.
    resolution: Unavailable | None = None


class CallTargets(Shape):
    procedure: ProcedureRef
    call_sites: list[CallSiteTargets]
    unresolved_count: int
    # provider: the engine's resolution; procedure_callees: composed from the callees and computed references.
    source: Literal["provider", "procedure_callees"]


# -- compare_provider_results ----------------------------------------------------------------------

Agreement = Literal["agree", "disagree", "unknown"]


class EdgeCounts(Shape):
    """Call edges (caller, callee) over the compared procedures: in both providers, and only in each."""

    both: int
    only: dict[str, int]


class ProcedureDifference(Record):
    """A procedure the providers disagree on: its size by provider id (the sizes facet), or the callees only each
    names (the callees facet)."""

    address: str
    name: str | None
    sizes: dict[str, int | None] | None = None
    only: dict[str, list[str]] | None = None


class AgreementFacet(Shape):
    """One compared fact. Value facets carry ``values``; set facets ``both``/``only``/``only_count``; list
    facets (program sizes, callees) ``compared``/``differ``/``items``; an unknown facet its ``reason``."""

    facet: str
    status: Agreement
    reason: str | None = None
    # Each provider's value (null: the provider does not know it), as the provider answered it (an engine's JSON).
    values: dict[str, JSONValue] | None = None
    both: int | None = None
    # What only each provider has (at most limit each), by provider id.
    only: dict[str, list[str]] | None = None
    only_count: dict[str, int] | None = None
    # Names of the callees in ``only``, where a provider knows one.
    names: dict[str, str] | None = None
    compared: int | None = None
    differ: int | None = None
    items: list[ProcedureDifference] | None = None
    truncated: bool | None = None
    edges: EdgeCounts | None = None
    procedures_skipped: int | None = None


class ComparedProvider(Shape):
    id: str
    name: str
    version: str | None
    # bound: the session's provider; peer: a client opened for this call and closed before it returned.
    source: Literal["bound", "peer"]
    analysis_profile_digest: str


class PeerSession(Shape):
    provider_id: str
    source: Literal["bound", "peer"]
    cleanup: Literal["complete", "incomplete"] | None = None
    resources: list[str] | None = None


class ProcedureCounts(Shape):
    procedures: int
    code: int


class CodeBeside(Shape):
    """One provider's pseudo code of the compared procedure, set beside the other's (decompilers' texts differ by
    design: they are shown, not compared). ``error`` is the canonical code where the provider gave none."""

    text: str | None = None
    decompiler: str | None = None
    # The text's first max_lines lines, of total_lines.
    total_lines: int | None = None
    error: str | None = None


class ProviderAgreement(Shape):
    """Where two providers agree on the open target: one procedure's facts, or the whole program's."""

    status: Agreement
    providers: list[ComparedProvider]
    scope: Literal["procedure", "program"]
    facets: list[AgreementFacet]
    procedure: str | None = None
    # The procedure each provider resolved the selector to (null: it knows none).
    procedures: dict[str, ProcedureRef | None] | None = None
    known_by: list[str] | None = None
    counts: dict[str, ProcedureCounts] | None = None
    # With pseudo_code: each provider's C for the procedure, by provider id.
    pseudo_code: dict[str, CodeBeside] | None = None
    peer_sessions: list[PeerSession] = []


# -- compare_binaries ------------------------------------------------------------------------------


class BinarySide(Shape):
    target_id: str
    sha256: str
    # Local procedures the side has.
    procedures: int
    # Of those, the ones read and compared (fewer than ``procedures`` when a bound stopped the reading).
    compared: int
    # Instructions read on this side (counted against max_instructions).
    instructions: int


class DiffCounts(Shape):
    unchanged: int
    changed: int
    added: int
    removed: int
    # How the pairs were found.
    by_name: int
    by_hash: int
    by_neighbourhood: int
    by_similarity: int
    # Of the changed pairs, those whose instructions agree once constants are masked: only constants changed.
    constants_only: int = 0


class DiffRow(Shape):
    """A pair (unchanged or changed, with its similarity) or a procedure only one side has (added, removed)."""

    status: Literal["unchanged", "changed", "added", "removed"]
    left: ProcedureRef | None = None
    right: ProcedureRef | None = None
    matched_by: Literal["name", "hash", "neighbourhood", "similarity"] | None = None
    # A changed pair's change: its instructions, or only its constants (immediates, displacements; addresses are
    # never constants).
    change: Literal["instructions", "constants"] | None = None
    # 1.0 for identical normalized instructions; the sequence similarity of a changed pair. On an added or removed
    # row: the similarity of ``nearest``, the closest unpaired procedure of the other side, below the threshold.
    similarity: float | None = None
    nearest: ProcedureRef | None = None


class BinaryComparison(Page, kw_only=True):
    left: BinarySide
    right: BinarySide
    counts: DiffCounts
    # Changed first (least similar first), then added, removed and unchanged.
    items: list[DiffRow]
    # False when a bound stopped the reading: the rows cover each side's first ``compared`` procedures (in address
    # order) only, and one near the cut may show as added or removed because its partner lies past the other's.
    complete: bool
    # The bound that stopped the reading (absent when complete).
    bound: Literal["max_procedures", "max_instructions"] | None = None
    # The least similarity that pairs two leftovers (below it they stay added and removed).
    min_similarity: float | None = None
    # Drawn only when the call asks (format: mermaid or dot): this page's rows, each pair left -> right.
    picture: Picture | None = None


class SimilarFunction(Shape):
    """A procedure of an open target, with its similarity to the query."""

    target_id: str
    procedure: ProcedureRef
    # The Jaccard similarity of the two procedures' instruction n-grams (MinHash estimate; 1.0 when identical).
    similarity: float
    # True when the normalized instructions are the same (addresses and constants masked).
    identical: bool = False


class SimilarFunctions(Page, kw_only=True):
    query: ProcedureRef
    target_id: str
    # Open targets searched, the query's included.
    targets: int
    # Procedures compared with the query, over every searched target.
    compared: int
    # Most similar first.
    items: list[SimilarFunction]
    # False when a target's reading stopped at max_procedures or max_instructions.
    complete: bool


class TypedProcedureInfo(ProcedureInfo):
    """procedure_info with the analyst's C prototype, where one is set."""

    prototype: typelib.Prototype | None = None
    # Hits and the last arguments where a debug session of this MCP session stopped at the entry.
    runtime: runtime_observations.RuntimeObservation | None = None
