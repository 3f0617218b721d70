"""Input schemas of the managed tools (REA's argument names), built from one fragment per repeated property.

Descriptions stay terse: every host sends them with each request; docs/managed.md says the rest.
"""

from __future__ import annotations

from typing import Any

from rea.catalog.schemas import evidence_input, with_evidence_defs

# Maxima are enforced by the handlers (common.MAX_PAGE, reader bounds), so the advertised schemas stay lean.
PATH = {"type": "string", "minLength": 1, "description": "Assembly file; default: the open binary."}
EXAMPLE_ID = "ev_" + "0" * 64


def bound(description: str, default: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": 1, "description": description}
    if default is not None:
        out["default"] = default
    return out


BOUNDS: dict[str, Any] = {
    "max_file_bytes": bound("File bound."),
    "max_metadata_bytes": bound("Metadata bound."),
    "max_table_rows": bound("Rows per table bound."),
    "max_heap_item_bytes": bound("Heap string/blob bound."),
}
OFFSET = {"type": "integer", "minimum": 0, "description": "Page start."}
LIMIT = {"type": "integer", "minimum": 0, "description": "Page size."}


def page(collection: str, default: int) -> dict[str, Any]:
    """An ``<collection>_offset``/``<collection>_limit`` pair."""
    return {f"{collection}_offset": OFFSET, f"{collection}_limit": {**LIMIT, "default": default}}


def obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def evidence(operation: str) -> dict[str, Any]:
    """Evidence of ``operation``, inline or retained (the CLI also takes a bare evidence_id for it)."""
    return evidence_input(f"{operation} Evidence.")


ARTIFACT = obj({"path": PATH, **BOUNDS, **page("reference", 100), **page("resource", 100), **page("attribute", 100)})

MEMBERS = obj(
    {
        "path": PATH,
        **BOUNDS,
        **page("type", 200),
        **page("field", 200),
        **page("method", 200),
        **page("member_ref", 200),
        **page("edge", 500),
        "instruction_anchor_limit": {**LIMIT, "default": 16, "description": "Instructions listed per method."},
        "max_method_body_bytes": bound("Method body bound.", 1 << 16),
        "max_method_instructions": bound("Instructions per method bound.", 20_000),
    }
)

BOUNDARIES = obj(
    {"path": PATH, **BOUNDS, **page("import", 200), **page("module_ref", 200), **page("implementation", 200)}
)

# Inside ``limits`` the names say it all: the property's description does the talking.
COUNT = {"type": "integer", "minimum": 0}
LIMITS = {**obj({"offset": COUNT, "limit": COUNT}), "description": "Paging of each list: {offset, limit}."}

COMPARE = with_evidence_defs(
    obj(
        {
            "left_evidence_id": evidence("Older inspect_managed_members"),
            "right_evidence_id": evidence("Newer inspect_managed_members"),
            "limits": LIMITS,
        },
        ["left_evidence_id", "right_evidence_id"],
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
    },
    ["application_path"],
)

RECONSTRUCTION = with_evidence_defs(
    obj(
        {
            "static_members_evidence_id": evidence("inspect_managed_members"),
            "decompiler": {
                **obj(
                    {
                        "name": {"type": "string", "minLength": 1, "maxLength": 200},
                        "version": {"type": "string", "minLength": 1, "maxLength": 200},
                    },
                    ["name", "version"],
                ),
                "description": "The decompiler: {name, version}.",
            },
            "methods": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10_000,
                "description": "Decompiled methods.",
                "items": obj(
                    {
                        "method_token": {"type": "string", "pattern": "^0x06[0-9a-fA-F]{6}$"},
                        "il_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "csharp": {"type": "string", "maxLength": 1 << 20},
                    },
                    ["method_token", "csharp"],
                ),
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
