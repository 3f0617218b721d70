"""The result shapes of the Apple tools, one msgspec Struct each (their output schemas come from these)."""

from __future__ import annotations

from typing import Any
from typing import Literal

# The Objective-C records are the kernel reader's own (rea.operations.objc), shared with native's names.
from rea.plugin import Category
from rea.plugin import JSONValue
from rea.plugin import ObjCClass
from rea.plugin import Paged
from rea.plugin import Protocol
from rea.plugin import Record

# -- Mach-O ----------------------------------------------------------------------------------------


class Slice(Record):
    """One architecture of a (universal) Mach-O file."""

    index: int
    cpu_type: str
    cpu_subtype: int
    offset: int
    size: int
    align: int | None = None


class Architectures(Record):
    universal: bool
    slices: list[Slice]


class LoadCommand(Record):
    index: int
    command: str
    offset: int
    size: int
    # The command's own facts, when small (a dylib's name, an rpath, a version, the UUID).
    summary: str | None = None


class Section(Record):
    segment: str
    name: str
    # Addresses and memory sizes are hex text: 64-bit values past JSON's exact integers are real (kernel images).
    address: str
    size: str
    offset: int
    type: str


class Segment(Record):
    name: str
    address: str
    vm_size: str
    file_offset: int
    file_size: int
    max_protection: str
    init_protection: str
    sections: int


class Library(Record):
    """A dylib the slice loads, with the symbols it imports from it (two-level namespace: ordinal to library)."""

    ordinal: int
    name: str
    command: str
    current_version: str
    compatibility_version: str
    imports: int
    weak: bool = False


class Imported(Record):
    name: str
    library: str | None


class Exported(Record):
    name: str
    address: str
    kind: str


class Platform(Record):
    platform: str
    min_os: str
    sdk: str


class Encryption(Record):
    crypt_id: int
    crypt_offset: int
    crypt_size: int
    encrypted: bool


class MachOSlice(Record):
    """What one slice's header and load commands say."""

    index: int
    cpu_type: str
    file_type: str
    flags: list[str]
    install_name: str | None
    uuid: str | None
    platform: Platform | None
    entry: str | None
    encryption: Encryption | None
    rpaths: list[str]
    code_signature: bool
    load_commands: list[LoadCommand]
    load_commands_page: Paged
    segments: list[Segment]
    sections: list[Section]
    sections_page: Paged
    libraries: list[Library]
    imports: list[Imported]
    imports_page: Paged
    exports: list[Exported]
    exports_page: Paged


class MachOReport(Record):
    """A Mach-O file: its slices (one for a thin file), each with its header and load commands."""

    universal: bool
    slices: list[MachOSlice]
    architectures: list[str]


# -- property lists ---------------------------------------------------------------------------------


class PlistReport(Record):
    """A property list as JSON: dates as ISO 8601 text, data as base64 (cut at ``max_data_bytes``)."""

    source: str
    format: Literal["xml", "binary"]
    # The plist's root as JSON; containers past max_depth or max_items are cut (``truncated`` says where).
    value: Any
    truncated: list[str]
    total_nodes: int


class ArchivedObject(Record):
    """One object of an NSKeyedArchiver graph: its UID, its class chain, and its fields (references as ``{"$ref"}``)."""

    uid: int
    class_name: str | None
    classes: list[str] = []
    # The archive's own values (a user's document), references as {"$ref": uid}: any JSON.
    fields: dict[str, JSONValue] = {}


class KeyedArchive(Record):
    source: str
    archiver: str
    version: int | None
    # The archive's top dictionary as it holds it (a user's document), references as {"$ref": uid}.
    top: dict[str, JSONValue]
    # The objects reachable from the top, breadth first, as far as max_depth.
    objects: list[ArchivedObject]
    objects_page: Paged
    classes: dict[str, int]
    # The top object decoded with bpylist2 (known classes), when it decodes.
    decoded: Any = None
    max_depth_reached: bool = False


# -- code signature ---------------------------------------------------------------------------------


class PageHashes(Record):
    """Code-directory page hashes checked against the bytes they cover."""

    status: Literal["valid", "mismatch", "unsigned"]
    page_size: int
    pages: int
    mismatched: list[int]
    special_slots: dict[str, Literal["valid", "mismatch", "absent"]] = {}


class Certificate(Record):
    subject: str
    issuer: str
    sha256: str
    serial: str


class CodeDirectoryInfo(Record):
    identifier: str
    team_id: str | None
    version: str
    flags: list[str]
    hardened_runtime: bool
    hash_type: str
    code_limit: int
    page_hashes: PageHashes
    cd_hash: str
    exec_segment_flags: list[str] = []


class SliceSignature(Record):
    index: int
    cpu_type: str
    status: Literal["valid", "mismatch", "unsigned"]
    code_directories: list[CodeDirectoryInfo] = []
    entitlements: Any = None
    der_entitlements: Any = None
    requirements: int | None = None
    signers: list[Certificate] = []
    blobs: list[str] = []
    ad_hoc: bool = False


class Authenticode(Record):
    status: Literal["valid", "mismatch", "unsigned", "invalid"]
    signers: list[Certificate]
    chain: list[Certificate]
    digest_algorithm: str | None
    reason: str | None = None


class SignatureReport(Record):
    """Is it signed, by whom, and intact: Mach-O code signatures per slice, or a PE's Authenticode."""

    format: Literal["mach-o", "pe"]
    status: Literal["valid", "mismatch", "unsigned", "invalid"]
    slices: list[SliceSignature] = []
    authenticode: Authenticode | None = None


# -- Objective-C ------------------------------------------------------------------------------------


class ClassSummary(Record):
    name: str
    superclass: str | None
    methods: int
    ivars: int
    properties: int
    protocols: list[str]


