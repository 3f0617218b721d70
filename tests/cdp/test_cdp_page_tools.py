"""The page tools that read scripts (listeners, module imports, source locations, exports) against real Chromium
on a page of ES modules and an esbuild bundle with its source map, and inspect_web_network_capture on a HAR the
test records from the same browser."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.browser import OwnedBrowser
from rea_plugins.cdp.targets import attach
from tests import toolchains
from tests.cdp import modsite
from tests.cdp.conftest import navigate
from tests.cdp.conftest import target_args
from tests.javascript import appfixtures


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[modsite.ModSite]:
    """Overrides the browser tests' site: this module's page (the browser fixture opens it)."""
    toolchains.require_all(("node", "npm"))
    reason = appfixtures.install_npm_tools()
    if reason is not None:
        toolchains.unavailable(reason)
    served = modsite.ModSite(modsite.build(tmp_path_factory.mktemp("modsite")))
    yield served
    served.close()


def test_listeners_with_their_flags_nodes_and_original_sources(
    session: Session, browser: OwnedBrowser, page: str
) -> None:
    inv = result_of(session, "inspect_web_event_listeners", target_args(browser, page))
    by_type = {(item["type"], (item["node"] or {}).get("id")): item for item in inv["listeners"]}
    click = by_type[("click", "go")]
    assert click["once"] is True and click["passive"] is False
    assert click["node"]["node_name"] == "BUTTON" and click["node"]["classes"] == ["primary", "big"]
    assert click["script_url"].endswith("/main.mjs") and click["line"] == 3 and click["original"] is None
    scroll = next(item for item in inv["listeners"] if item["type"] == "scroll")
    assert scroll["passive"] is True and scroll["node"]["node_name"] == "#document"
    key = by_type[("keydown", "q")]
    assert key["script_url"].endswith("/dist/bundle.js")
    # The bundle's handler, through its source map: onKey in src/keys.js, line 1.
    original = key["original"]
    assert original["source"].endswith("src/keys.js") and original["line"] == 1
    assert original["source_line"] == "export function onKey(event) {"
    assert inv["by_type"] == {"click": 1, "keydown": 1, "scroll": 1} and inv["page"]["total"] == 3
    only = result_of(session, "inspect_web_event_listeners", target_args(browser, page, selectors=["#go"]))
    assert [item["type"] for item in only["listeners"]] == ["click"] and only["nodes_matched"] == 1


def test_the_module_graph_from_parsed_scripts_and_their_specifiers(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    graph = result_of(session, "trace_web_module_imports", target_args(browser, page))
    modules = {m["url"].rsplit("/", 1)[-1]: m for m in graph["modules"]}
    assert {"main.mjs", "greet.mjs", "names.mjs"} <= set(modules)
    main = {(i["kind"], i["specifier"]): i for i in modules["main.mjs"]["imports"]}
    assert main[("import", "./greet.mjs")]["target"] == "loaded"
    assert main[("re-export", "./names.mjs")]["target"] == "loaded"
    assert main[("dynamic-import", "./lazy.mjs")]["target"] == "not-loaded"
    assert main[("dynamic-import", "./lazy.mjs")]["resolved_url"] == site.origin + "/lazy.mjs"
    assert main[("dynamic-import", "lodash")]["target"] == "bare"
    assert modules["names.mjs"]["imported_by"] == [site.origin + "/greet.mjs", site.origin + "/main.mjs"]
    served = (site.root / "greet.mjs").read_bytes()
    assert modules["greet.mjs"]["sha256"] == hashlib.sha256(served).hexdigest()
    assert graph["counts"]["bare"] == 1 and graph["counts"]["not_loaded"] == 1


def test_a_generated_location_maps_to_its_original(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    bundle = (site.root / "dist" / "bundle.js").read_text().splitlines()
    line = next(i for i, text in enumerate(bundle, 1) if "console.log" in text)
    column = bundle[line - 1].index("console") + 1
    traced = result_of(
        session,
        "trace_web_source_location",
        target_args(browser, page, script_url=site.origin + "/dist/bundle.js", line=line, column=column),
    )
    assert traced["status"] == "mapped"
    assert traced["original"]["source"].endswith("src/keys.js") and traced["original"]["line"] == 2
    assert traced["original"]["map_url"] == site.origin + "/dist/bundle.js.map"
    unmapped = result_of(
        session,
        "trace_web_source_location",
        target_args(browser, page, script_url=site.origin + "/main.mjs", line=1, column=1),
    )
    assert unmapped["status"] == "unmapped" and unmapped["reason"] == "the script names no source map"
    with pytest.raises(ReaError) as err:
        call_tool(
            session,
            "trace_web_source_location",
            target_args(browser, page, script_url="http://x.test/a.js", line=1, column=1),
        )
    assert err.value.code == "target_unavailable"


def test_scripts_are_exported_to_a_fresh_directory_with_their_hashes(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    out = result_of(session, "export_web_scripts", target_args(browser, page))
    directory = Path(out["output_directory"])
    try:
        assert directory.name.startswith("rea-extract-web-scripts-")
        names = {f["url"].rsplit("/", 1)[-1]: f for f in out["files"]}
        assert {"main.mjs", "greet.mjs", "names.mjs", "bundle.js"} <= set(names)
        for name, rel in (("greet.mjs", "greet.mjs"), ("bundle.js", "dist/bundle.js")):
            written = (directory / names[name]["path"]).read_bytes()
            assert written == (site.root / rel).read_bytes()
            assert (
                names[name]["sha256"]
                == hashlib.sha256(written).hexdigest()
                == hashlib.sha256((site.root / rel).read_bytes()).hexdigest()
            )
        manifest = json.loads((directory / "rea-scripts.json").read_text())
        assert len(manifest) == out["written"] == len(os.listdir(directory)) - 1
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _record_har(endpoint: str, target: str, url: str, path: Path) -> None:
    """Record the page's load as HAR 1.2 from the test's own DevTools session (the way a HAR exporter does)."""
    sent: dict[str, dict[str, Any]] = {}
    answered: dict[str, dict[str, Any]] = {}
    with cdp.opened(endpoint) as conn:
        session = attach(conn, target, CallContext())

        def on_event(method: str, params: dict[str, Any], sid: str | None) -> None:
            if sid != session:
                return
            if method == "Network.requestWillBeSent":
                sent[params["requestId"]] = params
            elif method == "Network.responseReceived":
                answered[params["requestId"]] = params

        conn.subscribe(on_event)
        conn.call("Network.enable", session=session)
        navigate(endpoint, target, url)
        time.sleep(1.0)
    entries = []
    for rid, req in sent.items():
        response = answered.get(rid, {}).get("response", {})
        entries.append(
            {
                "startedDateTime": "2026-01-01T00:00:00.000Z",
                "time": 1,
                "request": {
                    "method": req["request"]["method"],
                    "url": req["request"]["url"],
                    "httpVersion": "HTTP/1.1",
                    "headers": [{"name": k, "value": v} for k, v in req["request"].get("headers", {}).items()],
                    "queryString": [],
                    "cookies": [],
                    "headersSize": -1,
                    "bodySize": 0,
                },
                "response": {
                    "status": response.get("status", 0),
                    "statusText": "",
                    "httpVersion": "HTTP/1.1",
                    "headers": [],
                    "cookies": [],
                    "content": {"size": 0, "mimeType": response.get("mimeType", "")},
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": -1,
                    "_transferSize": response.get("encodedDataLength", -1),
                },
                "cache": {},
                "timings": {"send": 0, "wait": 0, "receive": 0},
                "_resourceType": str(req.get("type", "")).lower() or None,
                "_initiator": {"type": req.get("initiator", {}).get("type", "other")},
            }
        )
    har = {"log": {"version": "1.2", "creator": {"name": "rea-tests", "version": "1"}, "entries": entries}}
    path.write_text(json.dumps(har))


def test_a_recorded_har_reads_as_request_records_with_secrets_redacted(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite, tmp_path: Path
) -> None:
    har = tmp_path / "load.har"
    _record_har(browser.endpoint, page, site.origin + "/", har)
    capture = result_of(session, "inspect_web_network_capture", {"path": str(har)})
    assert capture["source"]["creator"] == "rea-tests 1" and capture["entries"] >= 6
    urls = {r["url"].split("?", 1)[0].rsplit("/", 1)[-1]: r for r in capture["requests"]}
    status = urls["status"]
    assert status["url"] == site.origin + "/api/status?token=[REDACTED]&q=1&user=me%3Apw%40x"
    assert "s3cret" not in json.dumps(capture)
    assert status["status"] == 200 and status["method"] == "GET" and status["origin"] == site.origin
    assert urls["main.mjs"]["resource_type"] == "script" and urls["main.mjs"]["mime_type"] == "text/javascript"
    assert capture["redacted_values"] == 1 and "user-agent" in capture["header_names"]
    other = result_of(
        session, "inspect_web_network_capture", {"path": str(har), "allowed_origins": ["https://elsewhere.test"]}
    )
    assert other["requests"] == [] and other["excluded_disallowed_origin"] == capture["entries"]
    paged = result_of(session, "inspect_web_network_capture", {"path": str(har), "limit": 2})
    assert len(paged["requests"]) == 2 and paged["page"]["next_offset"] == 2


def test_a_flow_file_needs_mitmproxys_reader(session: Session, tmp_path: Path) -> None:
    flows = tmp_path / "capture.flows"
    flows.write_bytes(b"\x00\x01binary flows")
    with pytest.raises(ReaError) as err:
        call_tool(session, "inspect_web_network_capture", {"path": str(flows)})
    import importlib.util

    if importlib.util.find_spec("mitmproxy") is None:
        assert err.value.code == "capability_unavailable" and err.value.details["reason"] == "mitmproxy_missing"
    else:
        assert err.value.code == "unsupported_target"


def _drive_later(endpoint: str, target: str, expressions: list[str], delay_s: float) -> threading.Thread:
    """The user: after ``delay_s`` the test's own session runs ``expressions`` on the page, one by one."""

    def run() -> None:
        time.sleep(delay_s)
        with cdp.opened(endpoint) as conn:
            session = attach(conn, target, CallContext())
            for expression in expressions:
                conn.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True}, session=session)
                time.sleep(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_session_timeline_while_the_user_drives_the_page(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    user = _drive_later(
        browser.endpoint,
        page,
        [
            "console.log('user was here')",
            "fetch('/api/status?from=user').then(r => r.json())",
            "for (let i = 0; i < 5; i++) document.body.appendChild(document.createElement('p'))",
            "document.getElementById('q').setAttribute('data-x', '1')",
            "history.pushState({}, '', '/step-2')",
        ],
        delay_s=1.0,
    )
    timeline = result_of(
        session,
        "observe_web_session",
        target_args(browser, page, allowed_origins=[site.origin], observation_ms=4000),
    )
    user.join(timeout=30)
    kinds = [e["kind"] for e in timeline["events"]]
    assert "console" in kinds and any("user was here" in (e["detail"] or "") for e in timeline["events"])
    request = next(e for e in timeline["events"] if e["kind"] == "request" and "from=user" in (e["url"] or ""))
    assert request["detail"] == "GET"
    assert any(e["kind"] == "response" and "from=user" in (e["url"] or "") for e in timeline["events"])
    assert any(
        e["kind"] == "same-document-navigation" and e["url"] == site.origin + "/step-2" for e in timeline["events"]
    )
    assert timeline["dom_mutations"]["inserted"] == 5 and timeline["dom_mutations"]["attributes"] == 1
    assert sum(timeline["dom_mutations"]["per_second"]) == 6
    # Times are within the window and ordered.
    times = [e["t_ms"] for e in timeline["events"]]
    assert times == sorted(times) and times[0] >= 0 and times[-1] <= 4000 + 1000
    assert timeline["counts"]["navigations"] == 1 and timeline["counts"]["requests"] >= 1


def test_execution_says_which_listeners_fired(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    user = _drive_later(
        browser.endpoint,
        page,
        [
            "for (let i = 0; i < 3; i++) "
            "document.getElementById('q').dispatchEvent(new KeyboardEvent('keydown', {key: 'a'}))"
        ],
        delay_s=1.0,
    )
    run = result_of(session, "observe_web_execution", target_args(browser, page, observation_ms=3000))
    user.join(timeout=30)
    by_type = {item["type"]: item for item in run["listeners"]}
    assert by_type["keydown"]["fired"] is True and by_type["keydown"]["calls"] == 3
    assert by_type["keydown"]["script_url"] == site.origin + "/dist/bundle.js"
    assert by_type["scroll"]["fired"] is False and by_type["scroll"]["calls"] == 0
    assert run["listeners_fired"] == 1
    ran = {s["url"] for s in run["scripts"]}
    assert site.origin + "/dist/bundle.js" in ran


def test_the_page_bundle_as_an_application_graph(
    session: Session, browser: OwnedBrowser, page: str, site: modsite.ModSite
) -> None:
    out = call_tool(session, "analyze_web_bundle", target_args(browser, page))
    assert out.evidence is not None
    result = out.evidence.normalized_result
    directory = Path(result["output_directory"])
    try:
        chunks = {c["url"].rsplit("/", 1)[-1]: c for c in result["chunks"]}
        bundle = chunks["bundle.js"]
        # The bundle's map was captured beside it: esbuild's two modules, found through it and its markers.
        assert bundle["source_map"] is True and bundle["original_sources"] == 2 and bundle["bundled_modules"] == 2
        assert result["maps_written"] == 1 and {"main.mjs", "greet.mjs", "names.mjs"} <= set(chunks)
        assert any(e["value"].startswith("/api/status") for e in result["endpoint_candidates"])
        # The complete graph is retained Evidence, linked from this record.
        graph = session.resolve_evidence(
            {"kind": "retained-evidence", "evidence_id": result["application_evidence_id"]}
        )
        assert graph.operation == "analyze_javascript_application"
        assert result["application_evidence_id"] in out.evidence.evidence_links
    finally:
        shutil.rmtree(directory, ignore_errors=True)
