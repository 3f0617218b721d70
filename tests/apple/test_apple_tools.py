"""The Apple tools on the fixtures built from source, answers checked against what the sources define."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of
from tests.apple import applefixtures as fx


def test_list_architectures_of_a_fat_binary(rea_session: Session, built: fx.Built) -> None:
    out = result_of(rea_session, "list_architectures", {"path": str(built.fat)})
    assert out["universal"] is True
    assert [s["cpu_type"] for s in out["slices"]] == ["x86_64", "arm64"]
    size = built.fat.stat().st_size
    for s in out["slices"]:
        assert s["offset"] % (1 << s["align"]) == 0 and s["offset"] + s["size"] <= size
    thin = result_of(rea_session, "list_architectures", {"path": str(built.ios)})
    assert thin == {
        "universal": False,
        "slices": [{"index": 0, "cpu_type": "arm64", "cpu_subtype": 0, "offset": 0, "size": built.ios.stat().st_size}],
    }


def test_inspect_macho_reads_the_bundle_executable(rea_session: Session, built: fx.Built) -> None:
    out = result_of(rea_session, "inspect_macho", {"path": str(built.app)})
    (s,) = out["slices"]
    assert s["cpu_type"] == "arm64" and s["file_type"] == "execute"
    assert s["platform"] == {"platform": "ios", "min_os": "14.0.0", "sdk": "14.0.0"}
    assert s["rpaths"] == ["@executable_path/Frameworks"]
    assert s["encryption"] == {
        "crypt_id": 0,
        "crypt_offset": s["encryption"]["crypt_offset"],
        "crypt_size": s["encryption"]["crypt_size"],
        "encrypted": False,
    }
    assert len(s["uuid"]) == 32
    libs = {lib["name"]: lib for lib in s["libraries"]}
    assert list(libs) == ["/usr/lib/libSystem.B.dylib", "/usr/lib/libobjc.A.dylib", "@rpath/Kit.framework/Kit"]
    # Two-level namespace: each import names the dylib its ordinal points to.
    imports = {i["name"]: i["library"] for i in s["imports"]}
    assert imports["_puts"] == "/usr/lib/libSystem.B.dylib"
    assert imports["_objc_msgSend"] == "/usr/lib/libobjc.A.dylib"
    assert imports["_kit_version"] == "@rpath/Kit.framework/Kit"
    assert libs["@rpath/Kit.framework/Kit"]["imports"] == 1
    exports = {e["name"] for e in s["exports"]}
    assert {"_main", "_OBJC_CLASS_$_Widget", "_OBJC_CLASS_$_RootObject"} <= exports
    names = {(x["segment"], x["name"]) for x in s["sections"]}
    assert ("__DATA_CONST", "__objc_classlist") in names or ("__DATA", "__objc_classlist") in names
    commands = [c["command"] for c in s["load_commands"]]
    assert "encryption_info_64" in commands and "rpath" in commands and "build_version" in commands


def test_inspect_macho_pages_and_picks_a_slice(rea_session: Session, built: fx.Built) -> None:
    out = result_of(
        rea_session, "inspect_macho", {"path": str(built.fat), "architecture": "x86_64", "commands_limit": 3}
    )
    (s,) = out["slices"]
    assert s["cpu_type"] == "x86_64" and s["platform"]["platform"] == "macos"
    assert len(s["load_commands"]) == 3 and s["load_commands_page"]["next_offset"] == 3
    assert s["load_commands_page"]["total"] > 3
    assert out["architectures"] == ["x86_64", "arm64"]
    kit = result_of(rea_session, "inspect_macho", {"path": str(built.app / "Frameworks" / "Kit.framework")})
    assert kit["slices"][0]["install_name"] == "@rpath/Kit.framework/Kit"
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_macho", {"path": str(built.fat), "architecture": "ppc"})
    assert err.value.code == "invalid_request"


def test_inspect_plist_binary_info_and_xml(rea_session: Session, built: fx.Built) -> None:
    info = result_of(rea_session, "inspect_plist", {"path": str(built.app)})
    assert info["source"] == "Info.plist" and info["format"] == "binary"
    assert info["value"]["CFBundleIdentifier"] == "com.example.demo"
    assert info["value"]["NSAppTransportSecurity"] == {"NSAllowsArbitraryLoads": True}
    xml = result_of(rea_session, "inspect_plist", {"path": str(built.app), "relative_path": "Settings.plist"})
    assert xml["format"] == "xml"
    assert xml["value"]["Blob"] == {"$data": "AAEC", "size": 3}
    assert xml["value"]["When"] == {"$date": "2024-01-02T03:04:05"}
    cut = result_of(rea_session, "inspect_plist", {"path": str(built.app), "max_items": 2})
    assert len(cut["value"]) == 2 and cut["truncated"] == ["$"]
    # The open binary's bundle by default.
    result_of(rea_session, "open_binary", {"path": str(built.app / "Demo")})
    assert result_of(rea_session, "inspect_plist", {})["value"]["CFBundleExecutable"] == "Demo"
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_plist", {"path": str(built.app), "relative_path": "../x.plist"})
    assert err.value.code == "invalid_request"
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_plist", {"path": str(built.ios)})
    assert err.value.code == "unsupported_target"


def test_inspect_keyed_archive(rea_session: Session, built: fx.Built, tmp_path: Path) -> None:
    out = result_of(rea_session, "inspect_keyed_archive", {"path": str(built.keyed_archive)})
    assert out["archiver"] == "NSKeyedArchiver" and out["version"] == 100000
    assert out["decoded"] == {"title": "Demo", "items": ["a", "b"], "count": 2}
    assert out["classes"]["NSDictionary"] == 1 and out["classes"]["NSArray"] == 1
    root = out["objects"][0]
    assert root["class_name"] == "NSDictionary" and root["classes"][0] == "NSDictionary"
    shallow = result_of(rea_session, "inspect_keyed_archive", {"path": str(built.keyed_archive), "max_depth": 1})
    assert shallow["max_depth_reached"] is True and len(shallow["objects"]) < len(out["objects"])
    loop = tmp_path / "loop.plist"
    loop.write_bytes(fx.recursive_archive())
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_keyed_archive", {"path": str(loop)})
    assert err.value.code == "unsupported_target" and err.value.details["reason"] == "recursive_archive"
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_keyed_archive", {"path": str(built.xml_plist)})
    assert err.value.code == "unsupported_target"


def _classes(session: Session, path: Path, **extra: Any) -> dict[str, Any]:
    return result_of(session, "get_objc_classes", {"path": str(path), **extra})  # type: ignore[no-any-return]


def test_objc_classes_and_protocols_on_every_build(rea_session: Session, built: fx.Built) -> None:
    for path in (built.ios, built.macos, built.stripped, built.signed):
        out = _classes(rea_session, path)
        assert {c["name"]: c["superclass"] for c in out["classes"]} == fx.CLASSES
        widget = next(c for c in out["classes"] if c["name"] == "Widget")
        assert widget["protocols"] == ["Greeter"] and widget["methods"] == 5 and widget["ivars"] == 2
    fat = _classes(rea_session, built.fat, architecture="x86_64")
    assert fat["cpu_type"] == "x86_64" and len(fat["classes"]) == 2
    only = _classes(rea_session, built.ios, pattern="widg")
    assert [c["name"] for c in only["classes"]] == ["Widget"] and only["page"]["total"] == 1
    protos = result_of(rea_session, "get_objc_protocols", {"path": str(built.ios)})
    assert protos["protocols"] == [
        {"name": "Greeter", "protocols": [], "required": ["greet:"], "optional": ["wave"], "class_methods": []}
    ]


def test_dispatch_metadata_matches_the_symbol_table(rea_session: Session, built: fx.Built) -> None:
    import lief

    out = result_of(rea_session, "inspect_native_dispatch_metadata", {"path": str(built.ios)})
    widget = next(c for c in out["classes"] if c["name"] == "Widget")
    assert {m["name"] for m in widget["methods"]} == fx.WIDGET_METHODS
    greet = next(m for m in widget["methods"] if m["selector"] == "greet:")
    assert greet["types"] == "i20@0:8i16" and greet["class_method"] is False
    assert [(i["name"], i["type"]) for i in widget["ivars"]] == [("_count", "i"), ("_title", "r*")]
    assert widget["properties"] == [{"name": "count", "attributes": "Ti,N,V_count"}]
    (cat,) = out["categories"]
    assert cat["class_name"] == "Widget" and [m["name"] for m in cat["methods"]] == [fx.CATEGORY_METHOD]
    assert "greet:" in out["selector_references"]
    # Every implementation address is where the unstripped symbol table puts that method.
    fat = lief.MachO.parse(str(built.ios))  # held: the slice's objects live as long as the parsed file
    symbols = {s.name: int(s.value) for s in fat.at(0).symbols if s.name.startswith(("-[", "+["))}
    for c in out["classes"]:
        for m in c["methods"]:
            assert symbols[m["name"]] == m["imp"], m["name"]
    assert symbols[fx.CATEGORY_METHOD] == cat["methods"][0]["imp"]


def test_signature_of_an_lld_adhoc_signature_and_a_tampered_page(rea_session: Session, built: fx.Built) -> None:
    out = result_of(rea_session, "inspect_signature", {"path": str(built.signed)})
    assert out["format"] == "mach-o" and out["status"] == "valid"
    (s,) = out["slices"]
    (cd,) = s["code_directories"]
    assert s["ad_hoc"] is True and "adhoc" in cd["flags"] and cd["hardened_runtime"] is False
    assert cd["identifier"] == "demo-signed" and cd["hash_type"] == "sha256"
    assert cd["page_hashes"]["status"] == "valid" and cd["page_hashes"]["pages"] >= 1
    bad = result_of(rea_session, "inspect_signature", {"path": str(built.tampered)})
    assert bad["status"] == "mismatch"
    pages = bad["slices"][0]["code_directories"][0]["page_hashes"]
    text = fx._text_offset(built.signed.read_bytes())
    assert pages["status"] == "mismatch" and pages["mismatched"] == [(text + 4) // pages["page_size"]]
    unsigned = result_of(rea_session, "inspect_signature", {"path": str(built.ios)})
    assert unsigned["status"] == "unsigned" and unsigned["slices"][0]["status"] == "unsigned"


def _signify_loads() -> None:
    """signify's backend, oscrypto 1.3.0 from PyPI, fails at import on OpenSSL 3.0.10+ (wbond/oscrypto#78)."""
    try:
        import signify.authenticode.signed_file.pe  # noqa: F401
    except Exception as exc:
        pytest.skip(f"signify cannot load here ({type(exc).__name__}); install oscrypto from its fixed source")


