"""The Electron tools on a "fake Electron" (Electron cannot be installed here: its npm package downloads a binary):
the app's renderer is a file:// page in a headless Chromium rea launches, its main process Node under --inspect.
list_electron_targets and inspect_electron_page read the renderer; the runtime tools observe both processes and
reconcile them with the app's static graph."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.browser import OwnedBrowser
from tests import toolchains
from tests.runtime.nodeapp import Inspected
from tests.waiting import wait_for

PACKAGE = '{"name": "fake-electron", "version": "1.0.0", "main": "main.js"}\n'
MAIN = """\
const ipc = require('./lib/ipc.js');
console.log('main ready', ipc.channel);
setInterval(() => {}, 1000);
"""
IPC = "exports.channel = 'search';\n"
INDEX = """<!doctype html>
<html><head><title>Fake Electron</title></head>
<body><input id="q"><script src="util.js"></script><script src="renderer.js"></script></body></html>
"""
UTIL = "window.trimmed = (s) => s.trim();\n"
RENDERER = """\
document.getElementById('q').addEventListener('input', (e) => console.log(trimmed(e.target.value)));
console.log('renderer ready');
"""
FILES = {
    "package.json": PACKAGE,
    "main.js": MAIN,
    "lib/ipc.js": IPC,
    "renderer/index.html": INDEX,
    "renderer/util.js": UTIL,
    "renderer/renderer.js": RENDERER,
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fake-electron").resolve()
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture(scope="module")
def site() -> None:
    """No web site here: the renderer is a file:// page."""


@pytest.fixture(scope="module")
def browser(app: Path) -> Iterator[OwnedBrowser]:
    toolchains.require("chromium")
    owned = OwnedBrowser.launch(
        window=(800, 600), start_url=(app / "renderer" / "index.html").as_uri(), readable=(str(app),)
    )

    def loaded() -> bool:
        with cdp.opened(owned.endpoint) as conn:
            return any(t.get("title") == "Fake Electron" for t in conn.call("Target.getTargets")["targetInfos"])

    wait_for(loaded, "the renderer page loaded", timeout_s=60)
    yield owned
    assert owned.close().remaining == ()


@pytest.fixture
def main_process(app: Path) -> Iterator[Inspected]:
    program = Inspected(toolchains.require("node"), app / "main.js")
    yield program
    program.close()


def _renderer(session: Session, browser: OwnedBrowser, app: Path) -> dict[str, Any]:
    listing = result_of(
        session, "list_electron_targets", {"cdp_endpoint": browser.endpoint, "allowed_file_roots": [str(app)]}
    )
    assert listing["page"]["total"] == 1
    target: dict[str, Any] = listing["targets"][0]
    return target


def test_renderers_are_listed_within_the_file_roots(
    session: Session, browser: OwnedBrowser, app: Path, tmp_path: Path
) -> None:
    target = _renderer(session, browser, app)
    assert target["file_path"] == str(app / "renderer" / "index.html") and target["title"] == "Fake Electron"
    elsewhere = result_of(
        session, "list_electron_targets", {"cdp_endpoint": browser.endpoint, "allowed_file_roots": [str(tmp_path)]}
    )
    assert elsewhere["targets"] == [] and elsewhere["excluded"]["outside_file_roots"] == 1
    with pytest.raises(ReaError) as err:
        call_tool(
            session,
            "inspect_electron_page",
            {"cdp_endpoint": browser.endpoint, "target_id": target["target_id"], "allowed_file_roots": [str(tmp_path)]},
        )
    assert err.value.code == "target_unavailable" and err.value.details["reason"] == "not_allowed"


def test_a_renderer_is_inspected_passively(session: Session, browser: OwnedBrowser, app: Path) -> None:
    target = _renderer(session, browser, app)
    page = result_of(
        session,
        "inspect_electron_page",
        {"cdp_endpoint": browser.endpoint, "target_id": target["target_id"], "allowed_file_roots": [str(app)]},
    )
    scripts = {Path(s["file_path"]).name: s for s in page["scripts"]}
    assert set(scripts) == {"util.js", "renderer.js"}
    for name in scripts:
        expected = hashlib.sha256((app / "renderer" / name).read_bytes()).hexdigest()
        assert scripts[name]["sha256"] == expected
    assert any(c["aux_type"] == "default" for c in page["execution_contexts"])
    assert "renderer ready" in [e["text"] for e in page["console"]]
    assert page["dom"]["total_nodes"] > 5 and page["dom"]["html_sha256"]


