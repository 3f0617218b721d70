"""The normalized results of the Android tools, as records: each shape is defined once, here."""

from __future__ import annotations

from typing import Any
from typing import Literal

from rea.plugin import Paged
from rea.plugin import Picture
from rea.plugin import Record
from rea.plugin import next_offset

SCHEMA_VERSION = 1
InputKind = Literal["apk", "aab", "dex"]
ComponentKind = Literal["activity", "activity-alias", "service", "receiver", "provider"]


# -- inspect_android_package -----------------------------------------------------------------------


class DeclaredPermission(Record):
    name: str
    # As the manifest encodes it (0x00000002), and decoded: the base level and each flag (signature, privileged).
    protection_level: str | None = None
    protection: list[str] = []


class IntentFilter(Record):
    actions: list[str] = []
    categories: list[str] = []
    data: list[str] = []


class Component(Record):
    kind: ComponentKind
    name: str
    # Effective exported state; exported_declared says whether the manifest states it or a default applied.
    exported: bool
    exported_declared: bool
    permission: str | None = None
    main: bool = False
    intent_filters: list[IntentFilter] = []
    target_activity: str | None = None
    authorities: str | None = None


class Certificate(Record):
    schemes: list[str]
    subject: str
    issuer: str
    serial: str
    sha256: str
    not_before: str
    not_after: str


class Signing(Record):
    schemes: dict[str, bool]
    certificates: list[Certificate]
    # What was and was not verified, in words.
    verification: list[str]


class DexFile(Record):
    name: str
    bytes: int
    sha256: str
    classes: int
    methods: int
    fields: int
    strings: int


class NativeLibrary(Record):
    abi: str
    path: str
    bytes: int


class Resources(Record):
    packages: list[str]
    # Resource type -> entries in the resource table (string, layout, drawable, ...).
    types: dict[str, int]
    files: int


class Package(Record):
    """The normalized result of ``inspect_android_package``."""

    schema_version: int
    input_kind: InputKind
    package: str | None = None
    version_code: str | None = None
    version_name: str | None = None
    min_sdk: str | None = None
    target_sdk: str | None = None
    compile_sdk: str | None = None
    max_sdk: str | None = None
    main_activity: str | None = None
    # android:debuggable of <application>: null when the manifest does not say (release builds leave it out).
    debuggable: bool | None = None
    permissions: list[str] = []
    # Requested permissions held only up to an API level (uses-permission android:maxSdkVersion).
    permission_max_sdk: dict[str, str] = {}
    declared_permissions: list[DeclaredPermission] = []
    components: list[Component] = []
    signing: Signing | None = None
    dex: list[DexFile] = []
    native_libraries: list[NativeLibrary] = []
    resources: Resources | None = None
    entries: int = 0
    pages: dict[str, Paged] = {}


# -- classes and methods ---------------------------------------------------------------------------


class ClassHit(Record):
    name: str
    dex: str
    superclass: str | None = None
    # What matched under scope methods or strings: method names or string constants (first few).
    matches: list[str] = []


class ClassSearch(Record):
    """The normalized result of ``search_android_classes``."""

    schema_version: int
    scope: str
    classes: list[ClassHit]
    page: Paged


class Field(Record):
    name: str
    type: str
    access: list[str]
    value: Any = None


class Method(Record):
    # The method's reference in smali form: Lpkg/Class;->name(args)ret, unique within the application.
    id: str
    name: str
    descriptor: str
    access: list[str]
    instructions: int = 0


class ClassInfo(Record):
    """The normalized result of ``inspect_android_class``."""

    schema_version: int
    name: str
    descriptor: str
    dex: str
    access: list[str]
    superclass: str | None = None
    interfaces: list[str] = []
    annotations: list[str] = []
    source_file: str | None = None
    fields: list[Field] = []
    methods: list[Method] = []
    pages: dict[str, Paged] = {}


class Instruction(Record):
    offset: int
    text: str


class SourceText(Record):
    # "decompiled" (a reading aid, not the bytecode); "smali" (the listing, where the decompiler failed or garbled
    # the method) or "unavailable" (no bytecode), each with the reason.
    status: Literal["decompiled", "smali", "unavailable"]
    text: str = ""
    offset: int = 0
    total_chars: int = 0
    next_offset: int | None = None
    reason: str = ""


