"""The Android tool family, declared as ToolDef values; handlers import androguard lazily."""

from __future__ import annotations

from typing import Literal

from rea.plugin import FORMAT_PROPERTY
from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.android.model import ApplicationGraph
from rea_plugins.android.model import ClassInfo
from rea_plugins.android.model import ClassSearch
from rea_plugins.android.model import MethodInfo
from rea_plugins.android.model import Package
from rea_plugins.android.model import PackageComparison
from rea_plugins.android.model import ReferenceTrace

FAMILY = "android"
_EFFECTS = ToolEffects(records_evidence=True)

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
PATH: JSONObject = {"type": "string", "minLength": 1, "description": "APK, AAB or DEX file.", "examples": ["app.apk"]}
CLASS: JSONObject = {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Class: com.a.B or Lcom/a/B;."}
OFFSET: JSONObject = {"type": "integer", "minimum": 0, "default": 0, "description": "Rows to skip."}


def _limit(default: int, most: int = 1000) -> JSONObject:
    return {"type": "integer", "minimum": 1, "maximum": most, "default": default, "description": "Page size."}


def _obj(properties: JSONObject, *required: str) -> JSONObject:
    return {"type": "object", "properties": properties, "required": ["path", *required], "additionalProperties": False}


def _tool(
    function: str,
    name: str,
    result_type: type,
    description: str,
    input_schema: JSONObject,
    *,
    # Arguments as a call sends them: JSON the input schema shapes.
    examples: tuple[JSONObject, ...],
    cli_subject: str = "",
    task_support: Literal["forbidden", "optional", "required"] = "forbidden",
) -> ToolDef:
    """One Android tool, answered by ``handlers.<function>``."""
    return ToolDef(
        name=name,
        result_type=result_type,
        family=FAMILY,
        description=description,
        input_schema=input_schema,
        handler=lazy_handler("rea_plugins.android.handlers", function),
        effects=_EFFECTS,
        examples=examples,
        cli_subject=cli_subject,
        task_support=task_support,
    )


EXAMPLE_CLASS = "com.example.app.MainActivity"

INSPECT_PACKAGE = _tool(
    "inspect_package",
    "inspect_android_package",
    Package,
    "Android APK/AAB/DEX facts: package, versions, SDKs, permissions, components (exported, intent "
    "filters), signing certificates, DEX counts, native libraries by ABI, resources. Lists are paged "
    "with offset/limit.",
    _obj({"path": PATH, "offset": OFFSET, "limit": _limit(50)}),
    examples=({"path": "app.apk"},),
    cli_subject="path",
)

SEARCH_CLASSES = _tool(
    "search_classes",
    "search_android_classes",
    ClassSearch,
    "Find classes defined in an APK/DEX by class name, method name or string constant (scope), as a "
    "literal or RE2 pattern; paged.",
    _obj(
        {
            "path": PATH,
            "pattern": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Text or RE2 pattern."},
            "mode": {
                "type": "string",
                "enum": ["literal", "regex"],
                "default": "literal",
                "description": "Match kind.",
            },
            "case_sensitive": {"type": "boolean", "default": False, "description": "Match case exactly."},
            "scope": {
                "type": "string",
                "enum": ["names", "methods", "strings"],
                "default": "names",
                "description": "Match class names, method names or loaded strings.",
            },
            "offset": OFFSET,
            "limit": _limit(100),
        },
        "pattern",
    ),
    examples=({"path": "app.apk", "pattern": "Activity"},),
)

INSPECT_CLASS = _tool(
    "inspect_class",
    "inspect_android_class",
    ClassInfo,
    "One DEX class: superclass, interfaces, annotations, source file, fields and methods with "
    "descriptors and access flags; members paged.",
    _obj({"path": PATH, "class_name": CLASS, "offset": OFFSET, "limit": _limit(200)}, "class_name"),
    examples=({"path": "app.apk", "class_name": EXAMPLE_CLASS},),
)

METHOD_PROPS: JSONObject = {
    "path": PATH,
    "class_name": CLASS,
    "descriptor": {
        "type": "string",
        "minLength": 2,
        "maxLength": 4096,
        "description": "JVM descriptor such as (I)V; needed when overloaded.",
    },
}

INSPECT_METHOD = _tool(
    "inspect_method",
    "inspect_android_method",
    MethodInfo,
    "One DEX method: decompiled Java-like source and bytecode, with the strings, calls and fields it uses; both "
    "paged. The source is androguard's (a reading aid); where the decompiler fails or loses what the bytecode "
    "does, the smali listing stands in, with the reason.",
    _obj(
        {
            **METHOD_PROPS,
            "method": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Method name."},
            "offset": {**OFFSET, "description": "Bytecode instructions to skip."},
            "limit": _limit(200, 20000),
            "source_offset": {**OFFSET, "description": "Source characters to skip."},
            "max_source_chars": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_000_000,
                "default": 20000,
                "description": "Source characters returned.",
            },
        },
        "class_name",
        "method",
    ),
    examples=({"path": "app.apk", "class_name": EXAMPLE_CLASS, "method": "onCreate"},),
)

