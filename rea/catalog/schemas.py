"""Schema helpers: the Evidence output schema, content-bound ``$id``s, and advertised-shape checks."""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from rea.catalog.tool import ResultType, ToolDef

DIALECT = "https://json-schema.org/draft/2020-12/schema"
ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf")


def with_content_id(schema: dict[str, Any]) -> dict[str, Any]:
    """A self-contained copy of ``schema`` with its dialect and an ``$id`` bound to its content."""
    from rea.canonical import canonical_digest

    out = {k: v for k, v in schema.items() if k != "$id"}
    out["$schema"] = DIALECT
    out = {"$id": "urn:rea:schema:sha256:" + canonical_digest(out), **out}
    return out


@functools.cache
def evidence_output_schema(result_type: ResultType | None = None) -> dict[str, Any]:
    """The output schema of an Evidence-producing tool (the complete record); with ``result_type``, its
    normalized_result is constrained to that Struct's schema."""
    from rea.evidence import Evidence

    (root,), components = msgspec.json.schema_components([Evidence], ref_template="#/$defs/{name}")
    name = root["$ref"].rsplit("/", 1)[-1]
    body = copy.deepcopy(components.pop(name))
    body["$defs"] = components
    body["description"] = (
        "A complete Evidence record. Read normalized_result for the operation result and evidence_id for its identity."
    )
    return with_content_id(typed_result(body, result_type))


def typed_result(body: dict[str, Any], result_type: ResultType | None) -> dict[str, Any]:
    """``body`` (an Evidence record's schema) with normalized_result constrained to ``result_type`` (one of them,
    for a tuple)."""
    if result_type is None:
        return body
    types = result_type if isinstance(result_type, tuple) else (result_type,)
    roots, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    for name, component in components.items():
        if body["$defs"].get(name, component) != component:
            raise ValueError(f"$defs/{name} of {types[0].__name__} is taken by another definition")
    body["$defs"].update(components)
    shape = roots[0] if len(roots) == 1 else {"anyOf": list(roots)}
    body["properties"]["normalized_result"] = {**shape, "description": "The operation's result."}
    return body


RETAINED_EVIDENCE = "RetainedEvidence"
EVIDENCE_RECORD = "EvidenceRecord"
LEAN_EVIDENCE_RECORD = "LeanEvidenceRecord"
RETAINED_EXAMPLE = {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64}


@functools.cache
def evidence_input_defs() -> dict[str, Any]:
    """Schema-local definitions of what an Evidence-accepting input takes: a reference or a whole record."""
    from rea.evidence import Evidence

    (root,), components = msgspec.json.schema_components([Evidence], ref_template="#/$defs/{name}")
    record = components.pop(root["$ref"].rsplit("/", 1)[-1])
    record["description"] = (
        "An Evidence record exactly as a tool returned it. Its evidence_id authenticates it: "
        "an edited record is refused."
    )
    for body in components.values():  # every nested def keeps a description (advertised schemas need them)
        body.setdefault("description", "Part of an Evidence record.")
    return {
        RETAINED_EVIDENCE: {
            "type": "object",
            "description": 'Retained record: {"kind": "retained-evidence", "evidence_id": "ev_..."}.',
            "properties": {
                "kind": {"const": "retained-evidence", "description": "Always retained-evidence."},
                "evidence_id": {
                    "type": "string",
                    "pattern": "^ev_[0-9a-f]{64}$",
                    "description": "The id a tool returned (ev_ + 64 hex digits).",
                },
            },
            "required": ["kind", "evidence_id"],
            "additionalProperties": False,
        },
        EVIDENCE_RECORD: record,
        # A lean record (rea.presentation) stands for its retained original: the ledger resolves it by id.
        LEAN_EVIDENCE_RECORD: {
            "type": "object",
            "description": "A lean record as a tool of this session returned it.",
            "properties": {
                "evidence_id": {"type": "string", "pattern": "^ev_[0-9a-f]{64}$", "description": "Its id."},
                "provenance": {"type": "string", "pattern": "^pv_[0-9a-f]{16}$", "description": "Its provenance."},
            },
            "required": ["evidence_id", "provenance"],
        },
        **components,
    }


def evidence_input(description: str) -> dict[str, Any]:
    """An input that takes Evidence inline or by retained reference; use ``with_evidence_defs`` on the root."""
    return {
        "description": description,
        "anyOf": [
            {"$ref": f"#/$defs/{RETAINED_EVIDENCE}"},
            {"$ref": f"#/$defs/{EVIDENCE_RECORD}"},
            {"$ref": f"#/$defs/{LEAN_EVIDENCE_RECORD}"},
        ],
        "examples": [RETAINED_EXAMPLE],
    }