def test_authenticode_through_signify(rea_session: Session, signed_pe: tuple[Path, Path, Path]) -> None:
    _signify_loads()
    signed, tampered, unsigned = signed_pe
    out = result_of(rea_session, "inspect_signature", {"path": str(signed)})
    auth = out["authenticode"]
    assert out["format"] == "pe" and out["status"] == "valid" and auth["digest_algorithm"] == "sha256"
    assert [c["subject"] for c in auth["signers"]] == [f"CN={fx.SIGNER_CN}, O=rea"]
    assert auth["chain"][0]["sha256"] == auth["signers"][0]["sha256"]
    assert result_of(rea_session, "inspect_signature", {"path": str(tampered)})["status"] == "mismatch"
    assert result_of(rea_session, "inspect_signature", {"path": str(unsigned)})["status"] == "unsigned"


def test_dylib_resolution_in_the_bundle(rea_session: Session, built: fx.Built) -> None:
    out = result_of(rea_session, "trace_dylib_resolution", {"path": str(built.app)})
    assert out["executable"] == "Demo" and out["images"] == 3
    rows = {(r["image"], r["library"]): r for r in out["resolutions"]}
    kit = rows[("Demo", "@rpath/Kit.framework/Kit")]
    assert kit["status"] == "bundle" and kit["resolved"] == "Frameworks/Kit.framework/Kit"
    assert rows[("Demo", "/usr/lib/libobjc.A.dylib")]["status"] == "system"
    # The extension is its own @executable_path: its @executable_path/Frameworks is inside Share.appex, where
    # there is no Kit (a real extension says @executable_path/../../Frameworks).
    share = rows[("PlugIns/Share.appex/Share", "@rpath/Kit.framework/Kit")]
    assert share["status"] == "missing" and share["tried"] == ["PlugIns/Share.appex/Frameworks/Kit.framework/Kit"]
    assert out["counts"] == {"system": 5, "bundle": 1, "missing": 1}
    (built.app / "Frameworks" / "Kit.framework" / "Kit").rename(built.app / "Kit.moved")
    try:
        gone = result_of(rea_session, "trace_dylib_resolution", {"path": str(built.app)})
        row = next(
            r for r in gone["resolutions"] if r["library"] == "@rpath/Kit.framework/Kit" and r["image"] == "Demo"
        )
        assert row["status"] == "missing" and row["tried"] == ["Frameworks/Kit.framework/Kit"]
    finally:
        (built.app / "Kit.moved").rename(built.app / "Frameworks" / "Kit.framework" / "Kit")


