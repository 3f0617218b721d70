"""The application workflows over retained and inline analyze_javascript_application Evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jssupport import analyze
from jssupport import graph
from jssupport import inline
from jssupport import retained

from rea.errors import ReaError
from rea.evidence import Evidence
from rea.evidence import build
from rea.session import Session
from rea.testing import call_tool


def _run(session: Session, tool: str, args: dict[str, Any]) -> Evidence:
    out = call_tool(session, tool, args)
    assert out.evidence is not None
    return out.evidence


def test_inline_and_retained_inputs_give_the_same_evidence(rea_session: Session, ev_v1: Evidence) -> None:
    seed = {"kind": "module", "value": "src/search.js", "match": "exact"}
    a = _run(rea_session, "trace_application_feature", {"application": inline(ev_v1), "seed": seed})
    b = _run(rea_session, "trace_application_feature", {"application": retained(rea_session, ev_v1), "seed": seed})
    assert a.evidence_id == b.evidence_id
    assert a.evidence_links == [ev_v1.evidence_id]
    assert a.confidence == "derived"


def test_trace_feature_from_a_module(rea_session: Session, ev_v1: Evidence) -> None:
    result = _run(
        rea_session,
        "trace_application_feature",
        {
            "application": retained(rea_session, ev_v1),
            "seed": {"kind": "module", "value": "mod:src/search.js"},
            "max_depth": 1,
        },
    ).normalized_result
    nodes = {n["node_id"]: n for n in result["nodes"]}
    assert nodes["mod:src/search.js"]["depth"] == 0
    # src/main.js imports search.js: one hop away through an importer edge.
    assert nodes["mod:src/main.js"]["depth"] == 1
    assert {"from": "mod:src/main.js", "to": "mod:src/search.js", "kind": "import", "label": "./search.js"} in result[
        "edges"
    ]
    assert any(n["type"] == "function" and n["name"] == "search" for n in result["nodes"])
    assert not result["truncated"]
    assert "picture" not in result
    drawn = _run(
        rea_session,
        "trace_application_feature",
        {
            "application": retained(rea_session, ev_v1),
            "seed": {"kind": "module", "value": "mod:src/search.js"},
            "max_depth": 1,
            "format": "mermaid",
        },
    ).normalized_result
    text = drawn["picture"]["text"]
    # The seed module and its function emphasised (depth 0); main.js's import and the definition drawn as edges.
    assert text.startswith("flowchart LR\n") and '(["search.js"])' in text and '["main.js"]' in text
    assert '-->|"import"|' in text and '-->|"defines"|' in text
    assert drawn["picture"]["nodes"] == len(result["nodes"]) and drawn["picture"]["edges"] == len(result["edges"])


def test_trace_feature_from_a_string_and_a_symbol(rea_session: Session, ev_v1: Evidence) -> None:
    ref = retained(rea_session, ev_v1)
    by_string = _run(
        rea_session,
        "trace_application_feature",
        {"application": ref, "seed": {"kind": "string", "value": "LAZY_FEATURE", "match": "substring"}},
    ).normalized_result
    seeds = {m["node_id"] for m in by_string["matches"]}
    assert seeds == {"mod:src/lazy.js", "mod:dist/main.js!src/lazy.js"}
    assert all(m["value"] == "LAZY_FEATURE_TEXT" for m in by_string["matches"])
    exact_miss = _run(
        rea_session,
        "trace_application_feature",
        {"application": ref, "seed": {"kind": "string", "value": "LAZY_FEATURE", "match": "exact"}},
    ).normalized_result
    assert exact_miss["matches"] == [] and exact_miss["nodes"] == []
    by_symbol = _run(
        rea_session, "trace_application_feature", {"application": ref, "seed": {"kind": "symbol", "value": "normalize"}}
    ).normalized_result
    roles = {(n["path"], n.get("role")) for n in by_symbol["nodes"] if n["type"] == "function"}
    assert ("src/util.cjs", "seed") in roles
    # The ipcMain handler in src/main.js calls util.normalize(query).
    assert ("src/main.js", "caller") in roles


def test_trace_feature_follows_ipc_channels_and_string_holders(rea_session: Session, ev_v1: Evidence) -> None:
    ref = retained(rea_session, ev_v1)
    result = _run(
        rea_session,
        "trace_application_feature",
        {
            "application": ref,
            "seed": {"kind": "module", "value": "mod:src/preload.js"},
            "direction": "imports",
            "max_depth": 1,
        },
    ).normalized_result
    assert {"from": "mod:src/preload.js", "to": "mod:src/main.js", "kind": "ipc", "label": "search"} in result["edges"]
    # The string 'alpha' sits in search.js's top level; 'LAZY_FEATURE_TEXT' inside lazyFeature().
    lazy = _run(
        rea_session,
        "trace_application_feature",
        {"application": ref, "seed": {"kind": "string", "value": "LAZY_FEATURE_TEXT"}},
    ).normalized_result
    seeds = {(n["path"], n["name"]) for n in lazy["nodes"] if n["type"] == "function" and n["role"] == "seed"}
    assert ("src/lazy.js", "lazyFeature") in seeds
    callers = {n["path"] for n in lazy["nodes"] if n["type"] == "function" and n["role"] == "caller"}
    assert "src/main.js" in callers  # lazy.lazyFeature() after the dynamic import


def test_trace_feature_is_bounded(rea_session: Session, ev_v1: Evidence) -> None:
    result = _run(
        rea_session,
        "trace_application_feature",
        {
            "application": retained(rea_session, ev_v1),
            "seed": {"kind": "module", "value": "src", "match": "substring"},
            "max_nodes": 3,
        },
    ).normalized_result
    assert len(result["nodes"]) <= 3 and result["truncated"] is True


def test_trace_semantics_calls_returns_and_closures(rea_session: Session, ev_v1: Evidence) -> None:
    ref = retained(rea_session, ev_v1)
    result = _run(
        rea_session,
        "trace_javascript_semantics",
        {"application": ref, "target": {"kind": "module", "value": "mod:src/main.js"}},
    ).normalized_result
    by_name: dict[str, list[dict[str, Any]]] = {}
    for fn in result["functions"]:
        by_name.setdefault(fn["name"], []).append(fn)
    create = by_name["createWindow"][0]
    assert create["returns"][0]["shape"] == {"type": "reference", "name": "win"}
    assert {c["callee"] for c in create["calls"]} >= {"new BrowserWindow", "win.loadFile", "path.join"}
    resolved = {c["callee"]: c["resolved"] for f in result["functions"] for c in f["calls"] if c["resolved"]}
    # search(...) resolves through `import { search } from './search.js'`, util.normalize through require.
    assert resolved["search"].startswith("fn:src/search.js#search@")
    assert resolved["util.normalize"].startswith("fn:src/util.cjs#normalize@")
    assert resolved["createWindow"].startswith("fn:src/main.js#createWindow@")
    search = _run(
        rea_session,
        "trace_javascript_semantics",
        {"application": ref, "target": {"kind": "function", "value": "search", "module": "mod:src/search.js"}},
    ).normalized_result
    root = search["functions"][0]
    assert root["name"] == "search" and root["params"] == ["query"]
    assert set(root["returns"][0]["shape"]["properties"]) == {"query", "hits"}
    assert [a["target"] for f in search["functions"] for a in f["assignments"]] == []
    # The filter callback closes over `query` from search().
    arrow = next(f for f in graph(ev_v1)["modules"] if f["node_id"] == "mod:src/search.js")
    callback = next(fn for fn in arrow["functions"] if fn["kind"] == "arrow")
    assert callback["captures"] == ["query"]
    assert callback["node_id"] in next(fn for fn in arrow["functions"] if fn["name"] == "search")["closures"]


def test_trace_semantics_ambiguous_and_unknown_targets(rea_session: Session, ev_v1: Evidence) -> None:
    ref = retained(rea_session, ev_v1)
    with pytest.raises(ReaError) as ambiguous:
        _run(
            rea_session,
            "trace_javascript_semantics",
            {"application": ref, "target": {"kind": "function", "value": "createWindow"}},
        )
    assert ambiguous.value.code == "invalid_request"
    candidates = sorted(ambiguous.value.details["issues"][0]["candidates"])
    # The source's declaration and the bundle's copies (the declaration and esbuild's export getter).
    assert candidates[-1] == "fn:src/main.js#createWindow@6:8"
    assert len(candidates) >= 2 and all(
        c.startswith("fn:dist/main.js!src/main.js#createWindow@") for c in candidates[:-1]
    )
    with pytest.raises(ReaError) as unknown:
        _run(
            rea_session,
            "trace_javascript_semantics",
            {"application": ref, "target": {"kind": "function", "value": "nope"}},
        )
    assert unknown.value.code == "invalid_request"


def test_compare_application_versions(rea_session: Session, ev_v1: Evidence, ev_v2: Evidence) -> None:
    result = _run(
        rea_session, "compare_application_versions", {"left": retained(rea_session, ev_v1), "right": inline(ev_v2)}
    ).normalized_result
    status = {(m["left"], m["right"]): (m["status"], m["matched_by"]) for m in result["modules"]}
    # Modules unchanged in place are counted, not listed (unless asked for).
    assert ("mod:src/preload.js", "mod:src/preload.js") not in status
    assert result["summary"]["unchanged"] >= 2 and result["next_offset"] is None
    assert result["total"] == len(result["modules"])
    every = _run(
        rea_session,
        "compare_application_versions",
        {"left": retained(rea_session, ev_v1), "right": inline(ev_v2), "include_unchanged": True, "limit": 1000},
    ).normalized_result
    listed = {(m["left"], m["right"]): (m["status"], m["matched_by"]) for m in every["modules"]}
    assert listed[("mod:src/preload.js", "mod:src/preload.js")] == ("unchanged", "path")
    assert listed[("mod:src/format.js", "mod:src/format.js")] == ("unchanged", "path")
    assert every["total"] == every["summary"]["matched"]
    first = _run(
        rea_session,
        "compare_application_versions",
        {"left": retained(rea_session, ev_v1), "right": inline(ev_v2), "include_unchanged": True, "limit": 2},
    ).normalized_result
    assert len(first["modules"]) == 2 and first["next_offset"] == 2 and first["details_truncated"] is True
    assert status[("mod:src/search.js", "mod:src/search.js")] == ("changed", "path")
    # lazy.js moved to features/ with identical content: matched by its unique content hash.
    assert status[("mod:src/lazy.js", "mod:src/features/lazy.js")] == ("unchanged", "content")
    added = {m["node_id"] for m in result["added"]}
    removed = {m["node_id"] for m in result["removed"]}
    assert "mod:src/history.js" in added and "mod:src/util.cjs" in removed
    drawn = _run(
        rea_session,
        "compare_application_versions",
        {"left": retained(rea_session, ev_v1), "right": inline(ev_v2), "format": "mermaid"},
    ).normalized_result
    text = drawn["picture"]["text"]
    # Each listed pair an edge with its status (a module matched by content under a new path: moved); added alone.
    assert drawn["picture"]["edges"] == len(result["modules"]) and '-->|"unchanged, moved"|' in text
    assert '(["+ src/history.js"])' in text and '["- src/util.cjs"]' in text
    # shim.js's content exists twice in v2: reported as ambiguous, never paired.
    assert result["ambiguous"] == [
        {
            "sha256": result["ambiguous"][0]["sha256"],
            "left": ["mod:src/shim.js"],
            "right": ["mod:src/vendor/a/shim.js", "mod:src/vendor/b/shim.js"],
        }
    ]
    assert "mod:src/shim.js" not in removed
    main = next(m for m in result["modules"] if m["left"] == "mod:src/main.js")
    diff = main["differences"]["imports"]
    assert "import:./history.js" in diff["added"] and "require:./util.cjs" in diff["removed"]
    assert "dynamic-import:./features/lazy.js" in diff["added"]
    search = next(m for m in result["modules"] if m["left"] == "mod:src/search.js")
    # SEARCH_VERSION stays a string; search gained a parameter and a returned key.
    assert search["differences"]["export_shapes_changed"] == ["search"]
    assert "search-v2" in search["differences"]["strings"]["added"]
    assert result["coverage"]["status"] == "complete"


def test_compare_source_to_bundle(
    rea_session: Session, analysis_session: Session, app_v1: Path, ev_v1: Evidence
) -> None:
    single = _run(rea_session, "compare_source_to_bundle", {"application": retained(rea_session, ev_v1)})
    rows = {r["path"]: r for r in single.normalized_result["sources"]}
    search = rows["src/search.js"]
    assert search["status"] == "mapped"
    assert search["matches"][0]["bundle_module"] == "mod:dist/main.js!src/search.js"
    assert search["matches"][0]["via"] == ["bundle-path", "source-map"]
    assert search["matches"][0]["content"] == "identical"
    assert rows["src/preload.js"]["matches"][0]["bundle_module"] == "mod:dist/preload.js"
    assert rows["src/shim.js"]["status"] == "unmapped"
    # Separate analyses of the source tree and of the shipped dist/ folder.
    src = analyze(analysis_session, app_v1 / "src")
    dist = analyze(analysis_session, app_v1 / "dist")
    pair = _run(rea_session, "compare_source_to_bundle", {"source": inline(src), "bundle": inline(dist)})
    assert sorted(pair.evidence_links) == sorted([src.evidence_id, dist.evidence_id])
    prow = {r["path"]: r for r in pair.normalized_result["sources"]}
    assert prow["search.js"]["matches"][0]["bundle_module"] == "mod:main.js!src/search.js"
    assert prow["format.js"]["matches"][0]["bundle_module"] == "mod:renderer.js!src/format.js"
    assert pair.normalized_result["summary"]["unmapped"] == 1


def test_compare_export_shapes(rea_session: Session, ev_v1: Evidence, ev_v2: Evidence, ev_broken: Evidence) -> None:
    left, right = retained(rea_session, ev_v1), retained(rea_session, ev_v2)
    result = _run(
        rea_session,
        "compare_javascript_export_shapes",
        {"left": left, "right": right, "export": "search", "module": "mod:src/search.js"},
    ).normalized_result
    assert result["left"]["presence"] == result["right"]["presence"] == "present"
    assert result["status"] == "changed"
    changes = {d["path"]: d for d in result["differences"]}
    assert changes["shapes[0].params"]["right"] == ["query", "limit"]
    assert changes["shapes[0].returns[0].properties.total"]["change"] == "added"
    same = _run(
        rea_session,
        "compare_javascript_export_shapes",
        {"left": left, "right": right, "export": "formatHits", "module": "mod:src/format.js"},
    ).normalized_result
    assert same["status"] == "unchanged" and same["differences"] == []
    removed = _run(
        rea_session,
        "compare_javascript_export_shapes",
        {"left": left, "right": right, "export": "normalize", "module": "mod:src/util.cjs"},
    ).normalized_result
    assert (removed["left"]["presence"], removed["right"]["presence"]) == ("present", "absent")
    assert removed["status"] == "removed"
    unknown = _run(
        rea_session,
        "compare_javascript_export_shapes",
        {"left": retained(rea_session, ev_broken), "right": right, "export": "search", "module": "src/search.js"},
    ).normalized_result
    assert unknown["left"]["presence"] == "unknown-coverage"
    with pytest.raises(ReaError) as ambiguous:
        _run(rea_session, "compare_javascript_export_shapes", {"left": left, "right": right, "export": "normalize"})
    assert ambiguous.value.code == "invalid_request"
    assert set(ambiguous.value.details["issues"][0]["candidates"]) == {
        "mod:src/util.cjs",
        "mod:dist/main.js!src/util.cjs",
    }


def test_inputs_are_checked(rea_session: Session, ev_v1: Evidence, app_v1: Path) -> None:
    seed = {"kind": "module", "value": "x"}
    missing = {"kind": "retained-evidence", "evidence_id": "ev_" + "a" * 64}
    with pytest.raises(ReaError) as err:
        _run(rea_session, "trace_application_feature", {"application": missing, "seed": seed})
    assert err.value.code == "target_unavailable" and err.value.details["reason"] == "missing"
    forged = inline(ev_v1)
    forged["normalized_result"]["modules"] = []
    with pytest.raises(ReaError) as err:
        _run(rea_session, "trace_application_feature", {"application": forged, "seed": seed})
    assert err.value.code == "evidence_integrity_mismatch"
    # A summary stands for its complete graph: the comparison of the two is the comparison of the graph with itself.
    summary = call_tool(rea_session, "analyze_javascript_application", {"input_path": str(app_v1)}).evidence
    assert summary is not None
    same = _run(rea_session, "compare_application_versions", {"left": inline(summary), "right": inline(ev_v1)})
    assert same.normalized_result["summary"]["changed"] == 0
    assert same.evidence_links == [ev_v1.evidence_id]
    with pytest.raises(ReaError) as err:
        _run(rea_session, "compare_source_to_bundle", {"application": inline(ev_v1), "source": inline(ev_v1)})
    assert err.value.code == "invalid_request"


def test_well_formed_records_with_foreign_content_are_refused(rea_session: Session, ev_v1: Evidence) -> None:
    seed = {"kind": "module", "value": "x"}
    for normalized in ({"modules": "not a graph"}, {**graph(ev_v1), "schema_version": 99}):
        other = build(
            operation=ev_v1.operation,
            provider=ev_v1.provider,
            subject=ev_v1.subject,
            analysis_profile=ev_v1.analysis_profile,
            parameters={},
            normalized_result=normalized,
        )
        with pytest.raises(ReaError) as err:
            _run(rea_session, "trace_application_feature", {"application": inline(other), "seed": seed})
        assert err.value.code == "invalid_request"
        assert err.value.details["issues"][0]["path"] == "application"
