"""Schema helpers: the Evidence output schema, content-bound ``$id``s, and advertised-shape checks.

Every schema here is a JSON Schema document, JSON Schema's vocabulary rather than a rea record: a ``JSONObject``,
read through ``subschema``, ``members`` and ``strings``, which take a keyword's value as the document holds it.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING

import msgspec

from rea.records import JSONObject
from rea.records import JSONValue

if TYPE_CHECKING:
    from rea.catalog.tool import ResultType
    from rea.catalog.tool import ToolDef

DIALECT = "https://json-schema.org/draft/2020-12/schema"
ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf")


def subschema(value: JSONValue) -> JSONObject:
    """A keyword's object value (``properties``, ``$defs``, a branch), or an empty one where there is none."""
    return value if isinstance(value, dict) else {}


def members(value: JSONValue) -> list[JSONValue]:
    """A keyword's array value (``anyOf``, ``enum``), or an empty one where there is none."""
    return value if isinstance(value, list) else []


def strings(value: JSONValue) -> list[str]:
    """The strings of a keyword's array value (``required``)."""
    return [v for v in members(value) if isinstance(v, str)]


def with_content_id(schema: JSONObject) -> JSONObject:
    """A self-contained copy of ``schema`` with its dialect and an ``$id`` bound to its content."""
    from rea.canonical import canonical_digest

    out = {k: v for k, v in schema.items() if k != "$id"}
    out["$schema"] = DIALECT
    out = {"$id": "urn:rea:schema:sha256:" + canonical_digest(out), **out}
    return out


@functools.cache
def evidence_output_schema(result_type: ResultType | None = None) -> JSONObject:
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


def typed_result(body: JSONObject, result_type: ResultType | None) -> JSONObject:
    """``body`` (an Evidence record's schema) with normalized_result constrained to ``result_type`` (one of them,
    for a tuple)."""
    if result_type is None:
        return body
    types = result_type if isinstance(result_type, tuple) else (result_type,)
    roots, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    defs = subschema(body["$defs"])
    for name, component in components.items():
        if defs.get(name, component) != component:
            raise ValueError(f"$defs/{name} of {types[0].__name__} is taken by another definition")
    defs.update(components)
    shape: JSONObject = roots[0] if len(roots) == 1 else {"anyOf": list(roots)}
    subschema(body["properties"])["normalized_result"] = {**shape, "description": "The operation's result."}
    return body


RETAINED_EVIDENCE = "RetainedEvidence"
EVIDENCE_RECORD = "EvidenceRecord"
LEAN_EVIDENCE_RECORD = "LeanEvidenceRecord"
RETAINED_EXAMPLE: JSONObject = {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64}


@functools.cache
def evidence_input_defs() -> JSONObject:
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


def evidence_input(description: str) -> JSONObject:
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


def with_evidence_defs(schema: JSONObject) -> JSONObject:
    """``schema`` with the definitions its Evidence inputs refer to, in its own ``$defs``."""
    defs = dict(subschema(schema.get("$defs")))
    for name, body in evidence_input_defs().items():
        if name in defs and defs[name] != body:
            raise ValueError(f"$defs/{name} is taken by another definition")
        defs[name] = copy.deepcopy(body)
    return {**schema, "$defs": defs}


def object_output_schema(
    properties: JSONObject | None = None, required: list[str] | None = None, description: str = ""
) -> JSONObject:
    """Output schema for session-style tools that return a plain object."""
    body: JSONObject = {"type": "object", "properties": properties or {}}
    if required:
        body["required"] = [*required]
    if description:
        body["description"] = description
    return with_content_id(body)


def struct_output_schema(struct: type[msgspec.Struct]) -> JSONObject:
    """Output schema for a tool that answers a plain object of type ``struct`` (the Struct is the one source)."""
    (root,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    body: JSONObject = dict(components.pop(root["$ref"].rsplit("/", 1)[-1]))
    return with_content_id({**body, "$defs": components} if components else body)


def _local_target(ref: str) -> str | None:
    return ref[len("#/$defs/") :] if ref.startswith("#/$defs/") else None


def _refs(node: JSONValue) -> set[str]:
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


def recursive_references(schema: JSONObject) -> list[str]:
    """Names of ``$defs`` reachable from the root that take part in a reference cycle."""
    defs = subschema(schema.get("$defs"))
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


def root_groups(schema: JSONObject) -> list[tuple[str, list[str]]]:
    """(title, required fields) of each branch of a root ``oneOf``/``anyOf``; empty for other schemas."""
    key = next((k for k in ("oneOf", "anyOf") if k in schema), None)
    if key is None:
        return []
    base = strings(schema.get("required"))
    return [
        (_group_title(branch, i), sorted(set(base) | set(strings(branch.get("required")))))
        for i, branch in enumerate(map(subschema, members(schema[key])))
    ]


def _group_title(branch: JSONObject, i: int) -> str:
    return str(branch.get("title") or branch.get("description") or f"group {i + 1}")


def describe_groups(schema: JSONObject) -> str:
    return "; ".join(
        f"({i + 1}) {title}: " + (", ".join(req) if req else "no required fields")
        for i, (title, req) in enumerate(root_groups(schema))
    )


def flatten_root_union(schema: JSONObject) -> JSONObject:
    """Present a root ``oneOf``/``anyOf`` of object branches as one object (canonical validation stays exact)."""
    key = next((k for k in ("oneOf", "anyOf") if k in schema), None)
    if key is None:
        return schema
    props: JSONObject = dict(subschema(schema.get("properties")))
    required_sets = []
    groups = []
    for i, branch in enumerate(map(subschema, members(schema[key]))):
        for name, sub in subschema(branch.get("properties")).items():
            props.setdefault(name, sub)
        req = strings(branch.get("required"))
        required_sets.append(set(req) | set(strings(schema.get("required"))))
        groups.append(f"({i + 1}) {_group_title(branch, i)}: " + (", ".join(req) if req else "no required fields"))
    shared = set.intersection(*required_sets) if required_sets else set()
    # A field some groups require keeps the fields every such group requires beside it (source -> bundle).
    dependent: JSONObject = {}
    for name in sorted(set[str]().union(*required_sets) - shared if required_sets else set[str]()):
        with_it = [req for req in required_sets if name in req]
        together = set.intersection(*with_it) - {name} - shared
        if together:
            dependent[name] = [*sorted(together)]
    out = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "required")}
    out["type"] = "object"
    out["properties"] = props
    if shared:
        out["required"] = [*sorted(shared)]
    if dependent:
        out["dependentRequired"] = {**subschema(out.get("dependentRequired")), **dependent}
    lead = str(schema.get("description", ""))
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