def test_decode_a_xib_and_a_storyboard(rea_session: Session, built: fx.Built) -> None:
    xib = result_of(rea_session, "decode_interface_builder", {"path": str(built.xib)})
    assert xib["kind"] == "xib" and xib["runtime"] == "ios"
    objects = {o["id"]: o for o in xib["objects"]}
    assert objects["-1"]["class_name"] == "Widget" and objects["-1"]["placeholder"] == "IBFilesOwner"
    assert objects["Tap-Btn-001"]["class_name"] == "UIButton" and objects["Tap-Btn-001"]["label"] == "Tap me"
    tap = next(c for c in xib["connections"] if c["id"] == "act-tap-01")
    assert tap == {
        "kind": "action",
        "id": "act-tap-01",
        "source": "Tap-Btn-001",
        "source_class": "UIButton",
        "destination": "-1",
        "destination_class": "Widget",
        "selector": "buttonTapped:",
        "event": "touchUpInside",
    }
    assert xib["counts"] == {"objects": 5, "outlet": 1, "action": 2, "segue": 0}
    board = result_of(rea_session, "decode_interface_builder", {"path": str(built.storyboard), "max_objects": 2})
    assert board["kind"] == "storyboard" and len(board["objects"]) == 2 and board["objects_page"]["next_offset"] == 2
    assert board["counts"] == {"objects": 6, "outlet": 1, "action": 2, "segue": 1}
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "decode_interface_builder", {"path": str(built.keyed_archive)})
    assert err.value.code == "unsupported_target"


