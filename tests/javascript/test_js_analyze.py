"""analyze_javascript_application on a real esbuild-bundled Electron-style app (facts from the sources)."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import appfixtures
import msgspec
import pytest
from jssupport import analyze
from jssupport import graph
from jssupport import modules_by_id

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.evidence import compute_evidence_id
from rea.evidence import encode
from rea.evidence import validate
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.javascript.model import EMPTY
from rea_plugins.javascript.model import Application


def _imports(module: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(e["kind"], e["specifier"], e["target_kind"]) for e in module["imports"]}


def test_source_modules_edges_and_exports(ev_v1: Evidence) -> None:
    validate(ev_v1)
    assert ev_v1.operation == "analyze_javascript_application"
    assert ev_v1.subject is not None and ev_v1.subject.format == "directory"
    mods = modules_by_id(ev_v1)
    main = mods["mod:src/main.js"]
    assert main["kind"] == "source" and main["parse"] == "ok"
    assert _imports(main) == appfixtures.V1_FACTS["main_imports"]
    resolved = {e["specifier"]: e["resolved"] for e in main["imports"]}
    assert resolved["./search.js"] == "mod:src/search.js"
    assert resolved["./util.cjs"] == "mod:src/util.cjs"
    assert resolved["./lazy.js"] == "mod:src/lazy.js"
    search = mods["mod:src/search.js"]
    assert {e["name"] for e in search["exports"]} == appfixtures.V1_FACTS["search_exports"]
    shape = next(e["shape"] for e in search["exports"] if e["name"] == "search")
    assert shape["type"] == "function" and shape["params"] == ["query"]
    assert shape["returns"][0]["type"] == "object"
    assert set(shape["returns"][0]["properties"]) == {"query", "hits"}
    util = mods["mod:src/util.cjs"]
    assert {(e["name"], e["kind"]) for e in util["exports"]} >= {("normalize", "commonjs")}
    assert {s["value"] for s in search["strings"]["items"]} >= {"alpha", "beta", "gamma", "search-v1"}
    names = {f["name"] for f in main["functions"]}
    assert "createWindow" in names
    assert all(m["sha256"] and m["size"] > 0 for m in mods.values())


def test_the_record_is_the_application_struct(ev_v1: Evidence, ev_broken: Evidence) -> None:
    # The graph is held as the Application Struct itself (a fraction of the memory of builtins). Decoded from its JSON,
    # as an inline record is, it is the same record: the same bytes, the same Evidence id, the same Struct again.
    for ev in (ev_v1, ev_broken):
        assert isinstance(ev.normalized_result, Application)
        decoded = msgspec.json.decode(msgspec.json.encode(ev.normalized_result))
        twin = msgspec.structs.replace(ev, normalized_result=decoded)
        assert encode(twin) == encode(ev)
        assert compute_evidence_id(twin) == ev.evidence_id
        assert msgspec.convert(decoded, Application, strict=True) == ev.normalized_result
    # Empty fields share one list (records are values): nothing built or read since has put anything in it.
    assert EMPTY == []


def test_electron_ipc_surface(ev_v1: Evidence) -> None:
    mods = modules_by_id(ev_v1)
    assert [(r["api"], r["channel"]) for r in mods["mod:src/main.js"]["ipc"]] == [("ipcMain.handle", "search")]
    assert [(r["api"], r["channel"]) for r in mods["mod:src/preload.js"]["ipc"]] == [
        ("contextBridge.exposeInMainWorld", "api"),
        ("ipcRenderer.invoke", "search"),
    ]
    # The bundled copies keep the same surface.
    assert [r["channel"] for r in mods["mod:dist/main.js!src/main.js"]["ipc"]] == ["search"]


def test_bundled_modules_from_esbuild(ev_v1: Evidence) -> None:
    mods = modules_by_id(ev_v1)
    main_asset = mods["mod:dist/main.js"]
    assert main_asset["kind"] == "asset" and main_asset["bundle_format"] == "esbuild"
    bundled = {mods[b]["path"] for b in main_asset["bundled_modules"]}
    assert bundled == appfixtures.V1_FACTS["bundled_in_main"]
    renderer = mods["mod:dist/renderer.js"]
    assert {mods[b]["path"] for b in renderer["bundled_modules"]} == appfixtures.V1_FACTS["bundled_in_renderer"]
    inner_main = mods["mod:dist/main.js!src/main.js"]
    assert inner_main["kind"] == "bundled" and inner_main["container"] == "mod:dist/main.js"
    edges = {(e["kind"], e["resolved"]) for e in inner_main["imports"]}
    # util.cjs is a __commonJS wrapper, lazy.js an __esm wrapper, search.js scope-hoisted.
    assert ("bundle-require", "mod:dist/main.js!src/util.cjs") in edges
    assert ("bundle-require", "mod:dist/main.js!src/lazy.js") in edges
    assert ("bundle-reference", "mod:dist/main.js!src/search.js") in edges
    util = mods["mod:dist/main.js!src/util.cjs"]
    assert "normalize" in {e["name"] for e in util["exports"]}
    assert util["span"]["start_line"] <= util["span"]["end_line"]


def test_entry_points(ev_v1: Evidence) -> None:
    entries = {(e["kind"], e["path"]) for e in graph(ev_v1)["entry_points"]}
    assert ("package-main", "dist/main.js") in entries
    assert ("electron-main", "dist/main.js") in entries
    # Bundled main: path.join(__dirname, 'preload.js') next to dist/main.js.
    assert ("electron-preload", "dist/preload.js") in entries
    assert ("renderer-html", "dist/index.html") in entries
    assert ("electron-renderer", "dist/renderer.js") in entries


def test_source_maps_external_and_inline(ev_v1: Evidence) -> None:
    maps = {m["node_id"]: m for m in graph(ev_v1)["source_maps"]}
    external = maps["map:dist/main.js.map"]
    assert external["location"] == "external" and external["generated"] == "mod:dist/main.js"
    by_path = {s["path"]: s for s in external["sources"]}
    assert set(by_path) == appfixtures.V1_FACTS["bundled_in_main"]
    search = by_path["src/search.js"]
    assert search["has_content"] and search["module"] == "mod:dist/main.js!src/search.js"
    assert search["file_module"] == "mod:src/search.js" and search["content_identical"] is True
    inline = maps["map:dist/preload.js#inline"]
    assert inline["location"] == "inline"
    assert [s["path"] for s in inline["sources"]] == ["src/preload.js"]
    assert inline["sources"][0]["content_identical"] is True
    assert modules_by_id(ev_v1)["mod:dist/preload.js"]["source_map"] == "map:dist/preload.js#inline"
    assert graph(ev_v1)["coverage"]["status"] == "complete"


def test_deterministic_across_locations_and_order(
    analysis_session: Session, app_v1: Path, ev_v1: Evidence, tmp_path: Path
) -> None:
    copy = appfixtures.copy_tree_reversed(app_v1, tmp_path / "elsewhere")
    again = analyze(analysis_session, copy)
    assert again.evidence_id == ev_v1.evidence_id
    assert graph(again) == graph(ev_v1)
    paths = [(m["path"], m["node_id"]) for m in graph(again)["modules"]]
    assert paths == sorted(paths)


def test_concurrent_analyses_agree(analysis_session: Session, app_v1: Path, ev_v1: Evidence) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        ids = list(pool.map(lambda _: analyze(analysis_session, app_v1).evidence_id, range(4)))
    assert ids == [ev_v1.evidence_id] * 4


def test_the_summary_is_the_default_and_retains_the_complete_record(
    rea_session: Session, app_v1: Path, ev_v1: Evidence
) -> None:
    out = call_tool(rea_session, "analyze_javascript_application", {"input_path": str(app_v1), "limit": 3})
    summary = out.evidence
    assert summary is not None and summary.operation == "analyze_javascript_application"
    result = msgspec.to_builtins(summary.normalized_result)
    assert result["complete_evidence_id"] == ev_v1.evidence_id
    assert summary.evidence_links == [ev_v1.evidence_id]
    assert rea_session.ledger.get(ev_v1.evidence_id) is not None
    # One page of the modules, with the total and where the next page starts.
    total = len(graph(ev_v1)["modules"])
    assert result["total"] == total and len(result["modules"]) == 3 and result["next_offset"] == 3
    assert [m["node_id"] for m in result["modules"]] == [m["node_id"] for m in graph(ev_v1)["modules"][:3]]
    last = call_tool(
        rea_session, "analyze_javascript_application", {"input_path": str(app_v1), "offset": total - 1, "limit": 3}
    ).evidence
    assert last is not None
    tail = msgspec.to_builtins(last.normalized_result)
    assert len(tail["modules"]) == 1 and tail["next_offset"] is None
    assert result["counts"] == graph(ev_v1)["counts"]


def test_parse_error_is_a_diagnostic(ev_broken: Evidence) -> None:
    mods = modules_by_id(ev_broken)
    broken = mods["mod:src/broken.js"]
    assert broken["parse"] == "error"
    assert broken["diagnostics"] and broken["diagnostics"][0]["kind"] in ("parse-error", "missing-node")
    assert mods["mod:src/ok.js"]["parse"] == "ok"
    coverage = graph(ev_broken)["coverage"]
    assert coverage["status"] == "partial" and "parse_errors" in coverage["reasons"]
    assert graph(ev_broken)["counts"]["parse_errors"] == 1


def test_limits_mark_coverage_partial(analysis_session: Session, app_v1: Path) -> None:
    ev = analyze(analysis_session, app_v1, limits={"max_files": 3})
    result = graph(ev)
    assert result["input"]["files_analyzed"] <= 3
    assert result["coverage"]["status"] == "partial" and "max_files" in result["coverage"]["reasons"]
    assert any(s["reason"] == "beyond max_files" for s in result["coverage"]["skipped"])
    small = analyze(analysis_session, app_v1, limits={"max_bytes_per_file": 200})
    reasons = graph(small)["coverage"]["reasons"]
    assert "max_bytes_per_file" in reasons
    few = analyze(analysis_session, app_v1, limits={"max_modules": 2})
    assert len(graph(few)["modules"]) <= 2
    assert "max_modules" in graph(few)["coverage"]["reasons"]


def test_symlinks_are_reported_not_followed(analysis_session: Session, tmp_path: Path) -> None:
    outside = tmp_path / "outside.js"
    outside.write_text("export const secret = 'OUTSIDE_SECRET';\n")
    app = tmp_path / "app"
    app.mkdir()
    (app / "index.js").write_text("export const x = 1;\n")
    os.symlink(outside, app / "link.js")
    os.symlink(tmp_path, app / "loop")
    ev = analyze(analysis_session, app)
    result = graph(ev)
    assert [m["path"] for m in result["modules"]] == ["index.js"]
    skipped = {s["path"]: s["reason"] for s in result["coverage"]["skipped"]}
    assert "link.js" in skipped and "loop" in skipped
    assert "OUTSIDE_SECRET" not in str(result)


def test_typescript_and_jsx(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "a.ts").write_text(
        "import { b } from './b.js';\nexport function a(x: number): string { return b(x) as string; }\n"
    )
    (tmp_path / "b.ts").write_text("export const b = (n: number): number => n * 2;\n")
    (tmp_path / "view.tsx").write_text("import { a } from './a';\nexport const View = () => <div>{a(1)}</div>;\n")
    (tmp_path / "types.d.ts").write_text("declare const ignored: number;\n")
    mods = modules_by_id(analyze(analysis_session, tmp_path))
    assert set(mods) == {"mod:a.ts", "mod:b.ts", "mod:view.tsx"}
    assert mods["mod:a.ts"]["language"] == "typescript" and mods["mod:view.tsx"]["language"] == "tsx"
    assert mods["mod:a.ts"]["imports"][0]["resolved"] == "mod:b.ts"
    assert mods["mod:view.tsx"]["imports"][0]["resolved"] == "mod:a.ts"
    assert all(m["parse"] == "ok" for m in mods.values())
    shape = mods["mod:a.ts"]["exports"][0]["shape"]
    assert shape["type"] == "function" and shape["params"] == ["x"]


def test_package_resolution(analysis_session: Session, tmp_path: Path) -> None:
    files = {
        "package.json": '{"main": "app"}',
        "app/index.js": "require('dep'); require('@scope/pkg'); require('missing-pkg');\n"
        "require('fs'); require('node:path'); require('./nope'); require(name);\n",
        "node_modules/dep/package.json": '{"main": "lib/index.js"}',
        "node_modules/dep/lib/index.js": "module.exports = 1;\n",
        "node_modules/@scope/pkg/index.js": "module.exports = 2;\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = graph(analyze(analysis_session, tmp_path))
    mods = {m["path"]: m for m in result["modules"]}
    edges = [(e["specifier"], e["target_kind"], e["resolved_path"]) for e in mods["app/index.js"]["imports"]]
    assert edges == [
        ("dep", "module", "node_modules/dep/lib/index.js"),
        ("@scope/pkg", "module", "node_modules/@scope/pkg/index.js"),
        ("missing-pkg", "package", None),
        ("fs", "builtin", None),
        ("node:path", "builtin", None),
        ("./nope", "unresolved", None),
        ("name", "dynamic", None),
    ]
    assert mods["node_modules/dep/lib/index.js"]["in_dependency"] is True
    assert mods["app/index.js"]["in_dependency"] is False
    # package.json main names a folder: its index.js.
    assert [(e["kind"], e["path"]) for e in result["entry_points"]] == [("package-main", "app/index.js")]


def test_bad_input(rea_session: Session, tmp_path: Path) -> None:
    with pytest.raises(ReaError) as missing:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(tmp_path / "nope")})
    assert missing.value.code == "target_unavailable"
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"\x00" * 64)
    with pytest.raises(ReaError) as unsupported:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(plain)})
    assert unsupported.value.code == "unsupported_target"
    with pytest.raises(ReaError) as wrong_format:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(tmp_path), "format": "asar"})
    assert wrong_format.value.code == "unsupported_target"
    with pytest.raises(ReaError) as bad_arg:
        call_tool(
            rea_session, "analyze_javascript_application", {"input_path": str(tmp_path), "limits": {"max_files": 0}}
        )
    assert bad_arg.value.code == "invalid_request"
    assert bad_arg.value.details["issues"][0]["path"] == "limits/max_files"
    with pytest.raises(ReaError) as unknown:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(tmp_path), "bogus": 1})
    assert unknown.value.code == "invalid_request"


def test_hostile_sources_do_not_crash(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "deep.js").write_text("x = " + "[" * 20000 + "]" * 20000 + ";\n")
    (tmp_path / "binary.js").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "bad.js.map").write_text("{not json")
    (tmp_path / "gen.js").write_text("var a = 1;\n//# sourceMappingURL=data:application/json;base64,@@@\n")
    (tmp_path / "remote.js").write_text("var b = 2;\n//# sourceMappingURL=https://example.invalid/x.map\n")
    (tmp_path / "package.json").write_text("{broken")
    result = graph(analyze(analysis_session, tmp_path))
    mods = {m["path"]: m for m in result["modules"]}
    assert mods["binary.js"]["parse"] == "error"
    assert mods["deep.js"]["parse"] == "ok"
    maps = {m["node_id"]: m for m in result["source_maps"]}
    assert maps["map:bad.js.map"]["diagnostics"][0]["kind"] == "source-map"
    remote = next(m for m in result["source_maps"] if m["generated"] == "mod:remote.js")
    assert remote["sources"] == [] and "not fetched" in remote["diagnostics"][0]["message"]


def test_cancellation_mid_analysis(rea_session: Session, app_v1: Path) -> None:
    signal = CancelSignal()
    # Cancel as soon as the analysis reports its first progress: the next loop check must stop it.
    ctx = CallContext(signal, sink=lambda _n, _t, _message: signal.cancel())
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "analyze_javascript_application", {"input_path": str(app_v1)}, ctx)
    assert err.value.code == "cancelled"
    assert len(rea_session.ledger) == 0


def test_progress_is_reported(rea_session: Session, app_v1: Path) -> None:
    seen: list[str] = []
    ctx = CallContext(sink=lambda _n, _t, message: seen.append(message))
    call_tool(rea_session, "analyze_javascript_application", {"input_path": str(app_v1)}, ctx)
    assert seen and seen[0].startswith("parsing")
    # The handler words the one terminal update the front end sends.
    assert "analyzed" in ctx.next_progress("analyze_javascript_application: completed")[2]


def test_plugin_import_is_cheap() -> None:
    code = "import sys, rea_plugins.javascript; print(any(m.startswith('tree_sitter') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_script_is_read_when_it_is_parsed(tmp_path: Path) -> None:
    # A directory's scripts are read one at a time as they are parsed: one that changed after the listing is read
    # as it is then, or reported as skipped, and bytes_analyzed counts what was read.
    from rea.target import identify
    from rea_plugins.javascript import analyze as build_graph
    from rea_plugins.javascript import inputs

    (tmp_path / "a.js").write_text("export const a = 1;\n")
    (tmp_path / "b.js").write_text("export const b = 2;\n")
    (tmp_path / "c.js").write_text("export const c = 3;\n")
    (tmp_path / "package.json").write_text('{"name": "app", "main": "a.js"}\n')
    ctx = CallContext()
    limits = msgspec.structs.replace(inputs.DEFAULT_LIMITS, max_bytes_per_file=64)
    collected = inputs.collect_directory(identify(str(tmp_path), ctx, allow_directory=True), limits, ctx)
    assert all(not f.data for f in collected.files if f.path.endswith(".js"))
    (tmp_path / "a.js").write_text("export const a = 'longer now';\n")
    (tmp_path / "b.js").unlink()
    (tmp_path / "c.js").write_text("export const c = 3; // " + "x" * 64 + "\n")
    result = build_graph.build(collected, limits, ctx)
    assert [m.path for m in result.modules] == ["a.js"]
    skipped = {s.path: s.reason for s in result.coverage.skipped}
    assert skipped == {"b.js": "unreadable", "c.js": "grew beyond max_bytes_per_file while reading"}
    assert "max_bytes_per_file" in result.coverage.reasons
    package = len((tmp_path / "package.json").read_bytes())
    assert result.input.bytes_analyzed == package + len((tmp_path / "a.js").read_bytes())
