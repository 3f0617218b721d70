"""The quick argument check never contradicts jsonschema: what it calls valid has no issue, what it calls
invalid has one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rea.catalog import fastcheck
from rea.catalog.invoke import validator_for
from rea.catalog.tool import ToolDef
from rea.registry import load


@pytest.fixture(scope="module")
def tools() -> list[ToolDef]:
    return sorted(load().tools.values(), key=lambda t: t.name)


def _jsonschema_valid(schema: dict[str, Any], args: Any) -> bool:
    return not any(True for _ in validator_for(schema).iter_errors(args))


def _variants(example: dict[str, Any]) -> list[Any]:
    """The example, and what a caller gets wrong: a member removed, replaced by another type, or one too many."""
    out: list[Any] = [example, {**example, "unexpected_argument": 1}, [], "text", None]
    for name in example:
        out.append({k: v for k, v in example.items() if k != name})
        for other in (0, -1, 1.5, 2**70, True, "", "x" * 5000, None, [], [1, "a"], {}, {"kind": "x"}):
            out.append({**example, name: other})
        value = example[name]
        if isinstance(value, dict) and value:
            first = next(iter(value))
            out.append({**example, name: {k: v for k, v in value.items() if k != first}})
        if isinstance(value, list) and value:
            out.append({**example, name: value + value})
    return out


def test_quick_check_agrees_with_jsonschema_on_examples_and_their_mistakes(tools: list[ToolDef]) -> None:
    checked = valid_fast = 0
    for tool in tools:
        for example in (*tool.examples, *tool.unadvertised_examples):
            for args in _variants(copy.deepcopy(dict(example))):
                verdict = fastcheck.check(tool.input_schema, args)
                if verdict == fastcheck.UNKNOWN:
                    continue
                checked += 1
                expected = _jsonschema_valid(tool.input_schema, args)
                assert (verdict == fastcheck.VALID) == expected, (tool.name, args, verdict)
                valid_fast += verdict == fastcheck.VALID
    assert checked > 1000 and valid_fast > 100


def test_most_examples_skip_jsonschema(tools: list[ToolDef]) -> None:
    """The point of the check: a valid call is decided without jsonschema."""
    examples = [(t, e) for t in tools for e in t.examples]
    fast = [(t.name, e) for t, e in examples if fastcheck.check(t.input_schema, dict(e)) == fastcheck.VALID]
    assert len(fast) >= 0.9 * len(examples), sorted({n for n, _ in examples if (n, _) not in fast})


@pytest.mark.parametrize(
    ("schema", "value", "verdict"),
    [
        ({"type": "integer"}, 1.0, fastcheck.VALID),
        ({"type": "integer"}, True, fastcheck.INVALID),
        ({"type": "number"}, False, fastcheck.INVALID),
        ({"enum": [1, "a"]}, True, fastcheck.INVALID),
        ({"enum": [1, "a"]}, 1.0, fastcheck.VALID),
        ({"const": False}, 0, fastcheck.INVALID),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, fastcheck.INVALID),
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1, fastcheck.VALID),
        ({"type": "string", "format": "uri"}, "x", fastcheck.UNKNOWN),
        ({"type": "object", "not": {"required": ["a"]}}, {}, fastcheck.UNKNOWN),
        ({"type": "string", "pattern": "^ev_[0-9a-f]{4}$"}, "ev_00ff", fastcheck.VALID),
        ({"type": "string", "pattern": "^ev_[0-9a-f]{4}$"}, "ev_00fg", fastcheck.INVALID),
        ({"$ref": "#/$defs/A", "$defs": {"A": {"type": "string"}}}, "a", fastcheck.VALID),
        ({"$ref": "#/$defs/B", "$defs": {"A": {"type": "string"}}}, "a", fastcheck.UNKNOWN),
        (
            {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
            {"a": "x", "b": 1},
            fastcheck.INVALID,
        ),
        ({"properties": {"a": {"type": "string"}}, "patternProperties": {"^b": {}}}, {"b": 1}, fastcheck.UNKNOWN),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 2}, [1, 2, 3], fastcheck.INVALID),
    ],
)
def test_keywords(schema: dict[str, Any], value: Any, verdict: int) -> None:
    assert fastcheck.check(schema, value) == verdict
    if verdict != fastcheck.UNKNOWN:
        assert _jsonschema_valid(schema, value) == (verdict == fastcheck.VALID)
