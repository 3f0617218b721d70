"""The Apple tool family, declared as ToolDef values; handlers import LIEF, bpylist2 and signify lazily."""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.apple.model import AppGraph
from rea_plugins.apple.model import Architectures
from rea_plugins.apple.model import AssetCatalog
from rea_plugins.apple.model import ClassList
from rea_plugins.apple.model import DispatchMetadata
from rea_plugins.apple.model import DylibResolution
from rea_plugins.apple.model import InterfaceDocument
from rea_plugins.apple.model import KeyedArchive
from rea_plugins.apple.model import MachOReport
from rea_plugins.apple.model import PlistReport
from rea_plugins.apple.model import ProtocolList
from rea_plugins.apple.model import SignatureReport
from rea_plugins.apple.model import SwiftSymbols
from rea_plugins.apple.model import SwiftTypes
from rea_plugins.apple.model import UIActionTrace

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


def _tool(
    module: str,
    name: str,
    result_type: type,
    description: str,
    input_schema: JSONObject,
    *,
    examples: tuple[JSONObject, ...],
    effects: ToolEffects = _EFFECTS,
    cli_subject: str = "path",
) -> ToolDef:
    """One Apple tool: its handler is ``rea_plugins.apple.<module>.<name>``, loaded on the first call."""
    return ToolDef(
        name=name,
        result_type=result_type,
        family=FAMILY,
        description=description,
        input_schema=input_schema,
        handler=lazy_handler(f"rea_plugins.apple.{module}", name),
        effects=effects,
        examples=examples,
        cli_subject=cli_subject,
    )


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

INSPECT_MACHO = _tool(
    "macho",
    "inspect_macho",
    MachOReport,
    "Mach-O header and load commands per slice: segments, sections, dylibs with their imports (two-level "
    "namespace), exports, rpaths, platform and SDK, UUID, encryption (cryptid); long lists paged.",
    _obj(
        {
            "path": PATH,
            "architecture": ARCH,
            **{f"{n}_offset": OFFSET for n in ("commands", "sections", "imports", "exports")},
            **{f"{n}_limit": _limit(40) for n in ("commands", "sections", "imports", "exports")},
        }
    ),
    examples=({"path": "Demo.app"},),
)

LIST_ARCHITECTURES = _tool(
    "macho",
    "list_architectures",
    Architectures,
    "The slices of a thin or universal Mach-O: CPU type and subtype, file offset, size and alignment.",
    _obj({"path": PATH}),
    examples=({"path": "Demo.app/Demo"},),
)

INSPECT_PLIST = _tool(
    "plists",
    "inspect_plist",
    PlistReport,
    "A property list (XML or binary) as bounded JSON: the bundle's Info.plist by default, or relative_path "
    "inside the bundle, or any plist file.",
    _obj(
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
    examples=({"path": "Demo.app"}, {"path": "Demo.app", "relative_path": "Settings.plist"}),
)

INSPECT_KEYED_ARCHIVE = _tool(
    "plists",
    "inspect_keyed_archive",
    KeyedArchive,
    "An NSKeyedArchiver plist's object graph: objects with their class chains and fields, breadth first from "
    "the top to max_depth, paged; a recursive archive is a typed error.",
    _obj(
        {
            "path": {**PATH, "description": "The archive (.plist, .nib contents, saved state)."},
            **BOUNDS,
            "max_depth": {**BOUNDS["max_depth"], "default": 16},
            "offset": OFFSET,
            "limit": _limit(100),
        }
    ),
    examples=({"path": "state.plist"},),
)

INSPECT_SIGNATURE = _tool(
    "signature",
    "inspect_signature",
    SignatureReport,
    "Is it signed, by whom, intact: a Mach-O code signature per slice (identifier, team, flags, page hashes "
    "checked, entitlements, signer certificates) or a PE's Authenticode (signers, chain, digest checked).",
    _obj(
        {
            "path": {**PATH, "description": "Mach-O, .app folder or PE file; default: the open binary."},
            "architecture": ARCH,
        }
    ),
    examples=({"path": "Demo.app"},),
)

_OBJC_PROPS: JSONObject = {
    "path": PATH,
    "architecture": ARCH,
    "pattern": PATTERN,
    "mode": MODE,
    "case_sensitive": {"type": "boolean", "default": False, "description": "Match case exactly."},
}

GET_OBJC_CLASSES = _tool(
    "objc_tools",
    "get_objc_classes",
    ClassList,
    "The Objective-C classes a Mach-O slice defines, with superclass, protocols and member counts; filtered "
    "by pattern, paged.",
    _obj({**_OBJC_PROPS, "offset": OFFSET, "limit": _limit(100)}),
    examples=({"path": "Demo.app", "pattern": "View"},),
)

GET_OBJC_PROTOCOLS = _tool(
    "objc_tools",
    "get_objc_protocols",
    ProtocolList,
    "The Objective-C protocols a Mach-O slice defines, with their required and optional selectors; paged.",
    _obj({**_OBJC_PROPS, "offset": OFFSET, "limit": _limit(100)}),
    examples=({"path": "Demo.app"},),
)

INSPECT_DISPATCH = _tool(
    "objc_tools",
    "inspect_native_dispatch_metadata",
    DispatchMetadata,
    "Objective-C dispatch metadata of a Mach-O slice: classes with methods (selector, types, implementation "
    "address), ivars, properties, protocols, categories and selector references; classes paged.",
    _obj(
        {
            **_OBJC_PROPS,
            "offset": OFFSET,
            "limit": _limit(10, 500),
            "selectors_offset": OFFSET,
            "selectors_limit": _limit(200),
        }
    ),
    examples=({"path": "Demo.app", "pattern": "AppDelegate"},),
)

TRACE_DYLIBS = _tool(
    "bundle",
    "trace_dylib_resolution",
    DylibResolution,
    "Each dylib the Mach-O images of an .app/.framework bundle load, resolved through @rpath, @loader_path and "
    "@executable_path to a file inside the bundle, system, or missing; paged.",
    _obj(
        {
            "path": {**PATH, "description": "The bundle folder or a Mach-O inside it."},
            "offset": OFFSET,
            "limit": _limit(200),
        }
    ),
    examples=({"path": "Demo.app"},),
)

IB_PATH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "A .xib or .storyboard file.",
    "examples": ["Main.storyboard"],
}

