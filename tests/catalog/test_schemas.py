"""Advertised schemas: valid, non-recursive, flat at the root, within the compact budget, examples valid."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from rea.catalog.document import advertised_input_schema
from rea.catalog.document import build_catalog
from rea.catalog.schemas import ROOT_COMBINATORS
from rea.catalog.schemas import flatten_root_union
from rea.catalog.schemas import output_schema
from rea.catalog.schemas import recursive_references
from rea.config import COMPACT_INPUT_SCHEMA_BUDGET_BYTES
from rea.registry import ON_DEMAND_TOOLSETS
from rea.registry import Registry
from rea_plugins.projections.profiles import CompactProjection
from rea_plugins.projections.profiles import serialized_size

# The reduced presentations: the contract's six where the tool exists (pinned: changes are deliberate). No other
# schema's validation structure exceeds the compact budget, with nested objects advertised by their type.
PINNED_REDUCED: set[str] = {
    "capture_browser_scenario",
    "compare_application_versions",
    "compare_web_captures",
    "project_managed_application_graph",
    "build_reconstruction_obligation_ledger",
    "evaluate_reconstruction_coverage",
}
# What a host sends with every request: input schemas and descriptions of the whole catalog (issue 22).
CATALOG_BUDGET_BYTES = {"full": 60 * 1024, "compact": 30 * 1024}


def _tools(registry: Registry) -> list[Any]:
    return sorted(registry.tools.values(), key=lambda t: t.name)


def test_every_canonical_schema_is_valid_and_has_examples(registry: Registry) -> None:
    for tool in _tools(registry):
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema.get("type") == "object" or any(k in tool.input_schema for k in ("oneOf", "anyOf"))
        assert tool.examples, f"{tool.name} has no canonical example"
        encoded = [json.dumps(e, sort_keys=True) for e in tool.examples]
        assert len(set(encoded)) == len(encoded), f"{tool.name} repeats an example"
        validator = jsonschema.Draft202012Validator(tool.input_schema)
        for example in (*tool.examples, *tool.unadvertised_examples):
            errors = list(validator.iter_errors(example))
            assert not errors, f"{tool.name} example {example} invalid: {errors[0].message}"


def test_advertised_examples_never_inline_evidence(registry: Registry) -> None:
    for tool in _tools(registry):
        for example in tool.examples:
            text = json.dumps(example)
            assert '"normalized_result"' not in text, f"{tool.name} advertises inline Evidence"


@pytest.mark.parametrize("profile", ["full", "compact"])
def test_advertised_schemas_are_flat_valid_and_acyclic(registry: Registry, profile: str) -> None:
    for tool in _tools(registry):
        schema = advertised_input_schema(registry, tool, profile)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool.name
        assert not any(k in schema for k in ROOT_COMBINATORS), f"{tool.name} has a root combinator"
        assert recursive_references(schema) == [], tool.name
        validator = jsonschema.Draft202012Validator(schema)
        for example in (*tool.examples, *tool.unadvertised_examples):
            assert not list(validator.iter_errors(example)), f"{tool.name}/{profile} rejects {example}"
        if profile == "full":
            for name, prop in schema.get("properties", {}).items():
                assert isinstance(prop, dict) and prop.get("description"), f"{tool.name}.{name} lacks a description"


def test_compact_schemas_fit_the_budget_and_the_reduced_set_is_pinned(registry: Registry) -> None:
    compact = registry.projections["compact"]
    assert isinstance(compact, CompactProjection)
    for tool in _tools(registry):
        schema = compact.project(tool.name, tool.input_schema)
        assert serialized_size(schema) <= COMPACT_INPUT_SCHEMA_BUDGET_BYTES, tool.name
        assert len(json.dumps(schema, separators=(",", ":")).encode()) <= COMPACT_INPUT_SCHEMA_BUDGET_BYTES
        if "description" in flatten_root_union(tool.input_schema):
            assert "description" in schema, f"{tool.name}: compact root keeps its description"
        for prop in schema.get("properties", {}).values():
            assert "examples" not in prop and "default" not in prop and "title" not in prop
    assert compact.reduced == PINNED_REDUCED


def test_root_union_is_presented_as_one_object_but_validated_exactly() -> None:
    canonical = {
        "oneOf": [
            {
                "title": "by path",
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            {
                "title": "by reference",
                "type": "object",
                "properties": {"evidence_id": {"type": "string"}},
                "required": ["evidence_id"],
                "additionalProperties": False,
            },
        ]
    }
    flat = flatten_root_union(canonical)
    assert "oneOf" not in flat and set(flat["properties"]) == {"path", "evidence_id"}
    assert "by path: path" in flat["description"] and "by reference: evidence_id" in flat["description"]
    mixed = {"path": "/x", "evidence_id": "ev"}
    assert jsonschema.Draft202012Validator(flat).is_valid(mixed)
    assert not jsonschema.Draft202012Validator(canonical).is_valid(mixed)


def test_output_schemas_are_self_contained_with_content_ids(registry: Registry) -> None:
    for tool in _tools(registry):
        schema = output_schema(tool)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"].startswith("urn:rea:schema:sha256:")
        assert schema["type"] == "object"
        assert recursive_references(schema) == []


def test_catalog_document_matches_definitions(registry: Registry) -> None:
    doc = build_catalog(registry)
    assert doc["tool_count"] == len(registry.tools)
    assert [t["name"] for t in doc["tools"]] == sorted(registry.tools)
    for entry in doc["tools"]:
        tool = registry.tools[entry["name"]]
        assert entry["annotations"] == tool.effects.annotations()
        assert set(entry["advertised_input_schemas"]) == {"full", "compact"}


@pytest.mark.parametrize("profile", ["full", "compact"])
def test_the_whole_catalog_fits_what_a_host_sends_with_every_request(registry: Registry, profile: str) -> None:
    from rea.mcp.server import build_tool_list

    default = tuple(t for t in registry.toolsets() if t not in ON_DEMAND_TOOLSETS)
    listed = build_tool_list(registry, profile, toolsets=default)
    sent = sum(len(json.dumps(t.input_schema).encode()) + len((t.description or "").encode()) for t in listed)
    assert sent <= CATALOG_BUDGET_BYTES[profile], f"{profile}: {sent} bytes"
    for t in build_tool_list(registry, profile, multi_target=True):
        assert t.description and len(t.description) <= 200, t.name


def test_every_evidence_tool_advertises_its_result_shape(registry: Registry) -> None:
    evidence_tools = [t for t in registry.tools.values() if t.output_schema is None]
    assert [t.name for t in evidence_tools if t.result_type is None] == []
    for tool in evidence_tools:
        schema = output_schema(tool)
        jsonschema.Draft202012Validator.check_schema(schema)
        constrained = schema["properties"]["normalized_result"]
        assert set(constrained) - {"description"}, f"{tool.name} leaves normalized_result open"
