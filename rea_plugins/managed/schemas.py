"""Input schemas of the managed tools (REA's argument names), built from one fragment per repeated property.

Descriptions stay terse: every host sends them with each request; docs/managed.md says the rest.
"""

from __future__ import annotations

from rea.plugin import FORMAT_PROPERTY
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import evidence_input
from rea.plugin import with_evidence_defs

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
# Maxima are enforced by the handlers (common.MAX_PAGE, reader bounds), so the advertised schemas stay lean.
PATH: JSONObject = {"type": "string", "minLength": 1, "description": "Assembly file; default: the open binary."}
EXAMPLE_ID = "ev_" + "0" * 64


def bound(description: str, default: int | None = None) -> JSONObject:
    out: JSONObject = {"type": "integer", "minimum": 1, "description": description}
    if default is not None:
        out["default"] = default
    return out


BOUNDS: JSONObject = {
    "max_file_bytes": bound("File bound."),
    "max_metadata_bytes": bound("Metadata bound."),
    "max_table_rows": bound("Rows per table bound."),
    "max_heap_item_bytes": bound("Heap string/blob bound."),
}
OFFSET: JSONObject = {"type": "integer", "minimum": 0, "description": "Page start."}
LIMIT: JSONObject = {"type": "integer", "minimum": 0, "description": "Page size."}


def page(collection: str, default: int) -> JSONObject:
    """An ``<collection>_offset``/``<collection>_limit`` pair."""
    return {f"{collection}_offset": OFFSET, f"{collection}_limit": {**LIMIT, "default": default}}


def obj(properties: JSONObject, required: list[str] | None = None) -> JSONObject:
    out: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list[JSONValue](required)
    return out


def evidence(operation: str) -> JSONObject:
    """Evidence of ``operation``, inline or retained (the CLI also takes a bare evidence_id for it)."""
    return evidence_input(f"{operation} Evidence.")


ARTIFACT = obj({"path": PATH, **BOUNDS, **page("reference", 100), **page("resource", 100), **page("attribute", 100)})

PATTERN: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "Name filter: a substring or RE2 (mode).",
}
MODE: JSONObject = {
    "type": "string",
    "enum": ["literal", "regex"],
    "default": "literal",
    "description": "How pattern matches.",
}
CASE: JSONObject = {"type": "boolean", "default": False, "description": "Match case exactly."}
NAMESPACE: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "Namespace prefix, e.g. Demo.Lib.",
}
FILTER: JSONObject = {"pattern": PATTERN, "mode": MODE, "case_sensitive": CASE, "namespace": NAMESPACE}

MEMBERS = obj(
    {
        "path": PATH,
        **FILTER,
        **BOUNDS,
        **page("type", 50),
        **page("field", 50),
        **page("method", 50),
        **page("member_ref", 50),
        **page("edge", 50),
        "instruction_anchor_limit": {**LIMIT, "default": 0, "description": "Instructions listed per method."},
        "max_method_body_bytes": bound("Method body bound.", 1 << 16),
        "max_method_instructions": bound("Instructions per method bound.", 20_000),
    }
)

STRINGS = obj(
    {
        "path": PATH,
        "pattern": {**PATTERN, "description": "Text or RE2 pattern (mode); default: every string."},
        "mode": MODE,
        "case_sensitive": CASE,
        "namespace": {**NAMESPACE, "description": "Only loads by methods in this namespace prefix."},
        "offset": OFFSET,
        "limit": {**LIMIT, "default": 50},
        "max_sites": {**LIMIT, "default": 5, "description": "Loading sites listed per string."},
        "max_value_chars": bound("Characters shown of each string.", 300),
        **BOUNDS,
    }
)

