"""Entry points of a real package (issue 23 item 10): mocha's package.json ``bin`` commands are entry points,
and its ``options.loadFile`` (a library option, no Electron anywhere) is no renderer page."""

from __future__ import annotations

import json

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.javascript.test_js_parse_recovery import npm_package

MOCHA = ("mocha@10.7.3", "mocha-10.7.3.tgz", "6ae75159720a11d18883f87f1400e7e3e923a6b5437f5c75131790378d3e9338")


def test_bin_commands_are_entry_points_and_a_library_option_is_no_renderer(rea_registry: Registry) -> None:
    root = npm_package(*MOCHA)
    manifest = json.loads((root / "package.json").read_text())
    assert "electron" not in {**manifest.get("dependencies", {}), **manifest.get("devDependencies", {})}
    session = Session(rea_registry)
    try:
        result = result_of(session, "analyze_javascript_application", {"input_path": str(root)})
    finally:
        session.close()
    entries = result["entry_points"] if "entry_points" in result else result["application"]["entry_points"]
    bins = {e["detail"].split("'")[1]: e["path"] for e in entries if e["kind"] == "package-bin"}
    assert bins == {command: script.removeprefix("./") for command, script in manifest["bin"].items()}
    # bin/_mocha has no extension: its "#!/usr/bin/env node" line makes it a JavaScript module all the same.
    assert (root / "bin" / "_mocha").read_bytes().startswith(b"#!/usr/bin/env node")
    assert all(e["node_id"] for e in entries if e["kind"] == "package-bin"), entries
    assert [
        e for e in entries if e["kind"] in ("renderer-html", "electron-renderer", "electron-main", "electron-preload")
    ] == []
