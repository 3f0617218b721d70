"""The Apple tool family, declared as ToolDef values; handlers import LIEF, bpylist2 and signify lazily."""

from __future__ import annotations

from rea.plugin import Evidence, JSONObject, ToolCall, ToolDef, ToolEffects
from rea_plugins.apple.model import (
    AppGraph,
    Architectures,
    AssetCatalog,
    ClassList,
    DispatchMetadata,
    DylibResolution,
    InterfaceDocument,
    KeyedArchive,
    MachOReport,
    PlistReport,
    ProtocolList,
    SignatureReport,
    SwiftSymbols,
    SwiftTypes,
    UIActionTrace,
)

FAMILY = "apple"
_EFFECTS = ToolEffects(records_evidence=True)

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
PATH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "Mach-O file or .app/.framework folder; default: the open binary.",
    "examples": ["Demo.app"],
}
ARCH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 32,
    "description": "Slice to read, e.g. arm64 or x86_64.",
}
OFFSET: JSONObject = {"type": "integer", "minimum": 0, "default": 0, "description": "Rows to skip."}
PATTERN: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "Class or protocol name filter.",
}
MODE: JSONObject = {"type": "string", "enum": ["literal", "regex"], "default": "literal", "description": "Match kind."}


def _limit(default: int, most: int = 5000) -> JSONObject:
    return {"type": "integer", "minimum": 1, "maximum": most, "default": default, "description": "Page size."}


def _obj(properties: JSONObject, *required: str) -> JSONObject:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def _macho(call: ToolCall) -> Evidence:
    from rea_plugins.apple import macho

    return macho.inspect_macho(call)


def _archs(call: ToolCall) -> Evidence:
    from rea_plugins.apple import macho

    return macho.list_architectures(call)


def _plist(call: ToolCall) -> Evidence:
    from rea_plugins.apple import plists

    return plists.inspect_plist(call)


def _keyed(call: ToolCall) -> Evidence:
    from rea_plugins.apple import plists

    return plists.inspect_keyed_archive(call)


def _signature(call: ToolCall) -> Evidence:
    from rea_plugins.apple import signature

    return signature.inspect_signature(call)


def _classes(call: ToolCall) -> Evidence:
    from rea_plugins.apple import objc_tools

    return objc_tools.get_objc_classes(call)


def _protocols(call: ToolCall) -> Evidence:
    from rea_plugins.apple import objc_tools

    return objc_tools.get_objc_protocols(call)


def _dispatch(call: ToolCall) -> Evidence:
    from rea_plugins.apple import objc_tools

    return objc_tools.inspect_native_dispatch_metadata(call)


def _dylibs(call: ToolCall) -> Evidence:
    from rea_plugins.apple import bundle

    return bundle.trace_dylib_resolution(call)


def _ib(call: ToolCall) -> Evidence:
    from rea_plugins.apple import ib

    return ib.decode_interface_builder(call)


def _ui_action(call: ToolCall) -> Evidence:
    from rea_plugins.apple import ib

    return ib.trace_native_ui_action(call)


def _demangle(call: ToolCall) -> Evidence:
    from rea_plugins.apple import swift

    return swift.demangle_swift(call)


def _swift_types(call: ToolCall) -> Evidence:
    from rea_plugins.apple import swift

    return swift.analyze_swift_types(call)


def _assets(call: ToolCall) -> Evidence:
    from rea_plugins.apple import assets

    return assets.inspect_asset_catalog(call)


def _graph(call: ToolCall) -> Evidence:
    from rea_plugins.apple import appgraph

    return appgraph.project_apple_application_graph(call)


BOUNDS: dict[str, JSONObject] = {
    "max_depth": {"type": "integer", "minimum": 1, "maximum": 64, "default": 8, "description": "Nesting kept."},
    "max_items": {
        "type": "integer",
        "minimum": 1,
        "maximum": 10000,
        "default": 200,
        "description": "Items kept per container.",
    },
    "max_string": {
        "type": "integer",
        "minimum": 16,
        "maximum": 1 << 20,
        "default": 1024,
        "description": "Characters or bytes kept per value.",
    },
}

INSPECT_MACHO = ToolDef(
    name="inspect_macho",
    result_type=MachOReport,
    family=FAMILY,
    description=(
        "Mach-O header and load commands per slice: segments, sections, dylibs with their imports (two-level "
        "namespace), exports, rpaths, platform and SDK, UUID, encryption (cryptid); long lists paged."
    ),
    input_schema=_obj(
        {
            "path": PATH,
            "architecture": ARCH,
            **{f"{n}_offset": OFFSET for n in ("commands", "sections", "imports", "exports")},
            **{f"{n}_limit": _limit(40) for n in ("commands", "sections", "imports", "exports")},
        }
    ),
    handler=_macho,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"},),
    cli_subject="path",
)

LIST_ARCHITECTURES = ToolDef(
    name="list_architectures",
    result_type=Architectures,
    family=FAMILY,
    description="The slices of a thin or universal Mach-O: CPU type and subtype, file offset, size and alignment.",
    input_schema=_obj({"path": PATH}),
    handler=_archs,
    effects=_EFFECTS,
    examples=({"path": "Demo.app/Demo"},),
    cli_subject="path",
)

