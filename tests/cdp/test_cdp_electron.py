"""The Electron tools on a "fake Electron" (Electron cannot be installed here: its npm package downloads a binary):
the app's renderer is a file:// page in a headless Chromium rea launches, its main process Node under --inspect.
list_electron_targets and inspect_electron_page read the renderer; the runtime tools observe both processes and
reconcile them with the app's static graph."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rea_plugins.cdp.browser import OwnedBrowser

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool, result_of
from tests import toolchains
from tests.runtime.nodeapp import Inspected

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
    yield owned
    assert owned.close().remaining == ()


@pytest.fixture
def session(rea_registry: Registry) -> Iterator[Session]:
    s = Session(rea_registry)
    yield s
    s.close()


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