def test_trace_ui_actions_to_their_implementations(rea_session: Session, built: fx.Built) -> None:
    import lief

    fat = lief.MachO.parse(str(built.ios))
    symbols = {s.name: int(s.value) for s in fat.at(0).symbols}
    xib = result_of(rea_session, "trace_native_ui_action", {"path": str(built.xib)})
    assert xib["binary"] == "Demo" and xib["counts"]["resolved"] == 1 and xib["counts"]["first-responder"] == 1
    tap = next(a for a in xib["actions"] if a["selector"] == "buttonTapped:")
    assert (
        tap["procedure"] == "-[Widget buttonTapped:]" and int(tap["address"], 16) == symbols["-[Widget buttonTapped:]"]
    )
    assert tap["control_label"] == "Tap me" and tap["searched"] == ["Widget"]
    board = result_of(rea_session, "trace_native_ui_action", {"path": str(built.storyboard)})
    by_sel = {a["selector"]: a for a in board["actions"]}
    assert by_sel["greet:"]["procedure"] == "-[Widget greet:]"
    # wave is an optional protocol method Widget does not implement: searched up to the root class.
    assert by_sel["wave"]["status"] == "not-implemented" and by_sel["wave"]["searched"] == ["Widget", "RootObject"]
    only = result_of(rea_session, "trace_native_ui_action", {"path": str(built.storyboard), "control": "Greet"})
    assert [a["selector"] for a in only["actions"]] == ["greet:"]
    stripped = result_of(
        rea_session,
        "trace_native_ui_action",
        {"path": str(built.xib), "binary_path": str(built.stripped), "selector": "buttonTapped:"},
    )
    assert stripped["actions"][0]["address"] == tap["address"]


