"""Protocol failures against a fake DevTools endpoint: broken frames, refused commands, a browser that dies
mid-capture (the partial observation is kept) and cancellation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.cdp.fake_cdp import PAGE
from tests.cdp.fake_cdp import FakeBrowser


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeBrowser]:
    server = FakeBrowser(**getattr(request, "param", {}))
    yield server
    server.close()


def _error(session: Session, tool: str, args: dict[str, Any], ctx: CallContext | None = None) -> ReaError:
    with pytest.raises(ReaError) as err:
        call_tool(session, tool, args, ctx)
    return err.value


def _scenario(fake: FakeBrowser, **more: Any) -> dict[str, Any]:
    return {
        "browser": {"mode": "connect", "cdp_endpoint": fake.endpoint, "target_id": PAGE},
        "start_url": {"url": fake.page_url},
        "allowed_origins": ["http://127.0.0.1:9"],
        "actions": [
            {"step_id": "open", "action": "click", "locator": {"kind": "css", "selector": "#open"}},
            {"step_id": "settle", "action": "wait_for_timeout", "duration_ms": 10},
        ],
        "capture": {"after_each_step": ["url", "dom"], "at_end": [], "events": ["console"]},
        **more,
    }


def test_the_fake_endpoint_lists_its_page(session: Session, fake: FakeBrowser) -> None:
    listing = result_of(session, "list_browser_targets", {"cdp_endpoint": fake.endpoint})
    assert [t["target_id"] for t in listing["targets"]] == [PAGE]
    assert listing["browser"]["product"] == "FakeChrome/1.0"


@pytest.mark.parametrize("fake", [{"garbage_on": "Runtime.enable"}], indirect=True)
def test_a_frame_that_is_not_json_is_unreadable_output(session: Session, fake: FakeBrowser) -> None:
    err = _error(session, "inspect_web_page", {"cdp_endpoint": fake.endpoint, "target_id": PAGE})
    assert err.code == "unreadable_output" and err.details["reason"] == "protocol_violation"
    assert "JSON" in err.message and "Traceback" not in err.message


@pytest.mark.parametrize(
    "fake", [{"error_on": {"Page.captureScreenshot": "Unable to capture screenshot"}, "garbage_on": ""}], indirect=True
)
def test_a_refused_command_is_typed_with_the_browsers_reason(session: Session, fake: FakeBrowser) -> None:
    err = _error(session, "capture_web_screenshot", {"cdp_endpoint": fake.endpoint, "target_id": PAGE})
    assert err.code == "execution_failure"
    assert err.details == {
        "method": "Page.captureScreenshot",
        "cdp_code": -32000,
        "cdp_message": "Unable to capture screenshot",
    }


@pytest.mark.parametrize(
    "fake", [{"error_on": {"Target.attachToTarget": "No target with given id found"}}], indirect=True
)
def test_a_target_that_cannot_be_attached_is_target_unavailable(session: Session, fake: FakeBrowser) -> None:
    err = _error(session, "discover_webmcp_tools", {"cdp_endpoint": fake.endpoint, "target_id": PAGE})
    assert err.code == "target_unavailable" and err.details["reason"] == "attach_failed"


@pytest.mark.parametrize("fake", [{"error_on": {"WebMCP.enable": "'WebMCP.enable' wasn't found"}}], indirect=True)
def test_a_browser_without_webmcp_reports_it_unavailable(session: Session, fake: FakeBrowser) -> None:
    found = result_of(session, "discover_webmcp_tools", {"cdp_endpoint": fake.endpoint, "target_id": PAGE})
    assert found["status"] == "unavailable" and found["tools"]["items"] == []
    assert found["completeness"]["missing_sections"] == ["tools"]


@pytest.mark.parametrize("fake", [{"close_on": "DOM.querySelector"}], indirect=True)
def test_a_browser_that_dies_mid_capture_keeps_the_partial_observation(session: Session, fake: FakeBrowser) -> None:
    err = _error(session, "capture_browser_scenario", _scenario(fake))
    assert err.code == "provider_unavailable" and err.details["reason"] == "disconnected"
    assert err.details["cleanup"] == "complete" and err.details["resources"] == []  # connect mode: nothing owned
    partial = err.details["partial_observation"]
    statuses = [(s["step_id"], s["status"]) for s in partial["steps"]]
    assert statuses == [("scenario_start", "completed"), ("open", "failed"), ("settle", "skipped")]
    start = partial["steps"][0]
    assert start["artifacts"]["dom"]["value"]["text"] == "<html><body>fake</body></html>"
    assert [e["text"] for e in partial["events"]["items"]] == ["fake page loaded"]
    assert partial["completeness"]["status"] == "incomplete" and "action" in partial["completeness"]["missing_sections"]
    assert len(session.ledger) == 0  # a failed capture records no Evidence


@pytest.mark.parametrize("fake", [{"hang_on": "DOM.querySelector"}], indirect=True)
def test_cancellation_mid_scenario_is_cancelled_with_what_was_seen(session: Session, fake: FakeBrowser) -> None:
    ctx = CallContext()
    timer = threading.Timer(0.5, ctx.signal.cancel)
    timer.start()
    try:
        err = _error(session, "capture_browser_scenario", _scenario(fake), ctx)
    finally:
        timer.cancel()
    assert err.code == "cancelled"
    steps = err.details["partial_observation"]["steps"]
    assert [s["status"] for s in steps] == ["completed", "cancelled", "skipped"]
    assert len(session.ledger) == 0


@pytest.mark.parametrize("fake", [{"hang_on": "Runtime.enable"}], indirect=True)
def test_cancelling_a_passive_inspection_stops_waiting(session: Session, fake: FakeBrowser) -> None:
    ctx = CallContext()
    timer = threading.Timer(0.3, ctx.signal.cancel)
    timer.start()
    try:
        err = _error(session, "inspect_web_page", {"cdp_endpoint": fake.endpoint, "target_id": PAGE}, ctx)
    finally:
        timer.cancel()
    assert err.code == "cancelled" and err.details["phase"] == "Runtime.enable"


def test_non_loopback_endpoints_are_refused_canonically(session: Session) -> None:
    for endpoint in (
        "http://10.1.2.3:9222",
        "http://localhost:9222",
        "https://127.0.0.1:9222",
        "http://127.0.0.1",
        "ws://127.0.0.1:9222/devtools/browser/x",
        "http://user@127.0.0.1:9222",
    ):
        err = _error(session, "list_browser_targets", {"cdp_endpoint": endpoint})
        assert err.code == "invalid_request", endpoint
        assert err.details["issues"][0]["path"] == "cdp_endpoint"
    err = _error(
        session,
        "capture_browser_scenario",
        {
            "browser": {"mode": "connect", "cdp_endpoint": "http://192.168.0.1:9222", "target_id": "x"},
            "start_url": {"url": "http://127.0.0.1:9/"},
            "actions": [{"step_id": "w", "action": "wait_for_timeout", "duration_ms": 1}],
        },
    )
    assert err.code == "invalid_request" and err.details["issues"][0]["path"].startswith("browser")


def test_an_endpoint_nobody_answers_is_provider_unavailable(session: Session) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = _error(session, "list_browser_targets", {"cdp_endpoint": f"http://127.0.0.1:{port}"})
    assert err.code == "provider_unavailable" and err.details["reason"] == "unreachable"