def with_evidence_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the definitions its Evidence inputs refer to, in its own ``$defs``."""
    defs = dict(schema.get("$defs", {}))
    for name, body in evidence_input_defs().items():
        if name in defs and defs[name] != body:
            raise ValueError(f"$defs/{name} is taken by another definition")
        defs[name] = copy.deepcopy(body)
    return {**schema, "$defs": defs}


def object_output_schema(
    properties: dict[str, Any] | None = None, required: list[str] | None = None, description: str = ""
) -> dict[str, Any]:
    """Output schema for session-style tools that return a plain object."""
    body: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        body["required"] = required
    if description:
        body["description"] = description
    return with_content_id(body)


def struct_output_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """Output schema for a tool that answers a plain object of type ``struct`` (the Struct is the one source)."""
    (root,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    body: dict[str, Any] = dict(components.pop(root["$ref"].rsplit("/", 1)[-1]))
    return with_content_id({**body, "$defs": components} if components else body)


def _local_target(ref: str) -> str | None:
    return ref[len("#/$defs/") :] if ref.startswith("#/$defs/") else None


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            ref = cur.get("$ref")
            if isinstance(ref, str) and (name := _local_target(ref)) is not None:
                found.add(name)
            stack.extend(v for k, v in cur.items() if k != "$defs")
        elif isinstance(cur, list):
            stack.extend(cur)
    return found


def recursive_references(schema: dict[str, Any]) -> list[str]:
    """Names of ``$defs`` reachable from the root that take part in a reference cycle."""
    defs = schema.get("$defs", {})
    graph = {name: _refs(body) for name, body in defs.items()}
    reachable: set[str] = set()
    frontier = list(_refs({k: v for k, v in schema.items() if k != "$defs"}))
    while frontier:
        name = frontier.pop()
        if name in reachable:
            continue
        reachable.add(name)
        frontier.extend(graph.get(name, ()))
    cyclic = []
    for start in sorted(reachable):
        seen: set[str] = set()
        stack = list(graph.get(start, ()))
        while stack:
            cur = stack.pop()
            if cur == start:
                cyclic.append(start)
                break
            if cur in seen:
                continue
            seen.add(cur)
            stack.extend(graph.get(cur, ()))
    return cyclic


def root_groups(schema: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, required fields) of each branch of a root ``oneOf``/``anyOf``; empty for other schemas."""
    key = next((k for k in ("oneOf", "anyOf") if k in schema), None)
    if key is None:
        return []
    base = list(schema.get("required", []))
    out = []
    for i, branch in enumerate(schema[key]):
        title = branch.get("title") or branch.get("description") or f"group {i + 1}"
        out.append((str(title), sorted(set(base) | set(branch.get("required", [])))))
    return out


def describe_groups(schema: dict[str, Any]) -> str:
    return "; ".join(
        f"({i + 1}) {title}: " + (", ".join(req) if req else "no required fields")
        for i, (title, req) in enumerate(root_groups(schema))
    )


def flatten_root_union(schema: dict[str, Any]) -> dict[str, Any]:
    """Present a root ``oneOf``/``anyOf`` of object branches as one object (canonical validation stays exact)."""
    key = next((k for k in ("oneOf", "anyOf") if k in schema), None)
    if key is None:
        return schema
    branches = schema[key]
    props: dict[str, Any] = dict(schema.get("properties", {}))
    required_sets = []
    groups = []
    for i, branch in enumerate(branches):
        bprops = branch.get("properties", {})
        for name, sub in bprops.items():
            props.setdefault(name, sub)
        req = list(branch.get("required", []))
        required_sets.append(set(req) | set(schema.get("required", [])))
        title = branch.get("title") or branch.get("description") or f"group {i + 1}"
        groups.append(f"({i + 1}) {title}: " + (", ".join(req) if req else "no required fields"))
    shared = set.intersection(*required_sets) if required_sets else set()
    # A field some groups require keeps the fields every such group requires beside it (source -> bundle).
    dependent: dict[str, list[str]] = {}
    for name in sorted(set().union(*required_sets) - shared if required_sets else set()):
        with_it = [req for req in required_sets if name in req]
        together = set.intersection(*with_it) - {name} - shared
        if together:
            dependent[name] = sorted(together)
    out = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "required")}
    out["type"] = "object"
    out["properties"] = props
    if shared:
        out["required"] = sorted(shared)
    if dependent:
        out["dependentRequired"] = {**out.get("dependentRequired", {}), **dependent}
    lead = schema.get("description", "")
    out["description"] = (
        lead + (" " if lead else "") + "Accepted input groups (exactly one): " + "; ".join(groups) + "."
    )
    return out


