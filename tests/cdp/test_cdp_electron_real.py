"""capture_electron_scenario against a real Electron, when REA_ELECTRON_PATH names its executable.

Electron cannot be installed on these machines (its npm package downloads a binary at install), so CI runs the
same code against a fake Electron (test_cdp_electron.py); this suite is collected everywhere and skipped with the
reason unless an executable is given (it needs a display, or xvfb-run around the test run).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rea.session import Session
from rea.testing import call_tool

ELECTRON = os.environ.get("REA_ELECTRON_PATH")
pytestmark = pytest.mark.skipif(
    not ELECTRON or not os.access(ELECTRON, os.X_OK), reason="REA_ELECTRON_PATH is not set to an Electron executable"
)

MAIN = """\
const { app, BrowserWindow } = require('electron');
const path = require('path');
app.whenReady().then(() => {
  const win = new BrowserWindow({ show: false, webPreferences: { contextIsolation: true } });
  win.loadFile(path.join(__dirname, 'index.html'));
  console.log('electron main ready');
});
"""
INDEX = """<!doctype html><html><head><title>Real Electron</title></head>
<body><input id="q"><script src="renderer.js"></script></body></html>
"""
RENDERER = "document.getElementById('q').addEventListener('input', (e) => console.log('typed', e.target.value));\n"


@pytest.fixture(scope="module")
def site() -> None:
    """No web site here."""


def test_a_real_electron_app_is_driven_and_captured(session: Session, tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "rea-real-electron", "version": "1.0.0", "main": "main.js"}\n')
    (app / "main.js").write_text(MAIN)
    (app / "index.html").write_text(INDEX)
    (app / "renderer.js").write_text(RENDERER)
    assert ELECTRON is not None
    out = call_tool(
        session,
        "capture_electron_scenario",
        {
            "schema_version": 1,
            "executable_path": ELECTRON,
            "application_root": str(app),
            "application_path": str(app),
            "args": ["--no-sandbox", "--disable-gpu"],
            "actions": [
                {
                    "step_id": "type",
                    "action": "fill",
                    "locator": {"kind": "css", "selector": "#q"},
                    "value": {"source": "literal", "value": "hi"},
                }
            ],
        },
    )
    assert out.evidence is not None
    capture = out.evidence.normalized_result
    assert [s["status"] for s in capture["steps"]] == ["completed"]
    assert "typed hi" in [e["text"] for e in capture["renderer"]["console"]]
    assert capture["main"] is not None and capture["main"]["application_scripts"] >= 1
    assert capture["cleanup"] == "terminated-owned-process"