TRACE_REFERENCES = _tool(
    "trace_references",
    "trace_android_references",
    ReferenceTrace,
    "Static references to an app or framework (android.*, java.*) method or field, or to strings matched exactly, "
    "by substring or RE2: callers, callees, readers, writers, loaders; bounded depth, paged.",
    _obj(
        {
            **METHOD_PROPS,
            "class_name": {**CLASS, "description": "Class, framework ones too: android.location.LocationManager."},
            "member": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "description": "Method or field name; every overload without descriptor.",
            },
            "string": {"type": "string", "maxLength": 65536, "description": "A string constant (instead of member)."},
            "string_match": {
                "type": "string",
                "enum": ["exact", "substring", "regex"],
                "default": "exact",
                "description": "How string matches the loaded strings (regex: RE2).",
            },
            "case_sensitive": {
                "type": "boolean",
                "default": False,
                "description": "Substring and regex string matches respect case.",
            },
            "direction": {
                "type": "string",
                "enum": ["incoming", "outgoing", "both"],
                "default": "incoming",
                "description": "Referrers, referents or both.",
            },
            "max_depth": {
                "type": "integer",
                "minimum": 1,
                "maximum": 8,
                "default": 1,
                "description": "Call hops followed.",
            },
            "offset": OFFSET,
            "limit": _limit(100),
        }
    ),
    examples=(
        {"path": "app.apk", "class_name": EXAMPLE_CLASS, "member": "onCreate"},
        {"path": "app.apk", "class_name": "android.location.LocationManager", "member": "requestLocationUpdates"},
        {"path": "app.apk", "string": "https://", "string_match": "substring"},
    ),
)

PROJECT_GRAPH = _tool(
    "project_graph",
    "project_android_application_graph",
    ApplicationGraph,
    "An APK/AAB/DEX as an application graph of manifest entry points, DEX classes, native libraries and call "
    "edges. A summary with totals by default; detail full pages modules and edges, filtered by package and kind.",
    _obj(
        {
            "path": PATH,
            "detail": {
                "type": "string",
                "enum": ["summary", "full"],
                "default": "summary",
                "description": "summary: counts, packages, entry points; full: modules and edges too.",
            },
            "package": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "description": "Only classes of this Java package (prefix), e.g. com.example.",
            },
            "kind": {
                "type": "string",
                "enum": ["dex", "class", "native-library", "resources", "manifest"],
                "description": "Only modules of this kind.",
            },
            "edge_kind": {
                "type": "string",
                "enum": ["contains", "calls", "loads-library", "declares"],
                "description": "Only edges of this kind.",
            },
            "offset": OFFSET,
            "limit": _limit(100, 5000),
            "format": {
                **FORMAT_PROPERTY,
                "description": "structured (default), or also a picture of the page (detail full).",
            },
        }
    ),
    examples=(
        {"path": "app.apk"},
        {"path": "app.apk", "detail": "full", "package": "com.example", "edge_kind": "calls"},
    ),
    cli_subject="path",
)

COMPARE_PACKAGES = _tool(
    "compare_packages",
    "compare_android_packages",
    PackageComparison,
    "Compare two versions of an APK/AAB/DEX: added, removed and changed manifest attributes, permissions, "
    "components, classes, methods, native libraries and signing. Summary first, then the changes, paged.",
    {
        "type": "object",
        "properties": {
            "left_path": {**PATH, "description": "The older APK, AAB or DEX.", "examples": ["app-1.0.apk"]},
            "right_path": {**PATH, "description": "The newer APK, AAB or DEX.", "examples": ["app-1.1.apk"]},
            "category": {
                "type": "string",
                "enum": ["manifest", "permission", "component", "class", "method", "native-library", "signing"],
                "description": "Only changes of this category.",
            },
            "change": {
                "type": "string",
                "enum": ["added", "removed", "changed"],
                "description": "Only changes of this kind.",
            },
            "offset": OFFSET,
            "limit": _limit(100),
        },
        "required": ["left_path", "right_path"],
        "additionalProperties": False,
    },
    task_support="optional",
    examples=(
        {"left_path": "app-1.0.apk", "right_path": "app-1.1.apk"},
        {"left_path": "app-1.0.apk", "right_path": "app-1.1.apk", "category": "method", "change": "changed"},
    ),
)

TOOLS = (
    INSPECT_PACKAGE,
    SEARCH_CLASSES,
    INSPECT_CLASS,
    INSPECT_METHOD,
    TRACE_REFERENCES,
    PROJECT_GRAPH,
    COMPARE_PACKAGES,
)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
