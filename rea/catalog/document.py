"""The catalog document: every tool's schemas, annotations and effects, generated from the definitions.

The document and the schemas in it are JSON (``JSONObject``): JSON Schema's vocabulary, and a file ``rea catalog``
writes for any reader, not rea records.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec

from rea import __version__
from rea.canonical import canonical_digest
from rea.catalog.prose import first_sentence
from rea.catalog.schemas import advertised_or_none
from rea.catalog.schemas import output_schema
from rea.catalog.schemas import shallow_output
from rea.catalog.schemas import strings
from rea.catalog.schemas import subschema
from rea.catalog.tool import ToolDef
from rea.records import JSONObject
from rea.records import JSONValue
from rea.registry import Registry

if TYPE_CHECKING:
    from rea.catalog.manifest import ToolSpec

# The result presentation whose output schema is the tool's own (rea.presentation.COMPLETE).
COMPLETE = "complete"


# Optional arguments kept for REA compatibility that tell a caller nothing (see advertised_input_schema).
COMPATIBILITY_ONLY = ("document",)
# Advertised descriptions say what a tool is for, in their first sentence; the catalog keeps the rest.
DESCRIPTION_CHARS = {"full": 200, "compact": 160}


# The optional target argument as every request carries it (the full profile says what it names).
ADVERTISED_TARGET: dict[str, JSONObject] = {
    "full": {"type": "string", "description": "An open target's target_id or alias; default: the active one."},
    "compact": {"type": "string"},
}


def advertised_input_schema(
    registry: Registry, tool: ToolDef | ToolSpec, profile: str, multi_target: bool = False
) -> JSONObject:
    projection = registry.projections[profile]
    schema = projection.project(tool.name, tool.input_schema)
    # Unknown arguments are refused by the server's canonical validation (a typed invalid_request naming them);
    # saying so in every advertised schema costs every request about 3 KB.
    if schema.get("additionalProperties") is False:
        schema = {k: v for k, v in schema.items() if k != "additionalProperties"}
    # REA's compatibility-only arguments stay accepted (and validated) but are not advertised: ``document`` may
    # only name the open document, and 47 tools carried it.
    properties = subschema(schema.get("properties"))
    hidden = [p for p in COMPATIBILITY_ONLY if p in properties and p not in strings(schema.get("required"))]
    if hidden:
        properties = {k: v for k, v in properties.items() if k not in hidden}
        schema = {**schema, "properties": properties}
    if multi_target:
        schema = with_target(schema, tool.requires_target, profile)
    # Examples stay in the catalog document (`rea catalog`), not in what every request carries: property
    # descriptions say each argument's form, and the projections drop examples.
    return schema


def with_target(schema: JSONObject, requires_target: bool, profile: str) -> JSONObject:
    """An advertised input schema as it is while several targets are open."""
    if requires_target and "target" not in subschema(schema.get("properties")):
        # With several targets open, every target-bound tool runs on the one a call names (see invoke); a
        # single-target connection never carries the argument.
        schema = {
            **schema,
            "properties": {
                **subschema(schema.get("properties")),
                "target": ADVERTISED_TARGET.get(profile, ADVERTISED_TARGET["full"]),
            },
        }
    return schema


def advertised_description(tool: ToolDef | ToolSpec, profile: str) -> str:
    """The description a client is sent: its first sentence, what the tool is for (the catalog keeps the rest)."""
    return first_sentence(tool.description, DESCRIPTION_CHARS.get(profile, DESCRIPTION_CHARS["full"]))


def tool_entry(registry: Registry, tool: ToolDef) -> JSONObject:
    return {
        "name": tool.name,
        "title": tool.display_title,
        "description": tool.description,
        "family": tool.family,
        "toolset": tool.toolset_id,
        "input_schema": tool.input_schema,
        "advertised_input_schemas": {
            pid: advertised_input_schema(registry, tool, pid) for pid in sorted(registry.projections)
        },
        "advertised_descriptions": {pid: advertised_description(tool, pid) for pid in sorted(registry.projections)},
        "output_schema": output_schema(tool),
        # What tools/list advertises: a true, shallower form of output_schema (rea.catalog.schemas.shallow_output).
        "advertised_output_schema": advertised_or_none(shallow_output(output_schema(tool))),
        "annotations": tool.effects.annotations(),
        "effects": msgspec.to_builtins(tool.effects),
        "requires_target": tool.requires_target,
        "requires_operations": list(tool.requires_operations),
        "client_features": {
            "required": list(tool.client_features_required),
            "optional": list(tool.client_features_optional),
        },
        "examples": [dict(e) for e in tool.examples],
        "cli_command": tool.cli_name,
    }


def catalog_digest(registry: Registry) -> str:
    """A digest over every tool's contract (names, schemas, annotations, effects)."""
    cached: str | None = getattr(registry, "_catalog_digest", None)
    if cached is None:
        tools = [
            {
                "name": t.name,
                "input_schema": t.input_schema,
                "output_schema": t.advertised_output[COMPLETE],
                "annotations": t.effects.annotations(),
                "effects": msgspec.to_builtins(t.effects),
                "description": t.description,
            }
            for t in sorted(registry.tool_specs().values(), key=lambda t: t.name)
        ]
        cached = "sha256:" + canonical_digest(tools)
        registry._catalog_digest = cached  # type: ignore[attr-defined]
    return cached


def build_catalog(registry: Registry) -> JSONObject:
    """The machine-readable catalog written by ``rea catalog``."""
    tools: list[JSONValue] = [tool_entry(registry, t) for t in sorted(registry.tools.values(), key=lambda t: t.name)]
    compact = registry.projections.get("compact")
    reduced = sorted(getattr(compact, "reduced", set())) if compact is not None else []
    return {
        "catalog_version": 1,
        "package": {"name": "rea", "version": __version__},
        "python": sys.version.split()[0],
        "catalog_digest": catalog_digest(registry),
        "tool_count": len(tools),
        "tools": tools,
        "compact_reduced_tools": reduced,
        "projections": [msgspec.to_builtins(registry.projections[p].descriptor) for p in sorted(registry.projections)],
        "providers": [msgspec.to_builtins(registry.providers[p].descriptor) for p in sorted(registry.providers)],
        "unpackers": [msgspec.to_builtins(registry.unpackers[u].descriptor) for u in sorted(registry.unpackers)],
        "scenario_drivers": [msgspec.to_builtins(registry.drivers[d].descriptor) for d in sorted(registry.drivers)],
        "plugins": [msgspec.to_builtins(registry.plugins[p]) for p in sorted(registry.plugins)],
    }
