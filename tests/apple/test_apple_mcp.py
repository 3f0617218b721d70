"""Every Apple tool through the MCP SDK client (one ``rea serve``), answers checked against the fixture sources."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from tests.apple import applefixtures as fx
from tests.mcp.harness import call_structured
from tests.mcp.harness import connect
from tests.mcp.harness import error_of

TOOLS = (
    "inspect_macho",
    "list_architectures",
    "inspect_plist",
    "inspect_keyed_archive",
    "inspect_signature",
    "get_objc_classes",
    "get_objc_protocols",
    "inspect_native_dispatch_metadata",
    "trace_dylib_resolution",
    "decode_interface_builder",
    "trace_native_ui_action",
    "demangle_swift",
    "analyze_swift_types",
    "project_apple_application_graph",
)


def test_every_apple_tool_through_the_mcp_client(built: fx.Built) -> None:
    app = str(built.app)
    calls: dict[str, dict[str, Any]] = {
        "inspect_macho": {"path": app},
        "list_architectures": {"path": str(built.fat)},
        "inspect_plist": {"path": app},
        "inspect_keyed_archive": {"path": str(built.keyed_archive)},
        "inspect_signature": {"path": str(built.tampered)},
        "get_objc_classes": {"path": app},
        "get_objc_protocols": {"path": app},
        "inspect_native_dispatch_metadata": {"path": app, "pattern": "Widget"},
        "trace_dylib_resolution": {"path": app},
        "decode_interface_builder": {"path": str(built.storyboard)},
        "trace_native_ui_action": {"path": str(built.xib)},
        "demangle_swift": {"symbols": [fx.SWIFT_NORM]},
        "analyze_swift_types": {"path": str(built.swift)},
        "project_apple_application_graph": {"path": str(built.ipa)},
    }

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with connect() as client:
            before = {t.name for t in (await client.list_tools()).tools}
            assert not set(TOOLS) & before  # on demand: not in the default list
            await client.call_tool("enable_toolsets", {"toolsets": ["apple"]})
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(TOOLS) <= set(listed)
            for name in TOOLS:
                annotations = listed[name].annotations
                assert annotations is not None and annotations.read_only_hint is True
                assert listed[name].output_schema is not None
            for name, args in calls.items():
                out[name] = await call_structured(client, name, args)
            # Off macOS the asset catalog is a typed unavailability; it starts assetutil on a Mac: not read-only.
            car = await client.call_tool("inspect_asset_catalog", {"path": str(built.xml_plist)})
            assert listed["inspect_asset_catalog"].annotations.read_only_hint is False  # type: ignore[union-attr]
            out["car"] = json.loads(car.content[0].text)["error"] if car.is_error else None  # type: ignore[union-attr]
            out["error"] = error_of(await client.call_tool("inspect_macho", {"path": str(built.keyed_archive)}))
        return out

    out = anyio.run(main)
    for name in TOOLS:
        assert out[name]["operation"] == name and out[name]["evidence_id"].startswith("ev_")
    res = {name: out[name]["normalized_result"] for name in TOOLS}
    assert res["inspect_macho"]["slices"][0]["rpaths"] == ["@executable_path/Frameworks"]
    assert [s["cpu_type"] for s in res["list_architectures"]["slices"]] == ["x86_64", "arm64"]
    assert res["inspect_plist"]["value"]["CFBundleIdentifier"] == "com.example.demo"
    assert res["inspect_keyed_archive"]["decoded"]["title"] == "Demo"
    assert res["inspect_signature"]["status"] == "mismatch"
    assert {c["name"]: c["superclass"] for c in res["get_objc_classes"]["classes"]} == fx.CLASSES
    assert res["get_objc_protocols"]["protocols"][0]["name"] == "Greeter"
    (widget,) = res["inspect_native_dispatch_metadata"]["classes"]
    assert {m["name"] for m in widget["methods"]} == fx.WIDGET_METHODS
    kit = next(r for r in res["trace_dylib_resolution"]["resolutions"] if r["library"].startswith("@rpath/"))
    assert kit["status"] == "bundle" and kit["resolved"] == "Frameworks/Kit.framework/Kit"
    assert res["decode_interface_builder"]["counts"]["action"] == 2
    tap = next(a for a in res["trace_native_ui_action"]["actions"] if a["status"] == "resolved")
    assert tap["procedure"] == "-[Widget buttonTapped:]"
    assert res["demangle_swift"]["symbols"][0]["demangled"] == "Demo.Point.norm() -> Swift.Int"
    assert {t["name"] for t in res["analyze_swift_types"]["types"]} == {"Demo.Point", "Demo.Shape", "Demo.Direction"}
    assert res["project_apple_application_graph"]["counts"]["framework"] == 1
    if sys.platform != "darwin":
        assert out["car"]["code"] == "capability_unavailable" and out["car"]["remediation"]["action"]
    assert out["error"]["code"] == "unsupported_target" and out["error"]["remediation"]["action"]