# How far below a result's root an advertised output schema spells out properties, the last level by name and single
# JSON type alone.
# Hosts send tools/list with every model request: the complete schemas (about 6 KB a tool) stay in the catalog
# (`rea catalog`, the rea://tool/{name} resource); the advertisement is a true, shallower description of the result.
ADVERTISED_OUTPUT_DEPTH = 1
# An Evidence record is advertised by its identity and its result; the rest of the envelope is the same for every
# tool and is described once, by the catalog.
_EVIDENCE_KEPT = ("evidence_id", "normalized_result")
# The complete (and compact) record, and the lean one (rea.evidence.LeanEvidence): advertised alike.
_EVIDENCE_TITLES = ("Evidence", "LeanEvidence")
_SMALL_ENUM = 8


def shallow_output(schema: dict[str, Any]) -> dict[str, Any]:
    """The advertised form of a complete output schema: no references, no prose, properties spelled out only to
    ``ADVERTISED_OUTPUT_DEPTH`` levels (deeper: their JSON types), an Evidence envelope by its id and result. Every
    value the complete schema accepts, this one accepts: nothing is added, only detail left out."""
    defs: dict[str, Any] = schema.get("$defs", {})
    root = _resolved(schema, defs)
    props = root.get("properties", {})
    if root.get("title") in _EVIDENCE_TITLES and all(k in props for k in _EVIDENCE_KEPT):
        # Without "required": every record has both, and saying so in every tool's schema costs 3 KB a request.
        out: dict[str, Any] = {
            "type": "object",
            "properties": {
                "evidence_id": {"type": "string"},
                "normalized_result": _shallow(props["normalized_result"], defs, ADVERTISED_OUTPUT_DEPTH),
            },
        }
    else:
        out = _shallow(root, defs, ADVERTISED_OUTPUT_DEPTH)
    return with_content_id(out)


def advertised_or_none(schema: dict[str, Any]) -> dict[str, Any] | None:
    """An advertised output schema, or None for "an object" alone: MCP makes the schema optional, and 150 bytes of
    identity and dialect around those words tell a client nothing the result itself does not."""
    return None if {k: v for k, v in schema.items() if k not in ("$id", "$schema")} == {"type": "object"} else schema


def _resolved(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/$defs/") and seen < 32:
        target = defs.get(node["$ref"][len("#/$defs/") :], {})
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _shallow(node: Any, defs: dict[str, Any], depth: int) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    node = _resolved(node, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            alternatives = [_shallow(a, defs, depth) for a in node[key]]
            if all(set(a) == {"type"} and isinstance(a["type"], str) for a in alternatives):
                kinds = sorted({a["type"] for a in alternatives})
                return {"type": kinds[0] if len(kinds) == 1 else kinds}
            return {"anyOf": alternatives}
    if "const" in node:
        return {"const": node["const"]}
    if "enum" in node:
        values = node["enum"]
        if len(values) <= _SMALL_ENUM:
            return {"enum": values}
        kinds = sorted({json_type(v) for v in values})
        return {"type": kinds[0] if len(kinds) == 1 else kinds}
    kind = node.get("type")
    if kind is None:
        return {}  # any JSON value
    out: dict[str, Any] = {"type": kind}
    if kind == "object" and depth > 0 and "properties" in node:
        # The last level spelled out gives names only (any value): a host sends this with every request, and
        # which are required, their types and everything below are the catalog's to say (rea://tool/{name}).
        props = {k: _shallow(v, defs, depth - 1) for k, v in node["properties"].items()}
        if depth == 1:
            # One JSON type stays (a client checks it for a few bytes); a union, an enum or a nested value is open.
            props = {k: v if set(v) == {"type"} and isinstance(v["type"], str) else {} for k, v in props.items()}
        out["properties"] = props
    elif kind == "array" and depth > 0 and isinstance(node.get("items"), dict):
        items = _shallow(node["items"], defs, depth - 1)
        if items:
            out["items"] = items
    return out


def json_type(value: Any) -> str:
    """The JSON Schema type of a JSON value (bool is boolean, not integer)."""
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


def output_schema(tool: ToolDef) -> dict[str, Any]:
    """A tool's complete output schema, with its content-bound ``$id`` (the Evidence schema when it declares none)."""
    if tool.output_schema is None:
        return evidence_output_schema(tool.result_type)
    if "$id" in tool.output_schema:
        return tool.output_schema
    return _cached_content_id(msgspec.json.encode(tool.output_schema))


@functools.lru_cache(maxsize=512)
def _cached_content_id(encoded: bytes) -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.decode(encoded)
    return with_content_id(schema)