class ClassList(Record):
    """The Objective-C classes a slice defines (``__objc_classlist``), filtered and paged."""

    cpu_type: str
    classes: list[ClassSummary]
    page: Paged


class ProtocolList(Record):
    cpu_type: str
    protocols: list[Protocol]
    page: Paged


class DispatchMetadata(Record):
    """Objective-C dispatch metadata: a page of classes in full, their categories and protocols, selector references."""

    cpu_type: str
    classes: list[ObjCClass]
    classes_page: Paged
    categories: list[Category]
    protocols: list[Protocol]
    selector_references: list[str]
    selector_references_page: Paged
    # The whole slice's figures: classes, categories, protocols, methods.
    counts: dict[str, int]
    problems: list[str] = []


# -- bundles ----------------------------------------------------------------------------------------


class Resolution(Record):
    image: str
    library: str
    command: str
    status: Literal["bundle", "system", "missing"]
    resolved: str | None = None
    tried: list[str] = []


class DylibResolution(Record):
    """Each dylib a bundle's Mach-O images load, resolved through @rpath/@loader_path/@executable_path."""

    bundle: str
    executable: str
    images: int
    resolutions: list[Resolution]
    page: Paged
    counts: dict[str, int]


class Unavailable(Record):
    """A question this host cannot answer, with what would make it answerable."""

    status: Literal["unavailable"] = "unavailable"
    reason: str
    remediation: str


# -- Interface Builder ------------------------------------------------------------------------------


class IBObject(Record):
    """An object of a XIB or storyboard: its element, the class it instantiates (customClass when set)."""

    id: str
    element: str
    class_name: str
    custom: bool = False
    module: str | None = None
    label: str | None = None
    placeholder: str | None = None


class IBConnection(Record):
    """An outlet (source.property = destination), action (source sends selector to destination) or segue."""

    kind: Literal["outlet", "action", "segue"]
    id: str
    source: str
    source_class: str | None
    destination: str
    destination_class: str | None
    property: str | None = None
    selector: str | None = None
    event: str | None = None


class InterfaceDocument(Record):
    source: str
    kind: Literal["xib", "storyboard"]
    runtime: Literal["ios", "macos"]
    objects: list[IBObject]
    objects_page: Paged
    connections: list[IBConnection]
    connections_page: Paged
    counts: dict[str, int]


class UIAction(Record):
    """A control's action and the procedure that implements it (``-[Class selector]`` at ``address``)."""

    control: str
    control_class: str | None
    control_label: str | None = None
    event: str | None = None
    selector: str
    target: str
    target_class: str | None
    status: Literal["resolved", "not-implemented", "first-responder", "unresolved"]
    procedure: str | None = None
    address: str | None = None
    # The classes searched for the selector, the target's first, then its superclasses.
    searched: list[str] = []


class UIActionTrace(Record):
    document: str
    binary: str
    cpu_type: str
    actions: list[UIAction]
    page: Paged
    counts: dict[str, int]


# -- Swift ------------------------------------------------------------------------------------------


class SwiftSymbol(Record):
    symbol: str
    status: Literal["demangled", "unrecognized", "not-swift"]
    demangled: str | None = None


class SwiftSymbols(Record):
    """The symbols from ``offset`` on, as many as fit one lean answer; ``next_offset`` is where the rest start."""

    demangler: str
    symbols: list[SwiftSymbol]
    offset: int = 0
    total: int
    next_offset: int | None = None


class SwiftField(Record):
    """A stored property (or an enum case, which has no type when it has no payload)."""

    name: str
    type: str | None
    type_mangled: str | None
    var: bool = False
    indirect: bool = False


class SwiftType(Record):
    name: str
    kind: str
    mangled: str | None
    superclass: str | None = None
    fields: list[SwiftField] = []


class SwiftTypes(Record):
    """The Swift types a slice records in ``__swift5_types``, with their fields (``__swift5_fieldmd``)."""

    cpu_type: str
    types: list[SwiftType]
    page: Paged
    counts: dict[str, int]
    # None: no demangler on this host, names are shown mangled.
    demangler: str | None
    problems: list[str] = []


class AssetRendition(Record):
    name: str
    asset_type: str
    scale: int | None = None
    idiom: str | None = None
    size_bytes: int | None = None


class AssetCatalog(Record):
    """An Assets.car as assetutil lists it (macOS only)."""

    source: str
    storage_version: str | None
    platform: str | None
    renditions: list[AssetRendition]
    page: Paged


# -- application graph ------------------------------------------------------------------------------


class AppNode(Record):
    """A bundle (or loose dylib) of the application: identity, executable slices, signature, entitlement keys."""

    id: str
    kind: Literal["application", "framework", "extension", "xpc-service", "bundle", "library"]
    path: str
    bundle_id: str | None = None
    version: str | None = None
    executable: str | None = None
    architectures: list[str] = []
    platform: str | None = None
    signature: str | None = None
    team_id: str | None = None
    entitlements: list[str] = []
    encrypted: bool | None = None


class AppEdge(Record):
    source: str
    target: str
    kind: Literal["embeds", "loads"]
    # For loads: the install name as the loading image spells it.
    detail: str = ""


class AppGraph(Record):
    """An .app, .framework or .ipa as an application graph; ``counts`` are the whole application's."""

    schema_version: int
    input_kind: Literal["app", "framework", "ipa"]
    root: str
    identity: dict[str, str]
    nodes: list[AppNode]
    nodes_page: Paged
    edges: list[AppEdge]
    edges_page: Paged
    # System libraries (outside the application) by install name, with how many images load each.
    system_libraries: dict[str, int]
    # Files by extension (the 40 most common), executables and dylibs aside.
    resources: dict[str, int]
    counts: dict[str, int]
