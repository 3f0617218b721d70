"""Issue 47 items 7-10 on the graph itself: template literals and the string cap stated, functions named as a reader
would, source-map mappings decoded, renames found by structure (facts from tests/javascript/minified.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import minified
import pytest
from jssupport import analyze
from jssupport import graph
from jssupport import retained

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.javascript import facts


def _module(ev_graph: dict[str, Any], path: str) -> dict[str, Any]:
    return next(m for m in ev_graph["modules"] if m["path"] == path)


def test_functions_are_named_as_a_reader_names_them(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text(minified.APP_V1)
    (tmp_path / "api.cjs").write_text(minified.API)
    (tmp_path / "events.js").write_text(
        "ipcMain.handle('search', (_event, query) => query);\n"
        "button.addEventListener('click', function () { return 1; });\n"
        "e.on('data', (chunk) => chunk);\n"
    )
    g = graph(analyze(analysis_session, tmp_path))
    # A function passed to register a handler is named by what it handles (a minified owner left out).
    assert {f["name"] for f in _module(g, "events.js")["functions"]} == {
        "<module>",
        "ipcMain.handle('search')",
        "button.addEventListener('click')",
        "on('data')",
    }
    names = {f["name"] for f in _module(g, "app.js")["functions"]}
    # Class fields (an arrow and a function expression), a method, object-literal members (method and arrow).
    assert {"Panel.handleClick", "Panel.onKeyDown", "Panel.render", "handlers.save", "handlers.remove"} <= names
    assert "<anonymous>" not in names
    # module.exports.x = ... and exports.x = ... are what a reader calls x.
    assert {f["name"] for f in _module(g, "api.cjs")["functions"]} == {"<module>", "store", "drop", "version"}


def test_template_literals_are_indexed_by_their_static_text(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "greet.js").write_text(minified.GREET)
    (tmp_path / "app.js").write_text(minified.APP_V1)
    g = graph(analyze(analysis_session, tmp_path))
    greet = {s["value"]: s for s in _module(g, "greet.js")["strings"]["items"]}
    assert greet["Hello, ${…}: your session expires in ${…} minutes"]["template"] is True
    app = {s["value"] for s in _module(g, "app.js")["strings"]["items"]}
    assert {"clicked ${…} times on ${…}", "save:${…}", '<div class="panel">Welcome back, ${…}!</div>'} <= app
    # A plain string is no template; a template of substitutions only has no static text to index.
    assert "template" not in {s["value"]: s for s in _module(g, "app.js")["strings"]["items"]}["click"]


def test_past_the_string_cap_the_module_says_how_many_it_holds(analysis_session: Session, tmp_path: Path) -> None:
    count = facts.MAX_STRINGS + 5
    (tmp_path / "many.js").write_text("export const all = [" + ",".join(f'"s{i}"' for i in range(count)) + "];\n")
    g = graph(analyze(analysis_session, tmp_path))
    many = _module(g, "many.js")
    assert many["strings"]["total"] == count and many["strings"]["truncated"] is True
    assert len(many["strings"]["items"]) == facts.MAX_STRINGS
    assert any(d["kind"] == "limit" and str(count) in d["message"] for d in many["diagnostics"])
    assert g["coverage"]["status"] == "partial" and "string_bounds" in g["coverage"]["reasons"]


def test_a_string_search_states_how_many_it_matched(rea_session: Session, tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("".join(f'export const v{i} = "needle {i}";\n' for i in range(30)))
    ev = analyze(rea_session, tmp_path)
    out = call_tool(
        rea_session,
        "trace_application_feature",
        {"application": retained(rea_session, ev), "seed": {"kind": "string", "value": "needle", "match": "substring"}},
    ).evidence
    assert out is not None
    assert len(out.normalized_result["matches"]) == 20 and out.normalized_result["matches_total"] == 30


def test_source_map_mappings_give_each_generated_function_its_original(
    analysis_session: Session, page_v2: Path
) -> None:
    g = graph(analyze(analysis_session, page_v2))
    (source_map,) = g["source_maps"]
    assert source_map["mappings_decoded"] is True and source_map["tokens"] > 0
    assert {s["path"] for s in source_map["sources"]} == minified.FACTS["sources"]
    assert all(s["has_content"] and s["tokens"] > 0 for s in source_map["sources"])
    bundle = _module(g, "app.js")
    originals = {f["original"]["name"]: f["original"] for f in bundle["functions"] if f.get("original", {}).get("name")}
    name, source, line = minified.FACTS["click_handler"]
    assert (originals[name]["source"], originals[name]["line"]) == (source, line)
    name, source, line = minified.FACTS["greeting"]
    assert (originals[name]["source"], originals[name]["line"]) == (source, line)
    # The minifier's names are not the originals: the bundle's own name for formatGreeting is a mangled one.
    greeting = next(f for f in bundle["functions"] if f.get("original", {}).get("name") == "formatGreeting")
    assert greeting["name"] != "formatGreeting"
    assert source_map["functions_mapped"] == sum(1 for f in bundle["functions"] if "original" in f)


def _bare_objects(schema: Any, path: str = "") -> list[str]:
    """Where a schema says 'an object' and nothing of its members."""
    out: list[str] = []
    if isinstance(schema, dict):
        typed = any(k in schema for k in ("properties", "anyOf", "oneOf", "$ref", "additionalProperties"))
        if schema.get("type") == "object" and not typed:
            out.append(path or "/")
        for key, value in schema.items():
            out.extend(_bare_objects(value, f"{path}/{key}"))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            out.extend(_bare_objects(value, f"{path}[{i}]"))
    return out


def test_no_javascript_argument_is_a_bare_object(rea_registry: Any) -> None:
    from rea_plugins.javascript.tools import tools

    # The plugin's own arguments; an inline Evidence record's schema ($defs) is the kernel's (its free-form
    # ``parameters`` are any object by design).
    declared = tools()
    assert declared
    for tool in declared:
        schema = {k: v for k, v in rea_registry.tools[tool.name].input_schema.items() if k != "$defs"}
        assert _bare_objects(schema) == [], tool.name


def test_a_location_is_mapped_only_from_the_map_analyzed(rea_session: Session, page_v2: Path, tmp_path: Path) -> None:
    page = tmp_path / "page"
    page.mkdir()
    for name in ("app.js", "app.js.map"):
        (page / name).write_bytes((page_v2 / name).read_bytes())
    ev = analyze(rea_session, page)
    args = {"application": retained(rea_session, ev), "module": "app.js", "line": 1, "column": 1}
    mapped = call_tool(rea_session, "map_javascript_location", args).evidence
    assert mapped is not None and mapped.normalized_result["source_map"] == "map:app.js.map"
    # Edited since: refused, with the rerun to do.
    (page / "app.js.map").write_text((page / "app.js.map").read_text().replace('"mappings"', '"mappings" ', 1))
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "map_javascript_location", args)
    assert err.value.code == "artifact_changed" and "analyze_javascript_application" in err.value.remediation
    # A file without a source map says so.
    with pytest.raises(ReaError) as missing:
        call_tool(rea_session, "map_javascript_location", {**args, "module": "nothing.js"})
    assert missing.value.code == "invalid_request"


def test_the_originals_only_a_map_holds_are_mapped_and_paged(rea_session: Session, page_v2: Path) -> None:
    ev = analyze(rea_session, page_v2)
    pages = [
        call_tool(
            rea_session,
            "compare_source_to_bundle",
            {"application": retained(rea_session, ev), "offset": offset, "limit": 2},
        ).evidence
        for offset in (0, 2)
    ]
    first, second = (p.normalized_result for p in pages if p is not None)
    assert first["summary"]["mapped"] == first["summary"]["from_sources_content"] == 3
    assert (first["total"], first["next_offset"], second["next_offset"]) == (3, 2, None)
    rows = first["sources"] + second["sources"]
    assert {r["path"] for r in rows} == minified.FACTS["sources"]
    assert all(r["origin"] == "sources-content" and r["tokens"] > 0 for r in rows)
