"""The managed tools' results as records: one Struct per shape, used to build results and to decode inputs."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import PageOf
from rea.plugin import Picture
from rea.plugin import Record

SCHEMA_VERSION = 1
ARTIFACT_OPERATION = "inspect_managed_artifact"
MEMBERS_OPERATION = "inspect_managed_members"
BOUNDARIES_OPERATION = "inspect_managed_native_boundaries"
COMPARE_OPERATION = "compare_managed_members"
VERIFY_OPERATION = "verify_managed_native_boundaries"
GRAPH_OPERATION = "project_managed_application_graph"
RECONSTRUCTION_OPERATION = "import_managed_reconstruction"
STRINGS_OPERATION = "search_managed_strings"
REFERENCES_OPERATION = "managed_references_to"
METHOD_OPERATION = "inspect_managed_method"


class Strict(Record, forbid_unknown_fields=True):
    """A Record that decodes only with its own fields: compare and verify read earlier results back
    (``common.load``), and a key this rea does not know is another rea's result, refused."""


class Selection(Strict):
    """What a listing or search was narrowed to: a name pattern (substring or RE2) and a namespace prefix."""

    pattern: str | None = None
    mode: Literal["literal", "regex"] = "literal"
    case_sensitive: bool = False
    namespace: str | None = None


# -- inspect_managed_artifact -------------------------------------------------------------------------------


class Identity(Strict):
    name: str
    version: str
    culture: str
    public_key_token: str | None
    flags: list[str]


class Runtime(Strict):
    metadata_version: str
    cli_header_version: str
    target_framework: str | None


class CliFlags(Strict):
    il_only: bool
    requires_32bit: bool
    prefers_32bit: bool
    strong_name_signed: bool
    native_entry_point: bool


class Reference(Strict):
    kind: Literal["assembly", "module"]
    name: str
    version: str | None = None
    culture: str | None = None
    public_key_token: str | None = None


class Resource(Strict):
    name: str
    visibility: Literal["public", "private"]
    location: Literal["embedded", "linked"]
    size: int | None
    sha256: str | None


class Attribute(Strict):
    parent: str
    type: str
    # An enum argument reads {"enum": type, "value": n, "name": member (where the enum is defined here)}.
    # None: the value blob could not be decoded (a bound hit, a damaged blob).
    arguments: list[JSONValue] | None
    # Named arguments (field and property values) as the assembly's blob decodes them: the assembly's data, not a
    # rea record.
    named: JSONObject | None


class ArtifactResult(Strict):
    schema_version: int
    identity: Identity | None
    module: str
    mvid: str | None
    runtime: Runtime
    cli_flags: CliFlags
    entry_point: str | None
    tables: dict[str, int]
    references: PageOf[Reference]
    resources: PageOf[Resource]
    attributes: PageOf[Attribute]


# -- inspect_managed_members --------------------------------------------------------------------------------


class TypeRecord(Strict):
    """A TypeDef; what it does not have (a base, interfaces, an enclosing type, generic parameters) is left out."""

    token: str
    name: str
    flags: list[str]
    base: str | None = None
    interfaces: list[str] = []
    enclosing: str | None = None
    generic_parameters: list[str] = []


class FieldRecord(Strict):
    token: str
    key: str
    field_type: str
    flags: list[str]
    # A const field's value (the Constant table); absent when the field has none, null for a null reference.
    constant: bool | int | float | str | msgspec.UnsetType | None = msgspec.UNSET


class Instruction(Strict):
    offset: int
    opcode: str
    operand: str | None


class MethodRecord(Strict):
    """``key`` (type::name(parameter types)) identifies the method across builds; tokens may move."""

    token: str
    key: str
    signature: str
    flags: list[str]
    body_status: Literal["ok", "none", "malformed", "too-large", "truncated"]
    rva: int | None = None
    body_size: int | None = None
    il_sha256: str | None = None
    instructions_sha256: str | None = None
    instruction_count: int | None = None
    # The first instruction_anchor_limit instructions (none by default: inspect_managed_method shows a body).
    instructions: list[Instruction] = []


class MemberRefRecord(Strict):
    token: str
    key: str
    signature: str


class CallEdge(Strict):
    caller: str
    callee: str
    opcode: str
    offset: int


class MembersResult(Strict):
    schema_version: int
    assembly: str
    types: PageOf[TypeRecord]
    fields: PageOf[FieldRecord]
    methods: PageOf[MethodRecord]
    member_refs: PageOf[MemberRefRecord]
    edges: PageOf[CallEdge]
    # Present when the listing was narrowed: every total counts the members that match it.
    selection: Selection | None = None


# -- search_managed_strings --------------------------------------------------------------------------------


class Site(Strict):
    """An IL instruction: the method it is in and its offset in the method's IL."""

    method: str
    offset: int


class UserString(Strict):
    """A #US heap literal: ``loads`` ldstr instructions load it, the first of them listed in ``sites``."""

    token: str
    value: str
    length: int
    loads: int
    sites: list[Site]
    truncated: bool = False


class StringsResult(Strict):
    schema_version: int
    assembly: str
    heap_strings: int
    scanned_methods: int
    undecoded_methods: int
    strings: PageOf[UserString]
    selection: Selection | None = None


# -- managed_references_to ---------------------------------------------------------------------------------

ReferenceKind = Literal[
    "call", "construct", "read", "write", "address", "function-pointer", "token", "type-use", "signature"
]


ReferenceMode = Literal["name", "literal", "regex"]


