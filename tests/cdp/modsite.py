"""A page with ES modules, event listeners and an esbuild bundle with its source map, served from 127.0.0.1.

The bundle is built in the test session from src/ (esbuild, installed by the JavaScript tests' npm fixture); the
expected facts the tests check are written here beside the sources.
"""

from __future__ import annotations

import http.server
import subprocess
import threading
from pathlib import Path
from typing import Any

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


class ModSite:
    """``root`` served on 127.0.0.1 (``/`` is index.html; /api/status answers JSON)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/api/status":
                    body, kind, status = b'{"ok": true}', "application/json", 200
                else:
                    file = (site.root / (path.lstrip("/") or "index.html")).resolve()
                    if site.root.resolve() in file.parents and file.is_file():
                        body, kind, status = file.read_bytes(), TYPES.get(file.suffix, "text/plain"), 200
                    else:
                        body, kind, status = b"not found", "text/plain", 404
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="modsite", daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
