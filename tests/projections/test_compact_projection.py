"""The projections plugin's compact profile: references inlined, unconstrained fields widened, and a schema over
the budget advertised in its reduced form (the whole catalog's fit is tests/catalog/test_schemas.py's)."""

from __future__ import annotations

import json

from rea.config import COMPACT_INPUT_SCHEMA_BUDGET_BYTES
from rea_plugins.projections.profiles import CompactProjection
from rea_plugins.projections.profiles import serialized_size


def test_compact_inlines_references_and_widens_unconstrained_fields() -> None:
    canonical = {
        "type": "object",
        "description": "root guidance",
        "$defs": {
            "Ref": {
                "type": "object",
                "description": "a ref",
                "properties": {
                    "kind": {"const": "retained-evidence"},
                    "evidence_id": {"type": "string", "examples": ["ev_x"]},
                },
            }
        },
        "properties": {"left": {"$ref": "#/$defs/Ref", "description": "left side"}, "anything": {}},
        "required": ["left"],
        "additionalProperties": False,
    }
    out = CompactProjection().project("t", canonical)
    assert "$defs" not in out and "$ref" not in json.dumps(out)
    # A small nested object (a reference) stays whole; a large one is advertised by its type.
    assert out["properties"]["left"]["properties"]["evidence_id"] == {"type": "string"}
    assert out["properties"]["anything"]["type"] == [
        "object",
        "array",
        "string",
        "number",
        "integer",
        "boolean",
        "null",
    ]
    assert out["description"] == "root guidance"


def test_oversized_schema_gets_the_reduced_form() -> None:
    big = {
        "type": "object",
        "description": "many fields",
        "properties": {
            f"field_{i}": {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"enum": [f"choice_{j}" for j in range(12)]},
                ]
            }
            for i in range(120)
        }
        | {"mode": {"enum": ["a", "b"]}},
        "required": ["mode"],
        "additionalProperties": False,
    }
    projection = CompactProjection()
    out = projection.project("huge_tool", big)
    assert projection.reduced == {"huge_tool"}
    assert serialized_size(out) <= COMPACT_INPUT_SCHEMA_BUDGET_BYTES
    assert out["required"] == ["mode"] and out["properties"]["field_0"] == {"type": ["object", "string"]}
    assert out["properties"]["mode"]["enum"] == ["a", "b"]
    assert "elided" in out["description"]