REFERENCE_KINDS = [
    "call",
    "construct",
    "read",
    "write",
    "address",
    "function-pointer",
    "token",
    "type-use",
    "signature",
]
REFERENCES = obj(
    {
        "path": PATH,
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "Member or type: Type::Method(int), Type::Member or Type.",
        },
        "mode": {
            "type": "string",
            "enum": ["name", "literal", "regex"],
            "default": "name",
            "description": "How name matches: as written (name), or as a literal or regex pattern.",
        },
        "case_sensitive": CASE,
        "kinds": {
            "type": "array",
            "items": {"type": "string", "enum": list[JSONValue](REFERENCE_KINDS)},
            "description": "Only these reference kinds.",
        },
        "namespace": {**NAMESPACE, "description": "Only references from this namespace prefix."},
        "offset": OFFSET,
        "limit": {**LIMIT, "default": 50},
        **BOUNDS,
    },
    ["name"],
)

METHOD = obj(
    {
        "path": PATH,
        "method": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "Type::Name(params), Type::Name, a name, or a 0x06 token.",
        },
        "offset": {**OFFSET, "description": "First instruction shown."},
        "limit": {**LIMIT, "default": 400, "description": "Instructions shown."},
        "max_method_body_bytes": bound("Method body bound.", 1 << 20),
        **BOUNDS,
    },
    ["method"],
)

BOUNDARIES = obj(
    {
        "path": PATH,
        **FILTER,
        **BOUNDS,
        **page("import", 100),
        **page("module_ref", 100),
        **page("implementation", 100),
    }
)

# Inside ``limits`` the names say it all: the property's description does the talking.
COUNT: JSONObject = {"type": "integer", "minimum": 0}
LIMITS: JSONObject = {**obj({"offset": COUNT, "limit": COUNT}), "description": "Paging of each list: {offset, limit}."}

COMPARE = with_evidence_defs(
    obj(
        {
            "left_path": {"type": "string", "minLength": 1, "description": "Older assembly file."},
            "right_path": {"type": "string", "minLength": 1, "description": "Newer assembly file."},
            "left_evidence_id": evidence("Or: older inspect_managed_members"),
            "right_evidence_id": evidence("Or: newer inspect_managed_members"),
            "limits": LIMITS,
            "max_diff_lines": {**LIMIT, "default": 12, "description": "IL lines shown per changed method."},
            "max_method_body_bytes": bound("Method body bound.", 1 << 20),
            **BOUNDS,
        },
    )
)

VERIFY = with_evidence_defs(
    obj(
        {
            "managed_boundaries_evidence_id": evidence("inspect_managed_native_boundaries"),
            "native_observation_evidence_ids": {
                "type": "array",
                "minItems": 1,
                "maxItems": 64,
                "items": evidence("A library's list_names or observe_native_calls"),
                "description": "Native Evidence of the libraries.",
            },
            "limits": LIMITS,
        },
        ["managed_boundaries_evidence_id", "native_observation_evidence_ids"],
    )
)

GRAPH = obj(
    {
        "application_path": {"type": "string", "minLength": 1, "description": "Application folder."},
        "main_assembly": {"type": "string", "minLength": 1, "description": "Main assembly; default: the one .exe."},
        "max_files": bound("Files read bound.", 2000),
        **BOUNDS,
        "format": FORMAT_PROPERTY,
    },
    ["application_path"],
)

RECONSTRUCTION = with_evidence_defs(
    obj(
        {
            "static_members_evidence_id": evidence("inspect_managed_members"),
            "decompiler": {
                **obj({"name": {"type": "string"}, "version": {"type": "string"}}, ["name", "version"]),
                "description": "The decompiler: {name, version}.",
            },
            "methods": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10_000,
                "description": "Decompiled methods.",
                # Small enough to be advertised whole (a host's tools list types it): the handler checks that
                # method_token and csharp are given, and the forms and sizes of every value.
                "items": {
                    "type": "object",
                    "properties": {
                        "method_token": {"type": "string"},
                        "il_sha256": {"type": "string"},
                        "csharp": {"type": "string"},
                    },
                },
            },
            "notes": {
                "type": "array",
                "maxItems": 100,
                "items": {"type": "string", "maxLength": 4096},
                "description": "Caller's notes.",
            },
        },
        ["static_members_evidence_id", "decompiler", "methods"],
    )
)