INSPECT_PLIST = ToolDef(
    name="inspect_plist",
    result_type=PlistReport,
    family=FAMILY,
    description=(
        "A property list (XML or binary) as bounded JSON: the bundle's Info.plist by default, or relative_path "
        "inside the bundle, or any plist file."
    ),
    input_schema=_obj(
        {
            "path": {**PATH, "description": "Plist file or bundle folder; default: the open binary's bundle."},
            "relative_path": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4096,
                "description": "A plist inside the bundle.",
            },
            **BOUNDS,
        }
    ),
    handler=_plist,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"}, {"path": "Demo.app", "relative_path": "Settings.plist"}),
    cli_subject="path",
)

INSPECT_KEYED_ARCHIVE = ToolDef(
    name="inspect_keyed_archive",
    result_type=KeyedArchive,
    family=FAMILY,
    description=(
        "An NSKeyedArchiver plist's object graph: objects with their class chains and fields, breadth first from "
        "the top to max_depth, paged; a recursive archive is a typed error."
    ),
    input_schema=_obj(
        {
            "path": {**PATH, "description": "The archive (.plist, .nib contents, saved state)."},
            **BOUNDS,
            "max_depth": {**BOUNDS["max_depth"], "default": 16},
            "offset": OFFSET,
            "limit": _limit(100),
        }
    ),
    handler=_keyed,
    effects=_EFFECTS,
    examples=({"path": "state.plist"},),
    cli_subject="path",
)

INSPECT_SIGNATURE = ToolDef(
    name="inspect_signature",
    result_type=SignatureReport,
    family=FAMILY,
    description=(
        "Is it signed, by whom, intact: a Mach-O code signature per slice (identifier, team, flags, page hashes "
        "checked, entitlements, signer certificates) or a PE's Authenticode (signers, chain, digest checked)."
    ),
    input_schema=_obj(
        {
            "path": {**PATH, "description": "Mach-O, .app folder or PE file; default: the open binary."},
            "architecture": ARCH,
        }
    ),
    handler=_signature,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"},),
    cli_subject="path",
)

_OBJC_PROPS: JSONObject = {
    "path": PATH,
    "architecture": ARCH,
    "pattern": PATTERN,
    "mode": MODE,
    "case_sensitive": {"type": "boolean", "default": False, "description": "Match case exactly."},
}

GET_OBJC_CLASSES = ToolDef(
    name="get_objc_classes",
    result_type=ClassList,
    family=FAMILY,
    description=(
        "The Objective-C classes a Mach-O slice defines, with superclass, protocols and member counts; filtered "
        "by pattern, paged."
    ),
    input_schema=_obj({**_OBJC_PROPS, "offset": OFFSET, "limit": _limit(100)}),
    handler=_classes,
    effects=_EFFECTS,
    examples=({"path": "Demo.app", "pattern": "View"},),
    cli_subject="path",
)

GET_OBJC_PROTOCOLS = ToolDef(
    name="get_objc_protocols",
    result_type=ProtocolList,
    family=FAMILY,
    description="The Objective-C protocols a Mach-O slice defines, with their required and optional selectors; paged.",
    input_schema=_obj({**_OBJC_PROPS, "offset": OFFSET, "limit": _limit(100)}),
    handler=_protocols,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"},),
    cli_subject="path",
)

INSPECT_DISPATCH = ToolDef(
    name="inspect_native_dispatch_metadata",
    result_type=DispatchMetadata,
    family=FAMILY,
    description=(
        "Objective-C dispatch metadata of a Mach-O slice: classes with methods (selector, types, implementation "
        "address), ivars, properties, protocols, categories and selector references; classes paged."
    ),
    input_schema=_obj(
        {
            **_OBJC_PROPS,
            "offset": OFFSET,
            "limit": _limit(10, 500),
            "selectors_offset": OFFSET,
            "selectors_limit": _limit(200),
        }
    ),
    handler=_dispatch,
    effects=_EFFECTS,
    examples=({"path": "Demo.app", "pattern": "AppDelegate"},),
    cli_subject="path",
)

TRACE_DYLIBS = ToolDef(
    name="trace_dylib_resolution",
    result_type=DylibResolution,
    family=FAMILY,
    description=(
        "Each dylib the Mach-O images of an .app/.framework bundle load, resolved through @rpath, @loader_path and "
        "@executable_path to a file inside the bundle, system, or missing; paged."
    ),
    input_schema=_obj(
        {
            "path": {**PATH, "description": "The bundle folder or a Mach-O inside it."},
            "offset": OFFSET,
            "limit": _limit(200),
        }
    ),
    handler=_dylibs,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"},),
    cli_subject="path",
)

IB_PATH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "A .xib or .storyboard file.",
    "examples": ["Main.storyboard"],
}

