"""A page with ES modules, event listeners and an esbuild bundle with its source map, served from 127.0.0.1.

The bundle is built in the test session from src/ (esbuild, installed by the JavaScript tests' npm fixture); the
expected facts the tests check are written here beside the sources.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cdp.site import LocalServer
from tests.cdp.site import QuietHandler
from tests.javascript import appfixtures

INDEX = """<!doctype html>
<html><head><title>Modules</title><script type="module" src="/main.mjs"></script></head>
<body><button id="go" class="primary big">Go</button><input id="q">
<script src="/dist/bundle.js"></script>
</body></html>
"""
MAIN = """import { greet } from './greet.mjs';
export { name } from './names.mjs';
document.getElementById('go').addEventListener('click', () => greet('go'), { once: true });
document.addEventListener('scroll', () => {}, { passive: true });
export const later = () => import('./lazy.mjs');
import('lodash').catch(() => {});
fetch('/api/status?token=s3cret&q=1&user=me:pw@x');
"""
GREET = """import { name } from './names.mjs';
export function greet(who) {
  console.log(name, who);
}
"""
NAMES = "export const name = 'rea';\n"
LAZY = "export const lazy = 1;\n"
KEYS = """export function onKey(event) {
  console.log('key', event.key);
}
"""
WIDGET = """import { onKey } from './keys.js';
document.getElementById('q').addEventListener('keydown', onKey);
"""
TYPES = {".html": "text/html", ".mjs": "text/javascript", ".js": "text/javascript", ".map": "application/json"}


def build(root: Path) -> Path:
    """Write the site under ``root`` and bundle src/ with esbuild (an IIFE with an external source map)."""
    files = {
        "index.html": INDEX,
        "main.mjs": MAIN,
        "greet.mjs": GREET,
        "names.mjs": NAMES,
        "lazy.mjs": LAZY,
        "src/keys.js": KEYS,
        "src/widget.js": WIDGET,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(
        [
            str(appfixtures.esbuild_tool("esbuild")),
            "src/widget.js",
            "--bundle",
            "--format=iife",
            "--sourcemap",
            "--outfile=dist/bundle.js",
            "--log-level=error",
        ],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return root


class ModSite(LocalServer):
    """``root`` served on 127.0.0.1 (``/`` is index.html; /api/status answers JSON)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/api/status":
                    self._send(200, "application/json", b'{"ok": true}')
                    return
                file = (site.root / (path.lstrip("/") or "index.html")).resolve()
                if site.root.resolve() in file.parents and file.is_file():
                    self._send(200, TYPES.get(file.suffix, "text/plain"), file.read_bytes())
                else:
                    self._send(404, "text/plain", b"not found")

        self._serve(Handler, "modsite")
