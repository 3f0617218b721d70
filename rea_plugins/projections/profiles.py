"""The schema projections ``full`` (the canonical schema, lean) and ``compact`` (13,312-byte budget); the plugin that
registers them is ``rea_plugins.projections``.

A schema here is a JSON Schema document (``JSONObject``): JSON Schema's vocabulary, written by a tool's author, not
a rea record, so it stays JSON and every node is checked for its kind before it is read."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

from rea.plugin import COMPACT_INPUT_SCHEMA_BUDGET_BYTES
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Projection
from rea.plugin import ProjectionDescriptor
from rea.plugin import first_sentence
from rea.plugin import flatten_root_union
from rea.plugin import json_type

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


def serialized_size(schema: JSONObject) -> int:
    """Bytes of the schema as a client may serialize it (the roomier of compact and default JSON)."""
    return len(json.dumps(schema, ensure_ascii=False).encode())


def _map_subschemas(node: JSONObject, fn: Callable[[JSONValue], JSONValue]) -> JSONObject:
    out = dict(node)
    for key in _SCHEMA_MAPS:
        if isinstance(subs := out.get(key), dict):
            out[key] = {k: fn(v) for k, v in subs.items()}
    for key in _SCHEMA_LISTS:
        if isinstance(alternatives := out.get(key), list):
            out[key] = [fn(v) for v in alternatives]
    for key in _SCHEMA_SINGLE:
        if isinstance(out.get(key), dict):
            out[key] = fn(out[key])
    return out


def _type_of(types: list[str]) -> JSONValue:
    """The ``type`` keyword naming ``types``: one name, or the list of them."""
    return types[0] if len(types) == 1 else list[JSONValue](types)


def _object(value: JSONValue) -> JSONObject:
    """``value`` when it is an object, else the empty one (a malformed keyword reads as absent)."""
    return value if isinstance(value, dict) else {}


def _resolved_types(node: JSONValue, defs: JSONObject, depth: int = 0) -> list[str]:
    if not isinstance(node, dict) or depth > 8:
        return list(ALL_JSON_TYPES)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolved_types(defs.get(ref[len("#/$defs/") :], {}), defs, depth + 1)
    if "const" in node:
        return [json_type(node["const"])]
    if isinstance(enum := node.get("enum"), list):
        return sorted({json_type(v) for v in enum})
    t = node.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [str(x) for x in t]
    for key in ("anyOf", "oneOf"):
        if isinstance(alternatives := node.get(key), list):
            found: list[str] = []
            for alt in alternatives:
                for x in _resolved_types(alt, defs, depth + 1):
                    if x not in found:
                        found.append(x)
            return found
    if "properties" in node:
        return ["object"]
    if "items" in node:
        return ["array"]
    return list(ALL_JSON_TYPES)


def reduced_form(schema: JSONObject) -> JSONObject:
    """Property names, resolved types, first-level guidance and root required fields only."""
    defs = _object(schema.get("$defs"))
    props: JSONObject = {}
    for name, sub in _object(schema.get("properties")).items():
        entry: JSONObject = {"type": _type_of(_resolved_types(sub, defs))}
        if isinstance(sub, dict) and isinstance(enum := sub.get("enum"), list) and len(enum) <= 16:
            entry["enum"] = enum
        props[name] = entry
    out: JSONObject = {"type": "object", "properties": props}
    if isinstance(required := schema.get("required"), list) and required:
        out["required"] = list(required)
    if "additionalProperties" in schema and schema["additionalProperties"] is False:
        out["additionalProperties"] = False
    desc = schema.get("description", "")
    desc = desc if isinstance(desc, str) else ""
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


def _stand_in(target: JSONObject, defs: JSONObject, prose: bool) -> JSONObject:
    out: JSONObject = {"type": _type_of(_resolved_types(target, defs))}
    if prose and isinstance(description := target.get("description"), str):
        out["description"] = first_sentence(description, PROPERTY_PROSE_CHARS)
    values = target.get("additionalProperties")
    if isinstance(values, dict) and not target.get("properties"):
        # A map (environment variables, names by address): the type of its values.
        out["additionalProperties"] = {"type": _type_of(_resolved_types(values, defs))}
    fields = target.get("properties")
    if isinstance(fields, dict) and 0 < len(fields) <= STAND_IN_FIELDS:
        # An object too large to inline is still typed: its fields by name and JSON type (no bare "object"). A
        # record of many fields (an Evidence record, passed back as a tool returned it) stays by its type.
        out["properties"] = {name: {"type": _type_of(_resolved_types(sub, defs))} for name, sub in fields.items()}
    return out


def lean_node(node: JSONValue, defs: JSONObject, prose: bool, level: int = 0) -> JSONValue:
    """A node without examples, titles or definitions: small references inlined, large ones and objects nested
    deeper than ``ADVERTISED_NESTING`` shown by their type, prose cut to a first sentence (or dropped)."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = _object(defs.get(ref[len("#/$defs/") :]))
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        if level < 8 and len(json.dumps(lean_node(merged, defs, False, level))) <= INLINE_DEFINITION_BYTES:
            return lean_node(merged, defs, prose, level)
        return _stand_in(merged, defs, prose)
    if "properties" in node and level >= ADVERTISED_NESTING:
        # A small object (an Evidence reference) stays whole: its shape is what a caller needs to write.
        if len(json.dumps(lean_node(node, defs, False, -64))) <= INLINE_DEFINITION_BYTES:
            return lean_node(node, defs, prose, -64)
        return _stand_in(node, defs, prose)
    out: JSONObject = {}
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


def _merge_alternatives(node: JSONObject) -> JSONObject:
    """Alternatives that became alike once elided are one (``anyOf``: elided branches may overlap)."""
    for key in ("oneOf", "anyOf"):
        branches = node.get(key)
        if not isinstance(branches, list):
            continue
        unique: list[JSONValue] = []
        for branch in branches:
            if branch not in unique:
                unique.append(branch)
        rest = {k: v for k, v in node.items() if k not in ("oneOf", "anyOf")}
        if len(unique) == 1 and isinstance(unique[0], dict):
            return {**unique[0], **rest}
        return {**rest, "anyOf": unique}
    return node


def _without(node: JSONValue, keys: tuple[str, ...]) -> JSONValue:
    if not isinstance(node, dict):
        return node
    return _map_subschemas({k: v for k, v in node.items() if k not in keys}, lambda sub: _without(sub, keys))


def _without_validation(node: JSONValue, root: bool = True) -> JSONValue:
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

    def project(self, tool_name: str, schema: JSONObject) -> JSONObject:
        flat = flatten_root_union(copy.deepcopy(schema))
        # A root object stays an object through both passes; _object only says so to the type checker.
        body = _object(
            _without(
                lean_node(
                    {k: v for k, v in flat.items() if k != "description"}, _object(flat.get("$defs")), prose=True
                ),
                _SIZE_ONLY,
            )
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

    def project(self, tool_name: str, schema: JSONObject) -> JSONObject:
        flat = flatten_root_union(copy.deepcopy(schema))
        if tool_name in self.CONTRACT_REDUCED:
            self.reduced.add(tool_name)
            return reduced_form(flat)
        body = _object(_without_validation(lean_node(flat, _object(flat.get("$defs")), prose=False)))
        if "description" in flat:
            body = {"description": flat["description"], **body}
        if serialized_size(body) <= self.budget:
            self.reduced.discard(tool_name)
            return body
        self.reduced.add(tool_name)
        return reduced_form(flat)
