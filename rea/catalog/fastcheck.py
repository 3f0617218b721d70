"""A quick, conservative check of tool arguments against their input schema, before jsonschema is imported.

Canonical validation is jsonschema's (draft 2020-12, ``rea.catalog.invoke``), and every issue a caller sees comes
from it. Importing jsonschema costs a terminal command more than the rest of its start, though, and almost every
call is valid; so a call first goes through this check, which understands the keywords rea's schemas use and
answers only what it is sure of: ``VALID`` (jsonschema would report nothing, so it is not consulted), ``INVALID``
or ``UNKNOWN`` (a keyword, reference or value it does not decide). Anything but ``VALID`` goes to jsonschema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Final

from rea.catalog.schemas import subschema
from rea.records import JSONObject
from rea.records import JSONValue

VALID: Final = 1
INVALID: Final = 0
UNKNOWN: Final = -1
# A schema and an instance are JSON: JSON Schema's vocabulary and a client's arguments, not rea records.

# Keywords that never fail an instance (annotations; ``discriminator`` is an OpenAPI annotation jsonschema ignores).
_ANNOTATIONS: Final = frozenset(
    {"description", "title", "examples", "default", "discriminator", "$schema", "$comment", "deprecated", "readOnly"}
    | {"writeOnly", "$defs"}
)
_DEFS_REF: Final = re.compile(r"#/\$defs/([A-Za-z0-9_.\-]+)")


def check(schema: JSONValue, instance: JSONValue) -> int:
    """``VALID``, ``INVALID`` or ``UNKNOWN`` for ``instance`` under ``schema`` (the root, holding any ``$defs``)."""
    if not isinstance(schema, dict):
        return UNKNOWN
    try:
        return _node(schema, instance, schema, 0)
    except RecursionError:
        return UNKNOWN


def _combine(results: Iterable[int]) -> int:
    """All must hold: INVALID wins, then UNKNOWN."""
    out = VALID
    for r in results:
        if r == INVALID:
            return INVALID
        if r == UNKNOWN:
            out = UNKNOWN
    return out


def _is_type(name: str, value: JSONValue) -> int:
    if name == "object":
        return VALID if isinstance(value, dict) else INVALID
    if name == "array":
        return VALID if isinstance(value, list) else INVALID
    if name == "string":
        return VALID if isinstance(value, str) else INVALID
    if name == "null":
        return VALID if value is None else INVALID
    if name == "boolean":
        return VALID if isinstance(value, bool) else INVALID
    if name == "number":
        return VALID if isinstance(value, int | float) and not isinstance(value, bool) else INVALID
    if name == "integer":
        if isinstance(value, bool):
            return INVALID
        if isinstance(value, int):
            return VALID
        if isinstance(value, float):
            return VALID if math.isfinite(value) and value.is_integer() else INVALID
        return INVALID
    return UNKNOWN


def _equal(a: JSONValue, b: JSONValue) -> int:
    """jsonschema's equality: booleans are not numbers, numbers compare by value, containers member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return VALID if isinstance(a, bool) and isinstance(b, bool) and a == b else INVALID
    if isinstance(a, int | float) and isinstance(b, int | float):
        return VALID if a == b else INVALID
    if isinstance(a, str) and isinstance(b, str):
        return VALID if a == b else INVALID
    if a is None or b is None:
        return VALID if a is None and b is None else INVALID
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return INVALID
        return _combine(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return INVALID
        return _combine(_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and {type(a), type(b)} <= {str, int, float, list, dict, type(None)}:
        return INVALID
    return UNKNOWN


def _node(schema: JSONValue, value: JSONValue, root: JSONObject, depth: int) -> int:
    if schema is True:
        return VALID
    if schema is False:
        return INVALID
    if not isinstance(schema, dict) or depth > 64:
        return UNKNOWN
    results: list[int] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS:
            continue
        r = _keyword(key, arg, schema, value, root, depth)
        if r == INVALID:
            return INVALID
        results.append(r)
    return _combine(results)


def _keyword(key: str, arg: JSONValue, schema: JSONObject, value: JSONValue, root: JSONObject, depth: int) -> int:
    if key == "type":
        if isinstance(arg, str):
            return _is_type(arg, value)
        if isinstance(arg, list) and arg:
            found = [_is_type(t, value) if isinstance(t, str) else UNKNOWN for t in arg]
            return VALID if VALID in found else (INVALID if all(r == INVALID for r in found) else UNKNOWN)
        return UNKNOWN
    if key == "$ref":
        if arg == "#":
            return _node(root, value, root, depth + 1)
        match = _DEFS_REF.fullmatch(arg) if isinstance(arg, str) else None
        target = subschema(root.get("$defs")).get(match.group(1)) if match else None
        return UNKNOWN if target is None else _node(target, value, root, depth + 1)
    if key == "enum":
        if not isinstance(arg, list):
            return UNKNOWN
        found = [_equal(value, option) for option in arg]
        return VALID if VALID in found else (INVALID if all(r == INVALID for r in found) else UNKNOWN)
    if key == "const":
        return _equal(value, arg)
    if key in ("anyOf", "oneOf", "allOf"):
        if not isinstance(arg, list) or not arg:
            return UNKNOWN
        found = [_node(branch, value, root, depth + 1) for branch in arg]
        if key == "allOf":
            return _combine(found)
        if key == "anyOf":
            return VALID if VALID in found else (INVALID if all(r == INVALID for r in found) else UNKNOWN)
        if UNKNOWN in found:
            return UNKNOWN
        return VALID if found.count(VALID) == 1 else INVALID
    if key in ("properties", "required", "additionalProperties"):
        return _object_keyword(key, arg, schema, value, root, depth) if isinstance(value, dict) else VALID
    if key in ("items", "minItems", "maxItems"):
        return _array_keyword(key, arg, value, root, depth) if isinstance(value, list) else VALID
    if key in ("minLength", "maxLength", "pattern"):
        return _string_keyword(key, arg, value) if isinstance(value, str) else VALID
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return VALID
        if isinstance(arg, bool) or not isinstance(arg, int | float):
            return UNKNOWN
        if key == "minimum":
            holds = value >= arg
        elif key == "maximum":
            holds = value <= arg
        elif key == "exclusiveMinimum":
            holds = value > arg
        else:
            holds = value < arg
        return VALID if holds else INVALID
    return UNKNOWN  # a keyword this check does not decide (format, not, if, uniqueItems, ...)


def _object_keyword(
    key: str, arg: JSONValue, schema: JSONObject, value: JSONObject, root: JSONObject, depth: int
) -> int:
    if key == "required":
        if not isinstance(arg, list):
            return UNKNOWN
        return VALID if all(name in value for name in arg) else INVALID
    if key == "properties":
        if not isinstance(arg, dict):
            return UNKNOWN
        return _combine(_node(arg[name], item, root, depth + 1) for name, item in value.items() if name in arg)
    # additionalProperties: the members no "properties" entry names (patternProperties would name more).
    if "patternProperties" in schema:
        return UNKNOWN
    known = schema.get("properties", {})
    if not isinstance(known, dict):
        return UNKNOWN
    extra = [name for name in value if name not in known]
    if arg is False:
        return INVALID if extra else VALID
    return _combine(_node(arg, value[name], root, depth + 1) for name in extra)


def _array_keyword(key: str, arg: JSONValue, value: list[JSONValue], root: JSONObject, depth: int) -> int:
    if key == "items":
        if isinstance(arg, list):
            return UNKNOWN  # the array form of older drafts
        return _combine(_node(arg, item, root, depth + 1) for item in value)
    if isinstance(arg, bool) or not isinstance(arg, int):
        return UNKNOWN
    holds = len(value) >= arg if key == "minItems" else len(value) <= arg
    return VALID if holds else INVALID


def _string_keyword(key: str, arg: JSONValue, value: str) -> int:
    if key == "pattern":
        if not isinstance(arg, str):
            return UNKNOWN
        try:
            return VALID if re.search(arg, value) else INVALID
        except re.error:
            return UNKNOWN
    if isinstance(arg, bool) or not isinstance(arg, int):
        return UNKNOWN
    holds = len(value) >= arg if key == "minLength" else len(value) <= arg
    return VALID if holds else INVALID