def test_swift_types_and_symbols(rea_session: Session, built: fx.Built) -> None:
    out = result_of(rea_session, "analyze_swift_types", {"path": str(built.swift)})
    types = {t["name"]: t for t in out["types"]}
    assert out["counts"] == {"struct": 1, "class": 1, "enum": 1}
    point, shape, direction = types["Demo.Point"], types["Demo.Shape"], types["Demo.Direction"]
    assert point["kind"] == "struct" and [(f["name"], f["type"]) for f in point["fields"]] == [
        ("x", "Swift.Int"),
        ("y", "Swift.Int"),
    ]
    assert shape["kind"] == "class" and shape["superclass"] == "Demo.Base"
    assert [(f["name"], f["type"]) for f in shape["fields"]] == [("name", "Swift.String"), ("origin", "Demo.Point")]
    assert direction["kind"] == "enum" and [f["name"] for f in direction["fields"]] == ["north", "south"]
    only = result_of(rea_session, "analyze_swift_types", {"path": str(built.swift), "pattern": "Shape"})
    assert [t["name"] for t in only["types"]] == ["Demo.Shape"]
    none = result_of(rea_session, "analyze_swift_types", {"path": str(built.ios)})
    assert none["types"] == [] and none["page"]["total"] == 0
    symbols = result_of(rea_session, "demangle_swift", {"symbols": [fx.SWIFT_NORM, "_main", "$sZZZ"]})
    assert [(s["status"], s.get("demangled")) for s in symbols["symbols"]] == [
        ("demangled", "Demo.Point.norm() -> Swift.Int"),
        ("not-swift", None),
        ("unrecognized", None),
    ]


def test_native_shows_swift_names_demangled(built: fx.Built) -> None:
    from rea import registry as registry_mod

    session = Session(registry_mod.load())
    try:
        result_of(session, "open_binary", {"path": str(built.swift), "provider_id": "native"})
        listed = result_of(session, "list_procedures", {})
        norm = next(p for p in listed["procedures"] if p.get("mangled_name") == "_" + fx.SWIFT_NORM)
        assert norm["name"] == "Demo.Point.norm() -> Swift.Int"
    finally:
        session.close()


def test_asset_catalog_is_unavailable_off_macos(rea_session: Session, built: fx.Built, tmp_path: Path) -> None:
    import sys

    if sys.platform == "darwin":
        pytest.skip("on macOS inspect_asset_catalog runs assetutil; this test covers the other hosts")
    car = tmp_path / "Assets.car"
    car.write_bytes(b"BOMStore" + bytes(64))
    with pytest.raises(ReaError) as err:
        result_of(rea_session, "inspect_asset_catalog", {"path": str(car)})
    assert err.value.code == "capability_unavailable" and "macOS" in err.value.message
    assert "xcode-select" in err.value.remediation


def test_application_graph_of_the_bundle_and_its_ipa(rea_session: Session, built: fx.Built) -> None:
    folder = result_of(rea_session, "project_apple_application_graph", {"path": str(built.app)})
    ipa = result_of(rea_session, "project_apple_application_graph", {"path": str(built.ipa)})
    assert folder["input_kind"] == "app" and ipa["input_kind"] == "ipa" and ipa["root"] == "Demo.app"
    for graph in (folder, ipa):
        nodes = {n["id"]: n for n in graph["nodes"]}
        assert set(nodes) == {"Demo.app", "Frameworks/Kit.framework", "PlugIns/Share.appex"}
        assert nodes["Demo.app"]["bundle_id"] == "com.example.demo" and nodes["Demo.app"]["architectures"] == ["arm64"]
        assert nodes["PlugIns/Share.appex"]["kind"] == "extension"
        assert nodes["Frameworks/Kit.framework"]["kind"] == "framework"
        edges = {(e["source"], e["target"], e["kind"]) for e in graph["edges"]}
        assert ("Demo.app", "Frameworks/Kit.framework", "loads") in edges
        assert ("Demo.app", "PlugIns/Share.appex", "embeds") in edges
        assert graph["system_libraries"]["/usr/lib/libobjc.A.dylib"] == 2  # Demo and Share
        assert graph["identity"]["CFBundleIdentifier"] == "com.example.demo"
        assert graph["resources"][".xib"] == 1 and graph["resources"][".storyboard"] == 1
    assert folder["nodes"] == ipa["nodes"] and folder["counts"] == ipa["counts"]


