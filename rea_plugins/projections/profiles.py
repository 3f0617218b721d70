"""The schema projections ``full`` (the canonical schema, lean) and ``compact`` (13,312-byte budget); the plugin that
registers them is ``rea_plugins.projections``."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from rea.plugin import (
    COMPACT_INPUT_SCHEMA_BUDGET_BYTES,
    Projection,
    ProjectionDescriptor,
    first_sentence,
    flatten_root_union,
    json_type,
)

ALL_JSON_TYPES = ["object", "array", "string", "number", "integer", "boolean", "null"]
_ANNOTATIONS = ("description", "examples", "default", "title", "$comment")
_CONSTRAINING = ("type", "const", "enum", "$ref", "anyOf", "oneOf", "allOf", "not", "properties", "items")
# Keywords whose values are subschemas (or maps/lists of them) rather than data.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_SINGLE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def serialized_size(schema: dict[str, Any]) -> int:
    """Bytes of the schema as a client may serialize it (the roomier of compact and default JSON)."""
    return len(json.dumps(schema, ensure_ascii=False).encode())


def _map_subschemas(node: dict[str, Any], fn: Callable[[Any], Any]) -> dict[str, Any]:
    out = dict(node)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: fn(v) for k, v in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [fn(v) for v in out[key]]
    for key in _SCHEMA_SINGLE:
        if isinstance(out.get(key), dict):
            out[key] = fn(out[key])
    return out


def _resolved_types(node: Any, defs: dict[str, Any], depth: int = 0) -> list[str]:
    if not isinstance(node, dict) or depth > 8:
        return list(ALL_JSON_TYPES)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolved_types(defs.get(ref[len("#/$defs/") :], {}), defs, depth + 1)
    if "const" in node:
        return [json_type(node["const"])]
    if "enum" in node:
        return sorted({json_type(v) for v in node["enum"]})
    t = node.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [str(x) for x in t]
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            found: list[str] = []
            for alt in node[key]:
                for x in _resolved_types(alt, defs, depth + 1):
                    if x not in found:
                        found.append(x)
            return found
    if "properties" in node:
        return ["object"]
    if "items" in node:
        return ["array"]
    return list(ALL_JSON_TYPES)


def reduced_form(schema: dict[str, Any]) -> dict[str, Any]:
    """Property names, resolved types, first-level guidance and root required fields only."""
    defs = schema.get("$defs", {})
    props = {}
    for name, sub in schema.get("properties", {}).items():
        types = _resolved_types(sub, defs)
        entry: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
        if isinstance(sub, dict) and isinstance(sub.get("enum"), list) and len(sub["enum"]) <= 16:
            entry["enum"] = sub["enum"]
        props[name] = entry
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    if "additionalProperties" in schema and schema["additionalProperties"] is False:
        out["additionalProperties"] = False
    desc = schema.get("description", "")
    out["description"] = (desc + " " if desc else "") + (
        "Reduced presentation: nested validation is elided here and enforced by the server."
    )
    return out


# Advertised forms elide what the server validates anyway: nesting below this depth, long prose, examples.
ADVERTISED_NESTING = 1
PROPERTY_PROSE_CHARS = 80
# A schema-local definition this small is inlined; a larger one is advertised by its type (and summary).
INLINE_DEFINITION_BYTES = 160
# An object too large to inline lists its fields by name and type up to this many.
STAND_IN_FIELDS = 8
# Size and shape bounds the full form leaves to the server (ranges, patterns and enums stay: they guide a caller).
_SIZE_ONLY = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "format",
    "propertyNames",
    "default",
)
# Validation-only keywords: the compact form leaves them to the server.
_VALIDATION_ONLY = (
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "propertyNames",
    "additionalProperties",
    "default",
)


def _stand_in(target: dict[str, Any], defs: dict[str, Any], prose: bool) -> dict[str, Any]:
    types = _resolved_types(target, defs)
    out: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    if prose and isinstance(target.get("description"), str):
        out["description"] = first_sentence(target["description"], PROPERTY_PROSE_CHARS)
    values = target.get("additionalProperties")
    if isinstance(values, dict) and not target.get("properties"):
        # A map (environment variables, names by address): the type of its values.
        kinds = _resolved_types(values, defs)
        out["additionalProperties"] = {"type": kinds[0] if len(kinds) == 1 else kinds}
    fields = target.get("properties")
    if isinstance(fields, dict) and 0 < len(fields) <= STAND_IN_FIELDS:
        # An object too large to inline is still typed: its fields by name and JSON type (no bare "object"). A
        # record of many fields (an Evidence record, passed back as a tool returned it) stays by its type.
        out["properties"] = {
            name: {"type": kinds[0] if len(kinds) == 1 else kinds}
            for name, sub in fields.items()
            for kinds in (_resolved_types(sub, defs),)
        }
    return out


def lean_node(node: Any, defs: dict[str, Any], prose: bool, level: int = 0) -> Any:
    """A node without examples, titles or definitions: small references inlined, large ones and objects nested
    deeper than ``ADVERTISED_NESTING`` shown by their type, prose cut to a first sentence (or dropped)."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[len("#/$defs/") :], {})
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        if level < 8 and len(json.dumps(lean_node(merged, defs, False, level))) <= INLINE_DEFINITION_BYTES:
            return lean_node(merged, defs, prose, level)
        return _stand_in(merged, defs, prose)
    if "properties" in node and level >= ADVERTISED_NESTING:
        # A small object (an Evidence reference) stays whole: its shape is what a caller needs to write.
        if len(json.dumps(lean_node(node, defs, False, -64))) <= INLINE_DEFINITION_BYTES:
            return lean_node(node, defs, prose, -64)
        return _stand_in(node, defs, prose)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("examples", "title", "$comment", "$defs") or (key == "required" and not value):
            continue
        if key == "description":
            if prose and isinstance(value, str):
                out[key] = first_sentence(value, PROPERTY_PROSE_CHARS)
            continue
        out[key] = value
    deeper = level + 1 if "properties" in node else level
    return _merge_alternatives(_map_subschemas(out, lambda sub: lean_node(sub, defs, prose, deeper)))


