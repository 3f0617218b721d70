"""The browser family's contract without a browser: effects, canonical input groups, the compact profile at the
MCP boundary, scenario request checks, settings, and the PNG decoder."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from typing import Any

import anyio
import pytest

from rea.catalog.document import build_catalog
from rea.config import COMPACT_INPUT_SCHEMA_BUDGET_BYTES
from rea.config import load_settings
from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.cdp import png
from rea_plugins.cdp.scenario_request import Redactor
from rea_plugins.cdp.scenario_request import parse
from rea_plugins.cdp.tools import COMPARE_WEB_CAPTURES
from rea_plugins.cdp.tools import _example_capture
from rea_plugins.projections.profiles import serialized_size
from tests.mcp.harness import connect

BROWSER_TOOLS = (
    "list_browser_targets",
    "inspect_web_page",
    "discover_webmcp_tools",
    "capture_web_screenshot",
    "capture_browser_scenario",
    "compare_web_captures",
    "compare_web_screenshots",
)


def test_effects_and_annotations_in_binary_session_and_the_catalog(session: Session, rea_registry: Registry) -> None:
    # Every page of the tool availability (100 tools a page).
    entries: dict[str, Any] = {}
    cursor: int | None = 0
    while cursor is not None:
        report = result_of(session, "binary_session", {"detail": "tools", "offset": cursor})
        entries.update((t["name"], t) for t in report["tool_availability"])
        cursor = report["tool_page"]["next_offset"]
    catalog = {t["name"]: t for t in build_catalog(rea_registry)["tools"]}
    for name in BROWSER_TOOLS:
        assert entries[name]["effects"] == catalog[name]["effects"], name
        assert entries[name]["annotations"] == catalog[name]["annotations"], name
    scenario = entries["capture_browser_scenario"]
    assert scenario["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert scenario["effects"]["executes_foreign_code"] and scenario["effects"]["launches_process"]
    for name in ("list_browser_targets", "inspect_web_page", "discover_webmcp_tools", "capture_web_screenshot"):
        assert entries[name]["annotations"]["destructiveHint"] is False
        assert entries[name]["annotations"]["openWorldHint"] is True
        assert not entries[name]["effects"]["executes_foreign_code"]
    for name in ("compare_web_captures", "compare_web_screenshots"):
        assert entries[name]["annotations"]["openWorldHint"] is False  # local data only
        assert entries[name]["annotations"]["destructiveHint"] is False
    driver = rea_registry.drivers["cdp-browser"]
    assert driver.descriptor.surface == "browser"
    assert rea_registry.owner[("scenario driver", "cdp-browser")] == "cdp"


def _capture(title: str = "1") -> dict[str, Any]:
    return _example_capture(title)


def test_compare_web_captures_takes_exactly_one_input_group(session: Session) -> None:
    cap = _capture()
    bad = [
        {"before_scenario": cap, "after": {"inspection": {}}},  # mixed families
        {"before_scenario": cap},  # incomplete pair
        {"before": {"inspection": {}}, "after": {"inspection": {}}},  # malformed passive captures
        {"before_scenario": cap, "after_scenario": {**cap, "steps": "none"}},  # malformed scenario capture
        {"before_scenario": cap, "after_scenario": {**cap, "extra": 1}},  # unknown field
    ]
    for args in bad:
        with pytest.raises(ReaError) as err:
            call_tool(session, "compare_web_captures", args)
        assert err.value.code == "invalid_request", args.keys()
    same = result_of(session, "compare_web_captures", {"before_scenario": cap, "after_scenario": _capture()})
    assert same["verdict"] == "no-difference-found" and same["equality_eligible"] is True
    broken = {**cap, "events": {"retained": 3, "dropped": 0, "items": []}}
    with pytest.raises(ReaError) as err:  # schema-valid, but its counts contradict themselves
        call_tool(session, "compare_web_captures", {"before_scenario": cap, "after_scenario": broken})
    assert err.value.details["issues"][0]["path"] == "after_scenario/events/retained"


def test_the_compact_profile_advertises_the_large_schemas_lean_and_the_server_still_validates() -> None:
    async def main() -> None:
        async with connect(REA_MCP_INPUT_SCHEMA_PROFILE="compact", REA_MCP_TOOLSETS="all") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for name in ("compare_web_captures", "capture_browser_scenario"):
                schema = listed[name].input_schema
                assert serialized_size(schema) <= COMPACT_INPUT_SCHEMA_BUDGET_BYTES
                assert "$defs" not in schema and "oneOf" not in schema
            assert set(listed["compare_web_captures"].input_schema["properties"]) == {
                "before",
                "after",
                "before_scenario",
                "after_scenario",
                "normalization",
            }
            assert listed["capture_browser_scenario"].input_schema["required"] == ["start_url", "actions"]
            mixed = await client.call_tool(
                "compare_web_captures", {"before": {"inspection": {}}, "after_scenario": _capture()}
            )
            assert mixed.is_error
            err = json.loads(mixed.content[0].text)["error"]
            assert err["code"] == "invalid_request" and err["details"]["issues"]
            bad_action = await client.call_tool(
                "capture_browser_scenario",
                {"start_url": {"url": "http://127.0.0.1:9/"}, "actions": [{"step_id": "x", "action": "hover"}]},
            )
            assert json.loads(bad_action.content[0].text)["error"]["code"] == "invalid_request"

    anyio.run(main)


def test_scenario_requests_are_checked_beyond_their_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {
        "start_url": {"url": "http://127.0.0.1:8000/"},
        "actions": [
            {"step_id": "go", "action": "goto", "destination": {"url": "https://evil.example/"}, "wait_until": "load"},
            {
                "step_id": "go",
                "action": "fill",
                "locator": {"kind": "css", "selector": "input"},
                "value": {"source": "secret", "secret_id": "undeclared"},
            },
        ],
        "secrets": [{"secret_id": "token", "environment_variable": "REA_TEST_UNSET_TOKEN"}],
        "request_replay": {
            "mode": "exact",
            "unmatched": "abort",
            "routes": [
                {
                    "route_id": "r",
                    "method": "GET",
                    "request": {"url": "http://127.0.0.1:8000/api"},
                    "response": {
                        "kind": "response",
                        "status": 200,
                        "headers": [{"name": "Content-Length", "value": {"source": "literal", "value": "3"}}],
                    },
                }
            ],
        },
        "storage": {"local_storage": [{"origin": "https://other.example", "entries": []}]},
    }
    monkeypatch.delenv("REA_TEST_UNSET_TOKEN", raising=False)
    with pytest.raises(ReaError) as err:
        parse(base)
    paths = {i["path"] for i in err.value.details["issues"]}
    assert paths == {
        "actions/0/destination/url",
        "actions/1/step_id",
        "secrets/0/environment_variable",
        "actions/1/value",
        "request_replay/routes/0/response/headers/0/name",
        "storage/local_storage/0/origin",
    }
    monkeypatch.setenv("REA_TEST_UNSET_TOKEN", "s3cr3t value")
    ok = parse(
        {
            "start_url": {
                "url": "http://127.0.0.1:8000/",
                "query": [{"name": "t", "value": {"source": "secret", "secret_id": "token"}}],
            },
            "actions": [{"step_id": "w", "action": "wait_for_timeout", "duration_ms": 1}],
            "secrets": [{"secret_id": "token", "environment_variable": "REA_TEST_UNSET_TOKEN"}],
        }
    )
    assert ok.start_url == "http://127.0.0.1:8000/?t=s3cr3t+value" and ok.allowed == ["http://127.0.0.1:8000"]
    redact = Redactor(ok.secrets)
    assert (
        redact(f"GET {ok.start_url} and s3cr3t%20value") == "GET http://127.0.0.1:8000/?t=[secret:token] and "
        "[secret:token]"
    )


def test_launch_settings_are_validated_and_a_missing_browser_is_typed(
    session: Session, rea_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ReaError) as err:
        load_settings({"REA_CHROMIUM_PATH": "chromium"}, declared=rea_registry.settings)
    assert err.value.code == "configuration_invalid"
    assert err.value.details["settings"][0]["setting"] == "REA_CHROMIUM_PATH"
    monkeypatch.setenv("REA_CHROMIUM_PATH", "/nonexistent/chromium")
    assert rea_registry.drivers["cdp-browser"].availability().status == "unavailable"
    with pytest.raises(ReaError) as err:
        call_tool(
            session,
            "capture_browser_scenario",
            {
                "start_url": {"url": "http://127.0.0.1:9/"},
                "actions": [{"step_id": "w", "action": "wait_for_timeout", "duration_ms": 1}],
            },
            CallContext(),
        )
    assert err.value.code == "provider_unavailable" and err.value.details["reason"] == "executable_missing"
    assert [s["status"] for s in err.value.details["partial_observation"]["steps"]] == ["skipped", "skipped"]


def _png(width: int, height: int, color: int, rows: list[bytes], filters: list[int], plte: bytes = b"") -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(bytes([f]) + r for f, r in zip(filters, rows, strict=True))
    out = png.SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0))
    if plte:
        out += chunk(b"PLTE", plte)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _filter(kind: int, row: bytes, prev: bytes, bpp: int) -> bytes:
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pred = {
            0: 0,
            1: a,
            2: b,
            3: (a + b) // 2,
            4: a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c,
        }[kind]
        out.append((x - pred) & 0xFF)
    return bytes(out)


def test_the_png_decoder_handles_every_filter_and_colour_type(session: Session) -> None:
    width, height = 5, 5
    pixels = [
        b"".join(bytes((x * 40 + y, y * 50, (x * y * 7) % 256, 255 - x)) for x in range(width)) for y in range(height)
    ]
    filters = [0, 1, 2, 3, 4]
    prev = bytes(width * 4)
    encoded = []
    for f, row in zip(filters, pixels, strict=True):
        encoded.append(_filter(f, row, prev, 4))
        prev = row
    data = _png(width, height, 6, encoded, filters)
    w, h, decoded = png.decode_rgba(data, 100)
    assert (w, h) == (width, height) and bytes(decoded) == b"".join(pixels)
    grey = _png(2, 1, 0, [b"\x10\x20"], [0])
    assert bytes(png.decode_rgba(grey, 10)[2]) == b"\x10\x10\x10\xff\x20\x20\x20\xff"
    palette = _png(2, 1, 3, [b"\x01\x00"], [0], plte=b"\x01\x02\x03\x04\x05\x06")
    assert bytes(png.decode_rgba(palette, 10)[2]) == b"\x04\x05\x06\xff\x01\x02\x03\xff"
    with pytest.raises(ReaError) as err:
        png.decode_rgba(data, 10)
    assert err.value.code == "resource_constraint"
    changed = bytearray(b"".join(pixels))
    changed[(2 * width + 3) * 4] ^= 0x80
    other = _png(
        width, height, 6, [bytes(changed[y * width * 4 : (y + 1) * width * 4]) for y in range(height)], [0] * height
    )

    def artifact(blob: bytes) -> dict[str, Any]:
        return {
            "sha256": hashlib.sha256(blob).hexdigest(),
            "bytes": len(blob),
            "media_type": "image/png",
            "data_base64": base64.b64encode(blob).decode(),
        }

    diff = result_of(session, "compare_web_screenshots", {"before": artifact(data), "after": artifact(other)})
    assert diff["changed_pixels"] == 1 and diff["changed_bounds"] == {"x": 3, "y": 2, "width": 1, "height": 1}
    assert diff["max_channel_delta"]["r"] == 0x80
    tolerant = result_of(
        session,
        "compare_web_screenshots",
        {"before": artifact(data), "after": artifact(other), "channel_threshold": 200},
    )
    assert tolerant["changed_pixels"] == 0


def test_the_advertised_example_is_a_complete_capture() -> None:
    example = COMPARE_WEB_CAPTURES.examples[0]
    assert example["before_scenario"]["steps"][0]["step_id"] == "scenario_start"
    assert '"normalized_result"' not in json.dumps(example)


def test_a_console_message_without_text_compares_beside_one_with_text() -> None:
    # Sorting (level, text) rows with text None beside text "x" used to raise TypeError mid-comparison.
    from rea_plugins.cdp.compare import _bag_diff
    from rea_plugins.cdp.compare import _set_diff

    diff = _bag_diff([("error", "x")], [("error", None), ("error", "x"), ("error", None)], ("level", "text"))
    assert diff.added == [{"level": "error", "text": None}, {"level": "error", "text": None}]
    assert (diff.added_count, diff.removed_count, diff.unchanged_count) == (2, 0, 1)
    sizes = _set_diff({("u", "script", 10)}, {("u", "script", None), ("u", "script", 10)}, ("url", "type", "size"))
    assert sizes.added == [{"url": "u", "type": "script", "size": None}]