DECODE_IB = ToolDef(
    name="decode_interface_builder",
    result_type=InterfaceDocument,
    family=FAMILY,
    description=(
        "A XIB or storyboard's objects (class, custom class, label) and connections: outlets, actions (sender, "
        "selector, target, event) and segues; both paged."
    ),
    input_schema=_obj(
        {
            "path": IB_PATH,
            "max_objects": {**_limit(40), "description": "Objects per page."},
            "objects_offset": OFFSET,
            "max_connections": {**_limit(40), "description": "Connections per page."},
            "connections_offset": OFFSET,
        },
        "path",
    ),
    handler=_ib,
    effects=_EFFECTS,
    examples=({"path": "Demo.app/Base.lproj/Main.storyboard"},),
    cli_subject="path",
)

TRACE_UI_ACTION = ToolDef(
    name="trace_native_ui_action",
    result_type=UIActionTrace,
    family=FAMILY,
    description=(
        "From a XIB/storyboard control's action to the procedure implementing it: the target's class and "
        "superclasses searched in the Objective-C metadata for the selector, -[Class selector] and its address."
    ),
    input_schema=_obj(
        {
            "path": IB_PATH,
            "binary_path": {**PATH, "description": "The Mach-O; default: the bundle's executable or the open binary."},
            "architecture": ARCH,
            "selector": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Only this selector."},
            "control": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Only this control (id or label).",
            },
            "offset": OFFSET,
            "limit": _limit(40),
        },
        "path",
    ),
    handler=_ui_action,
    effects=_EFFECTS,
    examples=({"path": "Demo.app/Base.lproj/Main.storyboard", "selector": "buttonTapped:"},),
    cli_subject="path",
)

DEMANGLE_SWIFT = ToolDef(
    name="demangle_swift",
    result_type=SwiftSymbols,
    family=FAMILY,
    description=(
        "Swift symbols demangled by demumble; a symbol that is not Swift mangling is returned as it is. A long batch "
        "is answered in parts: call again with next_offset."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "symbols": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 4096},
                "minItems": 1,
                "maxItems": 1000,
                "description": "Mangled names, e.g. $s4main5HelloV5greetyyF.",
            },
            "offset": {
                **OFFSET,
                "description": "Symbols already answered (the last answer's next_offset).",
            },
        },
        "required": ["symbols"],
        "additionalProperties": False,
    },
    handler=_demangle,
    effects=_EFFECTS,
    examples=({"symbols": ["$s4main5HelloV5greetyyF"]},),
)

ANALYZE_SWIFT_TYPES = ToolDef(
    name="analyze_swift_types",
    result_type=SwiftTypes,
    family=FAMILY,
    description=(
        "The Swift classes, structs and enums a Mach-O slice records (__swift5_types), with superclass and stored "
        "fields or cases and their types demangled; filtered by pattern, paged."
    ),
    input_schema=_obj(
        {"path": PATH, "architecture": ARCH, "pattern": PATTERN, "mode": MODE, "offset": OFFSET, "limit": _limit(40)}
    ),
    handler=_swift_types,
    effects=_EFFECTS,
    examples=({"path": "Demo.app"},),
    cli_subject="path",
)

INSPECT_ASSET_CATALOG = ToolDef(
    name="inspect_asset_catalog",
    result_type=AssetCatalog,
    family=FAMILY,
    description=(
        "An Assets.car's renditions (name, type, scale, idiom, size) through Apple's assetutil, which runs on macOS "
        "only: elsewhere the answer is capability_unavailable with the remediation."
    ),
    input_schema=_obj(
        {"path": {**PATH, "description": "The Assets.car file."}, "offset": OFFSET, "limit": _limit(100)}
    ),
    handler=_assets,
    # On macOS it starts assetutil (an owned process): not read-only there.
    effects=ToolEffects(records_evidence=True, launches_process=True),
    examples=({"path": "Demo.app/Assets.car"},),
    cli_subject="path",
)

PROJECT_GRAPH = ToolDef(
    name="project_apple_application_graph",
    result_type=AppGraph,
    family=FAMILY,
    description=(
        "An .app, .framework or .ipa as an application graph: bundles (frameworks, extensions), each executable's "
        "slices, signature and entitlement keys, which bundle loads which, system libraries, resources by kind."
    ),
    input_schema=_obj(
        {
            "path": {**PATH, "description": "An .app or .framework folder, or an .ipa file."},
            "nodes_offset": OFFSET,
            "nodes_limit": _limit(50),
            "edges_offset": OFFSET,
            "edges_limit": _limit(100),
        }
    ),
    handler=_graph,
    effects=_EFFECTS,
    examples=({"path": "Demo.ipa"},),
    cli_subject="path",
)

TOOLS = (
    INSPECT_MACHO,
    LIST_ARCHITECTURES,
    INSPECT_PLIST,
    INSPECT_KEYED_ARCHIVE,
    INSPECT_SIGNATURE,
    GET_OBJC_CLASSES,
    GET_OBJC_PROTOCOLS,
    INSPECT_DISPATCH,
    TRACE_DYLIBS,
    DECODE_IB,
    TRACE_UI_ACTION,
    DEMANGLE_SWIFT,
    ANALYZE_SWIFT_TYPES,
    INSPECT_ASSET_CATALOG,
    PROJECT_GRAPH,
)