class ReferenceSite(Strict):
    """One instruction that names the member or type asked about (``target``: what it names exactly)."""

    method: str
    offset: int
    opcode: str
    kind: ReferenceKind
    target: str


class ReferencesResult(Strict):
    schema_version: int
    assembly: str
    query: str
    mode: ReferenceMode
    # What the query matched (member and type names as the IL names them), and how many there are.
    matched: PageOf[str]
    # References by kind, and how many distinct methods make them (over every page).
    counts: dict[str, int]
    methods: int
    scanned_methods: int
    undecoded_methods: int
    references: PageOf[ReferenceSite]


# -- inspect_managed_method --------------------------------------------------------------------------------


HandlerKind = Literal["catch", "filter", "finally", "fault"]


class Handler(Strict):
    kind: HandlerKind
    try_start: int
    try_end: int
    handler_start: int
    handler_end: int
    catch_type: str | None = None


class MethodView(Strict):
    """One method as text: ``language`` il (names resolved) unless a decompiler ran (then csharp)."""

    schema_version: int
    method: str
    token: str
    declaring_type: str
    signature: str
    flags: list[str]
    language: Literal["il", "csharp"]
    body_status: Literal["ok", "none", "malformed", "too-large", "truncated"]
    body_size: int | None
    il_sha256: str | None
    locals: list[str]
    handlers: list[Handler]
    instructions: int
    offset: int
    text: str
    next_offset: int | None = None
    # Other methods the name matched (overloads), by key, when it named more than one.
    overloads: list[str] = []


# -- inspect_managed_native_boundaries ----------------------------------------------------------------------


class NativeImport(Strict):
    method: str
    token: str
    declared_by: Literal["DllImport", "LibraryImport"]
    module: str
    entry_point: str
    calling_convention: str | None
    charset: str | None
    set_last_error: bool | None


class ModuleRefRecord(Strict):
    name: str
    imports: int


class Crossing(Strict):
    """A call site that reaches native code without a declaration: function pointers and their delegates."""

    method: str
    offset: int
    kind: Literal["calli", "delegate-for-function-pointer", "function-pointer-for-delegate", "native-library"]
    target: str


class MixedMode(Strict):
    native_code: bool
    vtable_fixups: bool
    pe_imports: list[str]


class BoundariesResult(Strict):
    schema_version: int
    assembly: str
    imports: PageOf[NativeImport]
    module_refs: PageOf[ModuleRefRecord]
    implementations: PageOf[Crossing]
    mixed_mode: MixedMode
    # Present when the imports and call sites listed were narrowed (module_refs count every import).
    selection: Selection | None = None


# -- compare_managed_members --------------------------------------------------------------------------------


ChangeKind = Literal["body", "signature", "flags", "field-type", "constant", "base", "interfaces"]


class MemberChange(Strict):
    """A member matched by signature in both versions whose meaning changed (token renumbering alone is not a
    change: see ``tokens_only``). ``detail`` says what: ``constant: 10 -> 20``, or the IL lines that differ
    (``-IL_0002: mul`` / ``+IL_0002: add``)."""

    member: str
    changes: list[ChangeKind]
    left_token: str
    right_token: str
    detail: list[str] = []


class CompareCounts(Strict):
    added: int
    removed: int
    changed: int
    unchanged_methods: int
    tokens_only: int


class Version(Strict):
    """One side of a comparison: the assembly's name and version, and the file's digest."""

    assembly: str
    version: str | None
    sha256: str | None
    file: str | None = None


class CompareResult(Strict):
    schema_version: int
    complete: bool
    counts: CompareCounts
    added: PageOf[str]
    removed: PageOf[str]
    changed: PageOf[MemberChange]
    # Methods whose IL bytes differ only in the metadata tokens they hold (the same members, renumbered).
    tokens_only: PageOf[str]
    left: Version | None = None
    right: Version | None = None


# -- verify_managed_native_boundaries -----------------------------------------------------------------------


Status = Literal["resolved", "missing", "unknown"]


class ImportVerdict(Strict):
    method: str
    module: str
    entry_point: str
    status: Status
    reason: str
    evidence_id: str | None


class VerdictCounts(Strict):
    resolved: int
    missing: int
    unknown: int


class VerifyResult(Strict):
    schema_version: int
    counts: VerdictCounts
    imports: PageOf[ImportVerdict]


# -- project_managed_application_graph ----------------------------------------------------------------------


class GraphNode(Strict):
    node_id: str
    kind: Literal["assembly", "native-library", "resource", "unresolved-assembly", "unresolved-native"]
    path: str | None
    name: str
    sha256: str | None
    size: int | None
    main: bool = False


EdgeKind = Literal["references", "p-invokes", "embeds"]


class GraphEdge(Strict):
    source: str
    target: str
    kind: EdgeKind


class GraphResult(Strict):
    schema_version: int
    root_sha256: str
    graph_sha256: str
    main: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    coverage: Literal["complete", "partial"]
    unreadable: list[str]
    # Drawn only when the call asks (format: mermaid or dot).
    picture: Picture | None = None


# -- import_managed_reconstruction --------------------------------------------------------------------------


Link = Literal["matched", "il-mismatch", "unknown-method"]


class ReconstructedMethod(Strict):
    token: str
    key: str | None
    il_sha256: str | None
    link: Link
    csharp_sha256: str
    csharp: str


class Decompiler(Strict):
    name: str
    version: str


class ReconstructionResult(Strict):
    schema_version: int
    decompiler: Decompiler
    members_evidence_id: str
    methods: list[ReconstructedMethod]
    notes: list[str]