def test_a_long_demangle_batch_is_answered_in_parts(rea_session: Session) -> None:
    batch = [f"$s4Demo5PointV{len(f'member{n}')}member{n}SiyF" for n in range(1000)]
    first = result_of(rea_session, "demangle_swift", {"symbols": batch})
    assert first["total"] == 1000 and first["next_offset"] == len(first["symbols"]) < 1000
    seen = list(first["symbols"])
    while first.get("next_offset") is not None:
        first = result_of(rea_session, "demangle_swift", {"symbols": batch, "offset": first["next_offset"]})
        seen += first["symbols"]
    assert [s["symbol"] for s in seen] == batch
    assert seen[7]["demangled"] == "Demo.Point.member7() -> Swift.Int"


def _views(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if "views" in value:
            return value["views"]  # type: ignore[no-any-return]
        return next((v for v in map(_views, value.values()) if v), [])
    if isinstance(value, list):
        return next((v for v in map(_views, value) if v), [])
    return []


def test_inspect_artifact_points_to_the_apple_tools(rea_session: Session, built: fx.Built) -> None:
    expected = {
        built.ios: "apple-macho",
        built.fat: "apple-macho",
        built.xml_plist: "apple-plist",
        built.ipa: "apple-ipa",
    }
    for path, kind in expected.items():
        views = {v["kind"]: v for v in _views(result_of(rea_session, "inspect_artifact", {"path": str(path)}))}
        assert kind in views, (path.name, list(views))
        for tool in views[kind]["tools"]:
            assert tool in rea_session.registry.tools
    macho = {v["kind"]: v for v in _views(result_of(rea_session, "inspect_artifact", {"path": str(built.ios)}))}
    assert "get_objc_classes" in macho["apple-macho"]["tools"]


def test_entitlements_team_and_hardened_runtime_of_a_signature(
    rea_session: Session, built: fx.Built, tmp_path: Path
) -> None:
    path = fx.resign(built.signed, tmp_path / "demo-entitled")
    out = result_of(rea_session, "inspect_signature", {"path": str(path)})
    (s,) = out["slices"]
    assert out["status"] == "valid" and "ad_hoc" not in s  # false: left out
    assert s["entitlements"] == fx.ENTITLEMENTS and s["der_entitlements"] == fx.ENTITLEMENTS
    (cd,) = s["code_directories"]
    assert cd["team_id"] == fx.TEAM_ID and cd["hardened_runtime"] is True and cd["flags"] == ["runtime"]
    assert cd["page_hashes"]["special_slots"] == {
        "requirements": "valid",
        "entitlements": "valid",
        "der_entitlements": "valid",
    }
    assert s["blobs"] == ["code_directory", "requirements", "entitlements", "der_entitlements", "cms_signature"]
    # Entitlements swapped after signing: the special slot no longer matches.
    data = bytearray(path.read_bytes())
    at = data.find(b"network.client")
    data[at : at + 14] = b"network.server"
    swapped = tmp_path / "demo-swapped"
    swapped.write_bytes(bytes(data))
    bad = result_of(rea_session, "inspect_signature", {"path": str(swapped)})
    assert bad["status"] == "mismatch"
    assert bad["slices"][0]["code_directories"][0]["page_hashes"]["special_slots"]["entitlements"] == "mismatch"
    # The application graph shows the entitlement keys and the team.
    import plistlib

    app = tmp_path / "E.app"
    app.mkdir()
    info = plistlib.dumps({"CFBundleExecutable": "E", "CFBundleIdentifier": "x.e"})
    (app / "Info.plist").write_bytes(info)
    fx.resign(built.signed, app / "E", info_plist=info)
    (node,) = result_of(rea_session, "project_apple_application_graph", {"path": str(app)})["nodes"]
    assert node["team_id"] == fx.TEAM_ID and node["signature"] == "valid"
    assert node["entitlements"] == sorted(fx.ENTITLEMENTS)
    # Inside its bundle, the Info.plist slot is checked too; an edited Info.plist is a mismatch.
    slots = result_of(rea_session, "inspect_signature", {"path": str(app)})["slices"][0]["code_directories"][0]
    assert slots["page_hashes"]["special_slots"]["info_plist"] == "valid"
    (app / "Info.plist").write_bytes(info.replace(b"x.e", b"x.f"))
    edited = result_of(rea_session, "inspect_signature", {"path": str(app)})
    assert edited["status"] == "mismatch"
    assert edited["slices"][0]["code_directories"][0]["page_hashes"]["special_slots"]["info_plist"] == "mismatch"
