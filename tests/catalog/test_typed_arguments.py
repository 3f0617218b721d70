"""Issue 47 item 12: no argument is advertised as a bare ``object`` in the full profile.

An object too large to inline is advertised by its fields' names and JSON types, a map by its values' type. The
exceptions are deliberate and named: an Evidence record passed back as a tool returned it (beside it, the typed
retained reference and lean record), and the arguments of call_tool_by_name and run_analysis_script, which are
another tool's or a script's own.
"""

from __future__ import annotations

from typing import Any

from rea.catalog.document import advertised_input_schema
from rea.catalog.schemas import evidence_input_defs
from rea.registry import Registry

# Open by design: the arguments of another tool (call_tool_by_name) and of a script (run_analysis_script).
OPEN = {("call_tool_by_name", "/arguments"), ("run_analysis_script", "/arguments")}


def _bare(node: Any, path: str, out: list[str]) -> None:
    """An argument (or one of its alternatives, or its items) advertised as an object with nothing more said.
    Members nested inside a typed argument may be given by type alone: the canonical schema checks them."""
    if not isinstance(node, dict):
        return
    typed = {"properties", "additionalProperties", "anyOf", "oneOf"}
    if node.get("type") == "object" and not typed & set(node):
        out.append(path)
    for key in ("anyOf", "oneOf"):
        for i, sub in enumerate(node.get(key, [])):
            _bare(sub, f"{path}/{key}{i}", out)
    if isinstance(node.get("items"), dict):
        _bare(node["items"], f"{path}/items", out)


def _evidence_record_branches(schema: dict[str, Any], path: str = "") -> set[str]:
    """Paths of the canonical schema's inline-Evidence-record branches (the one open object an input may take)."""
    record = f"#/$defs/{next(k for k in evidence_input_defs() if k == 'EvidenceRecord')}"
    found: set[str] = set()

    def walk(node: Any, at: str) -> None:
        if not isinstance(node, dict):
            return
        for key in ("anyOf", "oneOf"):
            for i, sub in enumerate(node.get(key, [])):
                inline = isinstance(sub, dict) and {"evidence_id", "normalized_result"} <= set(sub.get("required", []))
                if isinstance(sub, dict) and (sub.get("$ref") == record or inline):
                    found.add(f"{at}/anyOf{i}")  # advertised alternatives are anyOf (elided ones may overlap)
                walk(sub, f"{at}/{key}{i}")
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{at}/{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{at}/items")

    walk(schema, path)
    return found


def test_every_advertised_argument_is_typed(rea_registry: Registry) -> None:
    untyped: dict[str, list[str]] = {}
    for name, spec in sorted(rea_registry.tool_specs().items()):
        found: list[str] = []
        for argument, sub in advertised_input_schema(rea_registry, spec, "full").get("properties", {}).items():
            _bare(sub, f"/{argument}", found)
        allowed = _evidence_record_branches(rea_registry.tools[name].input_schema) | {p for t, p in OPEN if t == name}
        left = [p for p in found if p not in allowed]
        if left:
            untyped[name] = left
    assert not untyped, untyped