def test_main_and_renderer_reconcile_with_the_static_graph(
    session: Session, browser: OwnedBrowser, app: Path, main_process: Inspected
) -> None:
    observed = []
    for endpoint, kind in ((main_process.endpoint, "electron-main"), (browser.endpoint, "electron-renderer")):
        targets = result_of(
            session,
            "list_javascript_runtime_targets",
            {"inspector_endpoint": endpoint, "allowed_file_roots": [str(app)]},
        )["targets"]
        assert len(targets) == 1, (kind, targets)
        out = call_tool(
            session,
            "observe_javascript_runtime",
            {
                "inspector_endpoint": endpoint,
                "target_id": targets[0]["target_id"],
                "runtime_kind": kind,
                "allowed_file_roots": [str(app)],
                "observation_ms": 500,
            },
        )
        assert out.evidence is not None and out.evidence.normalized_result["limitations"] == []
        observed.append({"kind": "retained-evidence", "evidence_id": out.evidence.evidence_id})
    rec = result_of(
        session,
        "reconcile_javascript_runtime",
        {"runtime_observations": observed, "static_layers": [{"input_path": str(app)}]},
    )
    known = {(k["runtime_kind"], k["module_path"]) for k in rec["loaded_and_known"]}
    assert known == {
        ("electron-main", "main.js"),
        ("electron-main", "lib/ipc.js"),
        ("electron-renderer", "renderer/util.js"),
        ("electron-renderer", "renderer/renderer.js"),
    }
    assert rec["loaded_but_unknown"] == [] and rec["known_but_never_loaded"] == []


# A stand-in for the Electron executable, taking the arguments rea gives Electron: it starts the app's main script
# under Node with the --inspect it was given, and the renderer as a headless Chromium on the DevTools port and
# profile it was given, showing the page the app's package.json names (a real main process would loadFile it).
FAKE_ELECTRON = """#!/usr/bin/node
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const opt = (name) => (args.find((a) => a.startsWith(name + '=')) || '').slice(name.length + 1);
const app = args.filter((a) => !a.startsWith('--')).pop();
const pkg = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8'));
const io = { stdio: ['ignore', 'inherit', 'inherit'] };
const main = spawn('/usr/bin/node', ['--inspect=' + opt('--inspect'), path.join(app, pkg.main)], io);
const renderer = spawn(CHROMIUM, [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage',
  '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=' + opt('--remote-debugging-port'),
  '--user-data-dir=' + opt('--user-data-dir'), 'file://' + path.join(app, pkg.window),
], io);
const end = () => { main.kill('SIGKILL'); renderer.kill('SIGKILL'); process.exit(0); };
process.on('SIGTERM', end);
process.on('SIGINT', end);
main.on('exit', end);
"""


@pytest.fixture(scope="module")
def fake_electron(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rea_plugins.cdp.browser import find_chromium

    chromium, why = find_chromium()
    if chromium is None:
        toolchains.unavailable(f"no Chromium for the fake Electron: {why}")
    toolchains.require("node")
    path = tmp_path_factory.mktemp("fake-electron-bin") / "electron"
    path.write_text(FAKE_ELECTRON.replace("CHROMIUM", json.dumps(os.path.realpath(chromium))))
    path.chmod(0o755)
    return path


def test_a_scenario_drives_the_renderer_and_captures_both_processes(
    session: Session, app: Path, fake_electron: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "app"
    shutil.copytree(app, copy)
    package = json.loads((copy / "package.json").read_text())
    (copy / "package.json").write_text(json.dumps({**package, "window": "renderer/index.html"}))
    out = call_tool(
        session,
        "capture_electron_scenario",
        {
            "schema_version": 1,
            "executable_path": str(fake_electron),
            "application_root": str(copy),
            "application_path": str(copy),
            "actions": [
                {
                    "step_id": "type",
                    "action": "fill",
                    "locator": {"kind": "css", "selector": "#q"},
                    "value": {"source": "literal", "value": "  hello  "},
                }
            ],
        },
    )
    assert out.evidence is not None
    capture = out.evidence.normalized_result
    assert [s["status"] for s in capture["steps"]] == ["completed"], capture["steps"]
    assert capture["cleanup"] == "terminated-owned-process" and capture["limitations"] == []
    renderer = capture["renderer"]
    assert {Path(s["file_path"]).name for s in renderer["scripts"]} == {"util.js", "renderer.js"}
    # The renderer's input listener ran on the typed text (trimmed by util.js).
    assert "hello" in [e["text"] for e in renderer["console"]]
    main = capture["main"]
    assert main["application_scripts"] == 2 and main["console"] >= 1
    assert out.evidence.evidence_links == [main["evidence_id"]]
    observed = session.resolve_evidence({"kind": "retained-evidence", "evidence_id": main["evidence_id"]})
    assert "main ready search" in [c["text"] for c in observed.normalized_result["console"]]
    assert capture["isolation"]["sandbox"] in ("bubblewrap", "none")
    # The run's ownership snapshots are the session's: started, with the app's processes while driven, closed.
    lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]
    assert [o["event"] for o in lineage["snapshots"]] == ["started", "snapshot", "closed"], lineage
    assert lineage["snapshots"][1]["status"] == "verified" and lineage["snapshots"][1]["descendants"], lineage