DECODE_IB = _tool(
    "ib",
    "decode_interface_builder",
    InterfaceDocument,
    "A XIB or storyboard's objects (class, custom class, label) and connections: outlets, actions (sender, "
    "selector, target, event) and segues; both paged.",
    _obj(
        {
            "path": IB_PATH,
            "max_objects": {**_limit(40), "description": "Objects per page."},
            "objects_offset": OFFSET,
            "max_connections": {**_limit(40), "description": "Connections per page."},
            "connections_offset": OFFSET,
        },
        "path",
    ),
    examples=({"path": "Demo.app/Base.lproj/Main.storyboard"},),
)

TRACE_UI_ACTION = _tool(
    "ib",
    "trace_native_ui_action",
    UIActionTrace,
    "From a XIB/storyboard control's action to the procedure implementing it: the target's class and "
    "superclasses searched in the Objective-C metadata for the selector, -[Class selector] and its address.",
    _obj(
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
    examples=({"path": "Demo.app/Base.lproj/Main.storyboard", "selector": "buttonTapped:"},),
)

DEMANGLE_SWIFT = _tool(
    "swift",
    "demangle_swift",
    SwiftSymbols,
    "Swift symbols demangled by demumble; a symbol that is not Swift mangling is returned as it is. A long batch "
    "is answered in parts: call again with next_offset.",
    {
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
    examples=({"symbols": ["$s4main5HelloV5greetyyF"]},),
    cli_subject="",
)

ANALYZE_SWIFT_TYPES = _tool(
    "swift",
    "analyze_swift_types",
    SwiftTypes,
    "The Swift classes, structs and enums a Mach-O slice records (__swift5_types), with superclass and stored "
    "fields or cases and their types demangled; filtered by pattern, paged.",
    _obj({"path": PATH, "architecture": ARCH, "pattern": PATTERN, "mode": MODE, "offset": OFFSET, "limit": _limit(40)}),
    examples=({"path": "Demo.app"},),
)

INSPECT_ASSET_CATALOG = _tool(
    "assets",
    "inspect_asset_catalog",
    AssetCatalog,
    "An Assets.car's renditions (name, type, scale, idiom, size) through Apple's assetutil, which runs on macOS "
    "only: elsewhere the answer is capability_unavailable with the remediation.",
    _obj({"path": {**PATH, "description": "The Assets.car file."}, "offset": OFFSET, "limit": _limit(100)}),
    effects=ToolEffects(records_evidence=True, launches_process=True),
    examples=({"path": "Demo.app/Assets.car"},),
)

PROJECT_GRAPH = _tool(
    "appgraph",
    "project_apple_application_graph",
    AppGraph,
    "An .app, .framework or .ipa as an application graph: bundles (frameworks, extensions), each executable's "
    "slices, signature and entitlement keys, which bundle loads which, system libraries, resources by kind.",
    _obj(
        {
            "path": {**PATH, "description": "An .app or .framework folder, or an .ipa file."},
            "nodes_offset": OFFSET,
            "nodes_limit": _limit(50),
            "edges_offset": OFFSET,
            "edges_limit": _limit(100),
        }
    ),
    examples=({"path": "Demo.ipa"},),
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


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
