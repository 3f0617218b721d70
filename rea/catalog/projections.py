"""Built-in schema projections: ``full`` (the canonical schema) and ``compact`` (13,312-byte budget)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from rea import hookimpl
from rea.catalog.projection import Projection, ProjectionDescriptor
from rea.catalog.schemas import flatten_root_union
from rea.config import COMPACT_INPUT_SCHEMA_BUDGET_BYTES

ALL_JSON_TYPES = ["object", "array", "string", "number", "integer", "boolean", "null"]
_ANNOTATIONS = ("description", "examples", "default", "title", "$comment")
_CONSTRAINING = ("type", "const", "enum", "$ref", "anyOf", "oneOf", "allOf", "not", "properties", "items")
# Keywords whose values are subschemas (or maps/lists of them) rather than data.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_SINGLE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                  "unevaluatedProperties", "unevaluatedItems")


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


class _OverBudget(Exception):
    pass


def _compact_node(node: Any, defs: dict[str, Any], budget: list[int]) -> Any:
    """Strip annotations, inline local references and widen unconstrained fields, within ``budget``."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[len("#/$defs/"):])
        if target is None:
            return node
        budget[0] -= len(json.dumps(target))
        if budget[0] < 0:
            raise _OverBudget
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _compact_node(merged, defs, budget)
    out = {k: v for k, v in node.items() if k not in _ANNOTATIONS and k != "$defs"}
    if not any(k in out for k in _CONSTRAINING):
        out["type"] = list(ALL_JSON_TYPES)
    return _map_subschemas(out, lambda sub: _compact_node(sub, defs, budget))


def _resolved_types(node: Any, defs: dict[str, Any], depth: int = 0) -> list[str]:
    if not isinstance(node, dict) or depth > 8:
        return list(ALL_JSON_TYPES)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolved_types(defs.get(ref[len("#/$defs/"):], {}), defs, depth + 1)
    if "const" in node:
        return [_json_type(node["const"])]
    if "enum" in node:
        return sorted({_json_type(v) for v in node["enum"]})
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


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


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
        "Reduced presentation: nested validation is elided here and enforced by the server.")
    return out


class FullProjection(Projection):
    descriptor = ProjectionDescriptor(id="full", description="The complete canonical input schema (default).")

    def project(self, tool_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        return flatten_root_union(copy.deepcopy(schema))


class CompactProjection(Projection):
    descriptor = ProjectionDescriptor(
        id="compact",
        description=f"Every input schema within {COMPACT_INPUT_SCHEMA_BUDGET_BYTES} bytes: prose dropped, "
                    "references inlined, unconstrained fields typed; oversized schemas reduced.")

    def __init__(self, budget: int = COMPACT_INPUT_SCHEMA_BUDGET_BYTES) -> None:
        self.budget = budget
        self.reduced: set[str] = set()

    def project(self, tool_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        flat = flatten_root_union(copy.deepcopy(schema))
        defs = flat.get("$defs", {})
        try:
            body: dict[str, Any] = _compact_node(flat, defs, [self.budget])
            if "description" in flat:
                body = {"description": flat["description"], **body}
            if serialized_size(body) <= self.budget:
                self.reduced.discard(tool_name)
                return body
        except _OverBudget:
            pass
        self.reduced.add(tool_name)
        return reduced_form(flat)


@hookimpl
def rea_register_projections(register: Callable[[Projection], None]) -> None:
    register(FullProjection())
    register(CompactProjection())
