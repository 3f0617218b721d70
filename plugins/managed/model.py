"""The managed tools' results as records: one Struct per shape, used to build results and to decode inputs."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

SCHEMA_VERSION = 1
ARTIFACT_OPERATION = "inspect_managed_artifact"
MEMBERS_OPERATION = "inspect_managed_members"
BOUNDARIES_OPERATION = "inspect_managed_native_boundaries"
COMPARE_OPERATION = "compare_managed_members"
VERIFY_OPERATION = "verify_managed_native_boundaries"
GRAPH_OPERATION = "project_managed_application_graph"
RECONSTRUCTION_OPERATION = "import_managed_reconstruction"

T = TypeVar("T")


class _R(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Page(_R, Generic[T], frozen=True):
    """One page of a collection: ``total`` items exist, ``items`` start at ``offset``."""

    total: int
    offset: int
    items: list[T]


# -- inspect_managed_artifact -------------------------------------------------------------------------------


class Identity(_R, frozen=True):
    name: str
    version: str
    culture: str
    public_key_token: str | None
    flags: list[str]


class Runtime(_R, frozen=True):
    metadata_version: str
    cli_header_version: str
    target_framework: str | None


class CliFlags(_R, frozen=True):
    il_only: bool
    requires_32bit: bool
    prefers_32bit: bool
    strong_name_signed: bool
    native_entry_point: bool


class Reference(_R, frozen=True):
    kind: Literal["assembly", "module"]
    name: str
    version: str | None = None
    culture: str | None = None
    public_key_token: str | None = None


class Resource(_R, frozen=True):
    name: str
    visibility: Literal["public", "private"]
    location: Literal["embedded", "linked"]
    size: int | None
    sha256: str | None


class Attribute(_R, frozen=True):
    parent: str
    type: str
    # None: the value blob could not be decoded (an enum argument of an external type, a bound hit, ...).
    arguments: list[Any] | None
    named: dict[str, Any] | None


class ArtifactResult(_R, frozen=True):
    schema_version: int
    identity: Identity | None
    module: str
    mvid: str | None
    runtime: Runtime
    cli_flags: CliFlags
    entry_point: str | None
    tables: dict[str, int]
    references: Page[Reference]
    resources: Page[Resource]
    attributes: Page[Attribute]


# -- inspect_managed_members --------------------------------------------------------------------------------


class TypeRecord(_R, frozen=True):
    token: str
    name: str
    flags: list[str]
    base: str | None
    interfaces: list[str]
    enclosing: str | None
    generic_parameters: list[str]


class FieldRecord(_R, frozen=True):
    token: str
    key: str
    field_type: str
    flags: list[str]


class Instruction(_R, frozen=True):
    offset: int
    opcode: str
    operand: str | None


class MethodRecord(_R, frozen=True):
    """``key`` (type::name(parameter types)) identifies the method across builds; tokens may move."""

    token: str
    key: str
    signature: str
    flags: list[str]
    rva: int | None
    body_size: int | None
    il_sha256: str | None
    instructions_sha256: str | None
    instruction_count: int | None
    body_status: Literal["ok", "none", "malformed", "too-large", "truncated"]
    instructions: list[Instruction]


class MemberRefRecord(_R, frozen=True):
    token: str
    key: str
    signature: str


class CallEdge(_R, frozen=True):
    caller: str
    callee: str
    opcode: str
    offset: int


class MembersResult(_R, frozen=True):
    schema_version: int
    assembly: str
    types: Page[TypeRecord]
    fields: Page[FieldRecord]
    methods: Page[MethodRecord]
    member_refs: Page[MemberRefRecord]
    edges: Page[CallEdge]


# -- inspect_managed_native_boundaries ----------------------------------------------------------------------


class NativeImport(_R, frozen=True):
    method: str
    token: str
    declared_by: Literal["DllImport", "LibraryImport"]
    module: str
    entry_point: str
    calling_convention: str | None
    charset: str | None
    set_last_error: bool | None


class ModuleRefRecord(_R, frozen=True):
    name: str
    imports: int


class Crossing(_R, frozen=True):
    """A call site that reaches native code without a declaration: function pointers and their delegates."""

    method: str
    offset: int
    kind: Literal["calli", "delegate-for-function-pointer", "function-pointer-for-delegate", "native-library"]
    target: str


class MixedMode(_R, frozen=True):
    native_code: bool
    vtable_fixups: bool
    pe_imports: list[str]


class BoundariesResult(_R, frozen=True):
    schema_version: int
    assembly: str
    imports: Page[NativeImport]
    module_refs: Page[ModuleRefRecord]
    implementations: Page[Crossing]
    mixed_mode: MixedMode


# -- compare_managed_members --------------------------------------------------------------------------------


class MethodChange(_R, frozen=True):
    key: str
    il_changed: bool
    instructions_changed: bool
    left_token: str
    right_token: str


class CompareCounts(_R, frozen=True):
    added: int
    removed: int
    changed: int
    unchanged_methods: int
    tokens_only: int


class CompareResult(_R, frozen=True):
    schema_version: int
    complete: bool
    counts: CompareCounts
    added: Page[str]
    removed: Page[str]
    changed: Page[MethodChange]


# -- verify_managed_native_boundaries -----------------------------------------------------------------------


Status = Literal["resolved", "missing", "unknown"]


class ImportVerdict(_R, frozen=True):
    method: str
    module: str
    entry_point: str
    status: Status
    reason: str
    evidence_id: str | None


class VerdictCounts(_R, frozen=True):
    resolved: int
    missing: int
    unknown: int


class VerifyResult(_R, frozen=True):
    schema_version: int
    counts: VerdictCounts
    imports: Page[ImportVerdict]


# -- project_managed_application_graph ----------------------------------------------------------------------


class GraphNode(_R, frozen=True):
    node_id: str
    kind: Literal["assembly", "native-library", "resource", "unresolved-assembly", "unresolved-native"]
    path: str | None
    name: str
    sha256: str | None
    size: int | None
    main: bool = False


class GraphEdge(_R, frozen=True):
    source: str
    target: str
    kind: Literal["references", "p-invokes", "embeds"]


class GraphResult(_R, frozen=True):
    schema_version: int
    root_sha256: str
    graph_sha256: str
    main: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    coverage: Literal["complete", "partial"]
    unreadable: list[str]


# -- import_managed_reconstruction --------------------------------------------------------------------------


Link = Literal["matched", "il-mismatch", "unknown-method"]


class ReconstructedMethod(_R, frozen=True):
    token: str
    key: str | None
    il_sha256: str | None
    link: Link
    csharp_sha256: str
    csharp: str


class Decompiler(_R, frozen=True):
    name: str
    version: str


class ReconstructionResult(_R, frozen=True):
    schema_version: int
    decompiler: Decompiler
    members_evidence_id: str
    methods: list[ReconstructedMethod]
    notes: list[str]


def to_json(record: msgspec.Struct) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(record)
    return out