def shallow_output(schema: JSONObject) -> JSONObject:
    """The advertised form of a complete output schema: no references, no prose, properties spelled out only to
    ``ADVERTISED_OUTPUT_DEPTH`` levels (deeper: their JSON types), an Evidence envelope by its id and result. Every
    value the complete schema accepts, this one accepts: nothing is added, only detail left out."""
    defs = subschema(schema.get("$defs"))
    root = _resolved(schema, defs)
    props = subschema(root.get("properties"))
    if root.get("title") in _EVIDENCE_TITLES and all(k in props for k in _EVIDENCE_KEPT):
        # Without "required": every record has both, and saying so in every tool's schema costs 3 KB a request.
        out: JSONObject = {
            "type": "object",
            "properties": {
                "evidence_id": {"type": "string"},
                "normalized_result": _shallow(props["normalized_result"], defs, ADVERTISED_OUTPUT_DEPTH),
            },
        }
    else:
        out = _shallow(root, defs, ADVERTISED_OUTPUT_DEPTH)
    return with_content_id(out)


def advertised_or_none(schema: JSONObject) -> JSONObject | None:
    """An advertised output schema, or None for "an object" alone: MCP makes the schema optional, and 150 bytes of
    identity and dialect around those words tell a client nothing the result itself does not."""
    return None if {k: v for k, v in schema.items() if k not in ("$id", "$schema")} == {"type": "object"} else schema


def _resolved(node: JSONObject, defs: JSONObject) -> JSONObject:
    seen = 0
    while isinstance(ref := node.get("$ref"), str) and ref.startswith("#/$defs/") and seen < 32:
        target = subschema(defs.get(ref[len("#/$defs/") :], {}))
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _single_type(schema: JSONObject) -> str | None:
    """The one JSON type a schema of nothing but ``type`` names, else None."""
    kind = schema.get("type") if set(schema) == {"type"} else None
    return kind if isinstance(kind, str) else None


def _one_or_all(kinds: list[str]) -> JSONValue:
    return kinds[0] if len(kinds) == 1 else [*kinds]


def _shallow(node: JSONValue, defs: JSONObject, depth: int) -> JSONObject:
    if not isinstance(node, dict):
        return {}
    node = _resolved(node, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            alternatives = [_shallow(a, defs, depth) for a in members(node[key])]
            singles = [_single_type(a) for a in alternatives]
            if None not in singles:
                return {"type": _one_or_all(sorted({k for k in singles if k is not None}))}
            return {"anyOf": [*alternatives]}
    if "const" in node:
        return {"const": node["const"]}
    if "enum" in node:
        values = members(node["enum"])
        if len(values) <= _SMALL_ENUM:
            return {"enum": values}
        return {"type": _one_or_all(sorted({json_type(v) for v in values}))}
    kind = node.get("type")
    if kind is None:
        return {}  # any JSON value
    out: JSONObject = {"type": kind}
    items = node.get("items")
    if kind == "object" and depth > 0 and "properties" in node:
        # The last level spelled out gives names only (any value): a host sends this with every request, and
        # which are required, their types and everything below are the catalog's to say (rea://tool/{name}).
        props = {k: _shallow(v, defs, depth - 1) for k, v in subschema(node["properties"]).items()}
        if depth == 1:
            # One JSON type stays (a client checks it for a few bytes); a union, an enum or a nested value is open.
            props = {k: v if _single_type(v) is not None else {} for k, v in props.items()}
        out["properties"] = {**props}
    elif kind == "array" and depth > 0 and isinstance(items, dict):
        shallow_items = _shallow(items, defs, depth - 1)
        if shallow_items:
            out["items"] = shallow_items
    return out


def json_type(value: JSONValue) -> str:
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


def output_schema(tool: ToolDef) -> JSONObject:
    """A tool's complete output schema, with its content-bound ``$id`` (the Evidence schema when it declares none)."""
    if tool.output_schema is None:
        return evidence_output_schema(tool.result_type)
    if "$id" in tool.output_schema:
        return tool.output_schema
    return _cached_content_id(msgspec.json.encode(tool.output_schema))


@functools.lru_cache(maxsize=512)
def _cached_content_id(encoded: bytes) -> JSONObject:
    schema: JSONObject = msgspec.json.decode(encoded)
    return with_content_id(schema)
