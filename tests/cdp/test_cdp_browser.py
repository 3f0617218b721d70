"""The browser tools against a real headless Chromium on loopback, over the test site on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

import pytest

from rea.errors import ReaError
from rea.process import procfs
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.cdp.browser import OwnedBrowser
from tests.cdp.conftest import navigate
from tests.cdp.conftest import target_args
from tests.cdp.site import Site


def test_targets_are_listed_and_filtered_by_origin(
    session: Session, browser: OwnedBrowser, page: str, site: Site
) -> None:
    listing = result_of(session, "list_browser_targets", {"cdp_endpoint": browser.endpoint})
    assert [t["target_id"] for t in listing["targets"]] == [page]
    assert listing["targets"][0]["origin"] == site.origin and listing["browser"]["product"].startswith("Chrome/")
    other = result_of(
        session,
        "list_browser_targets",
        {"cdp_endpoint": browser.endpoint, "allowed_origins": ["https://elsewhere.example"]},
    )
    assert other["targets"] == [] and other["excluded"]["disallowed_origin"] == 1


def test_inspect_reports_the_page(session: Session, browser: OwnedBrowser, page: str, site: Site) -> None:
    ins = result_of(session, "inspect_web_page", target_args(browser, page, observation_ms=400))
    assert ins["target"]["title"] == "Newsletter 1" and ins["allowed_origins"] == [site.origin]
    scripts = {(s["url"], s["inline"]): s for s in ins["scripts"]["items"]}
    app = scripts[(site.origin + "/app.js", False)]
    served = site_bytes(site, "/app.js")
    assert app["sha256"] == hashlib.sha256(served).hexdigest() and app["length"] == len(served)
    assert (site.origin + "/", True) in scripts
    form = ins["forms"][0]
    assert form["id"] == "subscribe" and form["webmcp_tool_name"] == "subscribe"
    assert form["fields"] == [{"tag": "input", "name": "email", "type": "email", "required": True}]
    texts = [e["text"] for e in ins["console"]["events"]]
    assert "app 1 loaded" in texts and "inline ready 1" in texts  # logged before rea attached
    requests = {(r["method"], r["url"]) for r in ins["network"]["requests"]}
    assert ("GET", site.origin + "/api/status") in requests  # polled during the window
    assert all(r["origin"] == site.origin for r in ins["network"]["requests"])
    assert ins["storage"]["local_storage_keys"] == ["visits"] and ins["storage"]["session_storage_keys"] == ["tab"]
    # The image from localhost is another origin: it is not described.
    assert all(r["origin"] == site.origin for r in ins["resources"])
    assert ins["dom"]["total_nodes"] > 10 and ins["dom"]["html_sha256"]


def test_inspect_outside_the_allowed_origins_is_refused(session: Session, browser: OwnedBrowser, page: str) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(session, "inspect_web_page", target_args(browser, page, allowed_origins=["https://other.example"]))
    assert err.value.code == "target_unavailable" and err.value.details["reason"] == "not_allowed"
    with pytest.raises(ReaError) as err:
        call_tool(session, "inspect_web_page", target_args(browser, "NO-SUCH-TARGET"))
    assert err.value.code == "target_unavailable" and err.value.details["reason"] == "not_found"


def test_webmcp_tools_are_discovered(session: Session, browser: OwnedBrowser, page: str, site: Site) -> None:
    found = result_of(session, "discover_webmcp_tools", target_args(browser, page))
    assert found["status"] == "available"
    tools = {t["name"]: t for t in found["tools"]["items"]}
    assert set(tools) == {"search_issues", "subscribe"}
    search, subscribe = tools["search_issues"], tools["subscribe"]
    assert search["declaration_kind"] == "imperative" and search["registration_source"]["url"].endswith("/app.js")
    assert search["input_schema"]["required"] == ["query"] and search["trust"] == "page-declared-untrusted"
    assert subscribe["declaration_kind"] == "declarative" and subscribe["owner_origin"] == site.origin
    assert subscribe["input_schema"]["properties"]["email"]["type"] == "string"
    small = result_of(session, "discover_webmcp_tools", target_args(browser, page, max_schema_nodes=3))
    summarized = {t["name"]: t for t in small["tools"]["items"]}["search_issues"]
    assert summarized["input_schema"] is None and summarized["schema_summary"]["exceeded"] == ["max_schema_nodes"]
    assert summarized["input_schema_sha256"] == search["input_schema_sha256"]
    assert small["completeness"]["truncated_sections"] == ["tools"]


def test_screenshots_are_bounded_artifacts_and_compare(session: Session, browser: OwnedBrowser, page: str) -> None:
    first = call_tool(session, "capture_web_screenshot", target_args(browser, page)).evidence
    assert first is not None
    art = first.normalized_result["artifact"]
    data = base64.b64decode(art["data_base64"])
    assert data.startswith(b"\x89PNG") and hashlib.sha256(data).hexdigest() == art["sha256"]
    assert art["width"] == 800 and 0 < art["height"] <= 600 and art["bytes"] == len(data)
    with pytest.raises(ReaError) as err:
        call_tool(session, "capture_web_screenshot", target_args(browser, page, maximum_image_bytes=1024))
    assert err.value.code == "resource_constraint"
    same = result_of(
        session,
        "compare_web_screenshots",
        {"before": {"kind": "retained-evidence", "evidence_id": first.evidence_id}, "after": art},
    )
    assert same["changed_pixels"] == 0 and same["identical_bytes"] and same["dimensions_match"]
    tampered = dict(art, sha256="0" * 64)
    with pytest.raises(ReaError) as err:
        call_tool(session, "compare_web_screenshots", {"before": art, "after": tampered})
    assert err.value.code == "evidence_integrity_mismatch"


def test_two_versions_compare_with_the_changed_script_and_the_new_request(
    session: Session, browser: OwnedBrowser, page: str, site: Site
) -> None:
    args = target_args(browser, page, observation_ms=400)
    before = {
        "inspection": result_of(session, "inspect_web_page", args),
        "webmcp": result_of(session, "discover_webmcp_tools", target_args(browser, page)),
    }
    site.version = 2
    try:
        navigate(browser.endpoint, page, site.origin + "/")
        after = {"inspection": result_of(session, "inspect_web_page", args), "webmcp": None}
    finally:
        site.version = 1
        navigate(browser.endpoint, page, site.origin + "/")
    diff = result_of(session, "compare_web_captures", {"before": before, "after": after})
    assert diff["family"] == "passive" and diff["verdict"] == "different"
    changed = {(c["url"], c["inline"]) for c in diff["scripts"]["changed"]}
    assert changed == {(site.origin + "/app.js", False), (site.origin + "/", True)}
    assert {"method": "GET", "url": site.origin + "/api/extra", "resource_type": "Fetch"} in diff["network"]["added"]
    assert diff["network"]["removed"] == []
    assert diff["target"]["title_changed"] and diff["webmcp"]["compared"] is False
    assert {"level": "info", "text": "app 2 loaded"} in diff["console"]["added"]


SCENARIO_ACTIONS = [
    {
        "step_id": "type-email",
        "action": "fill",
        "locator": {"kind": "test_id", "value": "email"},
        "value": {"source": "secret", "secret_id": "email"},
    },
    {"step_id": "submit", "action": "click", "locator": {"kind": "role", "role": "button", "name": "Subscribe"}},
    {
        "step_id": "confirmed",
        "action": "wait_for",
        "locator": {"kind": "css", "selector": "#result"},
        "state": "visible",
    },
]
SECRET = "alice.secret@example.test"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REA_TEST_SUBSCRIBER", SECRET)


def _scenario(site: Site, **more: Any) -> dict[str, Any]:
    return {
        "start_url": {"url": site.origin + "/"},
        "actions": SCENARIO_ACTIONS,
        "secrets": [{"secret_id": "email", "environment_variable": "REA_TEST_SUBSCRIBER"}],
        "capture": {
            "after_each_step": ["url", "dom"],
            "at_end": ["title", "screenshot", "storage"],
            "events": ["console", "page-errors", "network"],
        },
        **more,
    }


@pytest.mark.usefixtures("secret_env")
def test_a_three_step_scenario_in_a_browser_rea_owns(session: Session, site: Site) -> None:
    toolchains_chromium()
    posts = len(site.posts)
    out = call_tool(session, "capture_browser_scenario", _scenario(site)).evidence
    assert out is not None
    cap = out.normalized_result
    assert [s["step_id"] for s in cap["steps"]] == ["scenario_start", "type-email", "submit", "confirmed"]
    assert all(s["status"] == "completed" for s in cap["steps"]) and cap["completeness"]["status"] == "complete"
    assert site.posts[posts:] == [{"email": SECRET}]  # the real value reached the page...
    assert SECRET not in str(cap) and SECRET not in str(out.parameters)  # ...and nowhere in the capture
    final = cap["steps"][-1]["artifacts"]
    assert "Subscribed [secret:email]" in final["dom"]["value"]["text"]
    assert final["title"]["value"]["text"] == "Newsletter 1" and final["screenshot"]["state"] == "captured"
    assert [v["name"] for v in final["storage"]["value"]["local_storage"]] == ["visits"]
    events = cap["events"]["items"]
    submit = next(s for s in cap["steps"] if s["step_id"] == "submit")
    posted = [e for e in events if e["kind"] == "request" and e["method"] == "POST"]
    assert posted and posted[0]["url"]["url"] == site.origin + "/api/subscribe"
    assert posted[0]["step_index"] >= submit["step_index"]
    assert any(e["kind"] == "console" and e["text"] == "app 1 loaded" and e["step_index"] == 0 for e in events)
    blocked = [e for e in events if e["kind"] == "request-blocked"]
    assert blocked and blocked[0]["url"]["url"].startswith("http://localhost:")  # outside allowed_origins
    assert cap["browser"]["mode"] == "launch" and cap["browser"]["cleanup"] == "terminated-owned-process"
    # The owned browser's lineage reached the session, and none of its processes outlived the call.
    lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]
    assert lineage["state"] == "snapshots"
    started = next(s for s in lineage["snapshots"] if s["event"] == "started")
    assert started["status"] == "verified" and started["resource"] == "chromium"
    assert started["isolation"]["sandbox"] in ("bubblewrap", "none")
    assert [s["event"] for s in lineage["snapshots"]][-1] == "closed"
    seen = {started["pid"], *started["descendants"]}
    assert not [
        pid for pid in seen if (info := procfs.read(pid)) is not None and info.state != "Z" and _home_is_private(pid)
    ]


@pytest.mark.usefixtures("secret_env")
def test_scenarios_of_two_versions_compare_by_step(
    session: Session, browser: OwnedBrowser, page: str, site: Site
) -> None:
    connect = {"mode": "connect", "cdp_endpoint": browser.endpoint, "target_id": page}
    replay = {
        "mode": "exact",
        "unmatched": "passthrough-declared-origins",
        "routes": [
            {
                "route_id": "subscribe",
                "method": "POST",
                "request": {"url": site.origin + "/api/subscribe"},
                "response": {
                    "kind": "response",
                    "status": 200,
                    "headers": [{"name": "content-type", "value": {"source": "literal", "value": "application/json"}}],
                    "body": {"source": "literal", "value": '{"id": 42}'},
                },
            }
        ],
    }
    storage = {
        "cookies": [
            {
                "name": "session",
                "value": {"source": "secret", "secret_id": "email"},
                "destination": {"url": site.origin + "/"},
                "http_only": True,
                "secure": False,
                "same_site": "Lax",
            }
        ],
        "session_storage": [
            {"origin": site.origin, "entries": [{"name": "seeded", "value": {"source": "literal", "value": "yes"}}]}
        ],
    }
    posts = len(site.posts)
    captures = []
    for version in (1, 2):
        site.version = version
        captures.append(
            result_of(
                session,
                "capture_browser_scenario",
                _scenario(site, browser=connect, request_replay=replay, storage=storage),
            )
        )
    site.version = 1
    assert site.posts[posts:] == []  # the replayed route answered; nothing reached the server
    first = captures[0]
    assert first["browser"] == {
        "mode": "connect",
        "process_ownership": "external",
        "cleanup": "disconnected-external",
        "product": "Chrome",
        "version": first["browser"]["version"],
        "isolation": None,
    }
    replayed = [e for e in first["events"]["items"] if e["kind"] == "request-replayed"]
    assert replayed and replayed[0]["text"] == "subscribe" and replayed[0]["status"] == 200
    snapshot = first["steps"][-1]["artifacts"]["storage"]["value"]
    assert [c["value_state"] for c in snapshot["cookies"]] == ["redacted-secret"]
    assert [v["name"] for v in snapshot["session_storage"]] == ["seeded", "tab"]
    diff = result_of(session, "compare_web_captures", {"before_scenario": captures[0], "after_scenario": captures[1]})
    assert diff["family"] == "scenario" and diff["verdict"] == "different"
    assert diff["alignment"]["aligned"] == ["scenario_start", "type-email", "submit", "confirmed"]
    start = diff["steps"][0]
    assert {d["artifact"] for d in start["differences"]} == {"dom"}
    extra = {"kind": "request", "method": "GET", "url": site.origin + "/api/extra"}
    assert extra in diff["events"]["requests"]["added"]
    assert {"level": "info", "text": "app 2 loaded"} in diff["events"]["console"]["added"]
    rules = [
        {
            "rule_id": "version",
            "artifacts": ["dom", "title"],
            "match": '"inline ready", 2',
            "replacement": '"inline ready", 1',
        },
        {"rule_id": "title", "artifacts": ["dom", "title"], "match": "Newsletter 2", "replacement": "Newsletter 1"},
    ]
    normalized = result_of(
        session,
        "compare_web_captures",
        {"before_scenario": captures[0], "after_scenario": captures[1], "normalization": {"rules": rules}},
    )
    assert normalized["steps"][0]["differences"] == [] and normalized["normalization"]["applied"]["version"] >= 1
    assert normalized["verdict"] == "different"  # the new request is still a difference


def site_bytes(site: Site, path: str) -> bytes:
    from tests.cdp.site import pages

    return pages(site.version, site.server.server_port)[path][1]


def _home_is_private(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return b"/rea-chromium-" in fh.read()
    except OSError:
        return False


def toolchains_chromium() -> None:
    from tests import toolchains

    toolchains.require("chromium")
    assert os.path.exists("/proc/self")


def test_inspect_includes_visible_text_only_when_asked(session: Session, browser: OwnedBrowser, page: str) -> None:
    plain = result_of(session, "inspect_web_page", target_args(browser, page))
    assert all("text" not in n for n in plain["dom"]["nodes"])
    texts = result_of(session, "inspect_web_page", target_args(browser, page, include_text=True))["dom"]["nodes"]
    by_parent = {n["parent_index"]: n for n in texts if n.get("text")}
    names = {n["index"]: n["node_name"] for n in texts}
    # The site's heading says "Newsletter" (tests/cdp/site.py); scripts' source is no visible text.
    assert any(n["text"] == "Newsletter" and names[n["parent_index"]] == "H1" for n in by_parent.values())
    assert not any(names.get(p) == "SCRIPT" for p in by_parent)
    assert all(len(n["text"]) <= 200 for n in by_parent.values())


def test_a_selector_that_does_not_parse_fails_its_step_and_says_so(
    session: Session, browser: OwnedBrowser, page: str, site: Site
) -> None:
    connect = {"mode": "connect", "cdp_endpoint": browser.endpoint, "target_id": page}
    actions = [{"step_id": "bad", "action": "click", "locator": {"kind": "css", "selector": "#["}, "timeout_ms": 500}]
    cap = result_of(
        session,
        "capture_browser_scenario",
        {"start_url": {"url": site.origin + "/"}, "actions": actions, "browser": connect},
    )
    bad = next(s for s in cap["steps"] if s["step_id"] == "bad")
    assert bad["status"] == "failed" and "invalid selector '#['" in str(bad), bad