def _merge_alternatives(node: dict[str, Any]) -> dict[str, Any]:
    """Alternatives that became alike once elided are one (``anyOf``: elided branches may overlap)."""
    for key in ("oneOf", "anyOf"):
        branches = node.get(key)
        if not isinstance(branches, list):
            continue
        unique: list[Any] = []
        for branch in branches:
            if branch not in unique:
                unique.append(branch)
        rest = {k: v for k, v in node.items() if k not in ("oneOf", "anyOf")}
        if len(unique) == 1 and isinstance(unique[0], dict):
            return {**unique[0], **rest}
        return {**rest, "anyOf": unique}
    return node


def _without(node: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(node, dict):
        return node
    return _map_subschemas({k: v for k, v in node.items() if k not in keys}, lambda sub: _without(sub, keys))


def _without_validation(node: Any, root: bool = True) -> Any:
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if k not in _VALIDATION_ONLY or (root and k == "additionalProperties")}
    if not any(k in out for k in _CONSTRAINING):
        out["type"] = list(ALL_JSON_TYPES)
    return _map_subschemas(out, lambda sub: _without_validation(sub, False))


class FullProjection(Projection):
    descriptor = ProjectionDescriptor(
        id="full",
        description=(
            "The canonical input schema, lean: one-sentence property descriptions, definitions "
            "inlined or typed, nested objects and size bounds elided (the server validates all)."
        ),
    )

    def project(self, tool_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        flat = flatten_root_union(copy.deepcopy(schema))
        body: dict[str, Any] = _without(
            lean_node({k: v for k, v in flat.items() if k != "description"}, flat.get("$defs", {}), prose=True),
            _SIZE_ONLY,
        )
        if "description" in flat:
            body = {"description": flat["description"], **body}
        return body


class CompactProjection(Projection):
    descriptor = ProjectionDescriptor(
        id="compact",
        description=f"Every input schema within {COMPACT_INPUT_SCHEMA_BUDGET_BYTES} bytes: prose and validation-only "
        "keywords dropped, references inlined or typed, unconstrained fields typed; oversized schemas "
        "reduced.",
    )

    # The contract's set of reduced presentations (docs: mcp-contracts, compact profile): these are advertised
    # in reduced form whatever their size, so a client sees the same six shapes from every server.
    CONTRACT_REDUCED = frozenset(
        {
            "compare_web_captures",
            "build_reconstruction_obligation_ledger",
            "evaluate_reconstruction_coverage",
            "project_managed_application_graph",
            "compare_application_versions",
            "capture_browser_scenario",
        }
    )

    def __init__(self, budget: int = COMPACT_INPUT_SCHEMA_BUDGET_BYTES) -> None:
        self.budget = budget
        self.reduced: set[str] = set()

    def project(self, tool_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        flat = flatten_root_union(copy.deepcopy(schema))
        if tool_name in self.CONTRACT_REDUCED:
            self.reduced.add(tool_name)
            return reduced_form(flat)
        body: dict[str, Any] = _without_validation(lean_node(flat, flat.get("$defs", {}), prose=False))
        if "description" in flat:
            body = {"description": flat["description"], **body}
        if serialized_size(body) <= self.budget:
            self.reduced.discard(tool_name)
            return body
        self.reduced.add(tool_name)
        return reduced_form(flat)