class MethodInfo(Record):
    """The normalized result of ``inspect_android_method``."""

    schema_version: int
    method: Method
    class_name: str
    registers: int | None = None
    source: SourceText
    bytecode: list[Instruction] = []
    bytecode_page: Paged
    strings: list[str] = []
    calls: list[str] = []
    fields: list[str] = []


# -- references ------------------------------------------------------------------------------------


class Reference(Record):
    kind: Literal["call", "read", "write", "load-string"]
    source: str
    target: str
    depth: int
    offset: int | None = None
    external: bool = False


class ReferenceTrace(Record):
    """The normalized result of ``trace_android_references``."""

    schema_version: int
    # A method or field id; for an overloaded name traced without descriptor, Lpkg/C;->name (overloads lists them);
    # for strings, the string or pattern given.
    subject: str
    subject_kind: Literal["method", "field", "string"]
    # The subject's class is referenced by the application but defined outside it (the Android framework, a library).
    subject_external: bool = False
    overloads: list[str] = []
    # Strings the pattern matched that some method loads (string traces).
    strings_matched: int | None = None
    direction: Literal["incoming", "outgoing", "both"]
    max_depth: int
    references: list[Reference]
    page: Paged
    truncated: bool = False


# -- application graph -----------------------------------------------------------------------------


class GraphEntryPoint(Record):
    kind: Literal["activity", "activity-alias", "service", "receiver", "provider"]
    name: str
    node_id: str | None
    declared_by: str
    detail: str = ""


class GraphModule(Record):
    node_id: str
    kind: Literal["dex", "class", "native-library", "resources", "manifest"]
    path: str
    container: str | None = None
    bytes: int | None = None
    # Native libraries: how to analyze them (extract_artifact, then open_binary).
    handoff: str | None = None


class GraphEdge(Record):
    source: str
    target: str
    kind: Literal["contains", "calls", "loads-library", "declares"]
    detail: str = ""


class PackageCount(Record):
    package: str
    classes: int


class ApplicationGraph(Record):
    """The normalized result of ``project_android_application_graph``.

    detail summary (the default) gives the counts, the largest Java packages and the entry points; full adds
    modules and edges. Filters (package, kind, edge_kind) apply before paging; ``pages`` holds the filtered totals,
    ``counts`` the whole application's.
    """

    schema_version: int
    input_kind: InputKind
    detail: Literal["summary", "full"]
    package: str | None = None
    counts: dict[str, int]
    module_kinds: dict[str, int] = {}
    edge_kinds: dict[str, int] = {}
    # Java packages by number of classes (the filtered ones), largest first; packages_total counts them all.
    packages: list[PackageCount] = []
    packages_total: int = 0
    entry_points: list[GraphEntryPoint] = []
    modules: list[GraphModule] = []
    edges: list[GraphEdge] = []
    pages: dict[str, Paged] = {}
    # Drawn only when the call asks (format: mermaid or dot): this page's modules and edges.
    picture: Picture | None = None


# -- compare_android_packages ----------------------------------------------------------------------

ChangeCategory = Literal["manifest", "permission", "component", "class", "method", "native-library", "signing"]
ChangeKind = Literal["added", "removed", "changed"]


class Change(Record):
    category: ChangeCategory
    change: ChangeKind
    # A manifest attribute, permission, component or class name, a method id, a library path, a certificate SHA-256.
    name: str
    before: str | None = None
    after: str | None = None
    detail: str = ""


class ChangeCounts(Record):
    added: int = 0
    removed: int = 0
    changed: int = 0


class PackageComparison(Record):
    """The normalized result of ``compare_android_packages``: the summary, then the changes (filtered, paged)."""

    schema_version: int
    # package@version_name (version_code), or the file name for a bare DEX.
    left: str
    right: str
    summary: dict[str, ChangeCounts]
    changes: list[Change] = []
    page: Paged


RESULT_TYPES = (Package, ClassSearch, ClassInfo, MethodInfo, ReferenceTrace, ApplicationGraph, PackageComparison)


def page(total: int, offset: int, limit: int) -> Paged:
    """Where one paged collection stands: rows [offset, offset + returned) of total."""
    shown = max(0, min(limit, total - offset))
    return Paged(offset=offset, limit=limit, total=total, next_offset=next_offset(offset, shown, total))
