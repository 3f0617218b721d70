"""A small static site served from 127.0.0.1 in two versions: a script, a form, console output, fetches, an
image from another origin (localhost) and WebMCP tool registrations.

Chromium 156 has no navigator.modelContext; with --enable-features=WebMCP it exposes document.modelContext,
so the page registers through whichever exists (the same registerTool shape), and declares a second tool
with <form toolname>. discover_webmcp_tools reads both from the WebMCP DevTools domain.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from typing import Any

INDEX = """<!doctype html>
<html><head><title>Newsletter {version}</title><script src="/app.js"></script></head>
<body>
<h1 data-testid="heading">Newsletter</h1>
<form id="subscribe" toolname="subscribe" tooldescription="Subscribe an address to the newsletter">
  <label>Email <input name="email" type="email" required data-testid="email"></label>
  <button type="submit">Subscribe</button>
</form>
<p id="result" hidden></p>
<img alt="" src="http://localhost:{port}/pixel.png">
<script>console.log("inline ready", {version});</script>
</body></html>
"""

APP = """console.info("app {version} loaded");
localStorage.setItem("visits", "1");
sessionStorage.setItem("tab", "main");
const api = (path, init) => fetch(path, init).then((r) => r.json());
setInterval(() => api("/api/status").catch(() => {{}}), 100);
{extra}
const mc = document.modelContext || navigator.modelContext;
if (mc) {{
  mc.registerTool({{
    name: "search_issues",
    description: "Search newsletter issues by keyword",
    inputSchema: {{type: "object", properties: {{query: {{type: "string"}}, limit: {{type: "integer"}}}},
                  required: ["query"]}},
    annotations: {{readOnlyHint: true}},
    execute: async (input) => ({{content: [{{type: "text", text: "none"}}]}}),
  }});
}}
document.addEventListener("DOMContentLoaded", () => {{
  document.getElementById("subscribe").addEventListener("submit", async (event) => {{
    event.preventDefault();
    const email = new FormData(event.target).get("email");
    const reply = await api("/api/subscribe", {{method: "POST", body: JSON.stringify({{email}})}});
    console.log("subscribed", reply.id);
    const out = document.getElementById("result");
    out.textContent = "Subscribed " + email;
    out.hidden = false;
  }});
}});
"""

EXTRA = 'setInterval(() => api("/api/extra").catch(() => {}), 100);'


PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PzWvWQAAAABJRU5ErkJggg=="
)


def pages(version: int, port: int) -> dict[str, tuple[str, bytes]]:
    return {
        "/": ("text/html", INDEX.format(version=version, port=port).encode()),
        "/pixel.png": ("image/png", PIXEL),
        "/app.js": ("text/javascript", APP.format(version=version, extra=EXTRA if version >= 2 else "").encode()),
        "/api/status": ("application/json", json.dumps({"ok": True}).encode()),
        "/api/extra": ("application/json", json.dumps({"extra": True}).encode()),
    }


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing and sends whole, uncached answers."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


class LocalServer:
    """An HTTP server on 127.0.0.1, on a port of its own, answering on a daemon thread until ``close``."""

    def _serve(self, handler: type[http.server.BaseHTTPRequestHandler], name: str) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Site(LocalServer):
    """The site on 127.0.0.1; ``version`` switches what it serves; POST /api/subscribe records bodies."""

    def __init__(self) -> None:
        self.version = 1
        self.posts: list[Any] = []
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                page = pages(site.version, site.server.server_port).get(self.path.split("?", 1)[0])
                if page is None:
                    self._send(404, "text/plain", b"not found")
                else:
                    self._send(200, *page)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                site.posts.append(json.loads(self.rfile.read(length) or b"null"))
                self._send(200, "application/json", json.dumps({"id": len(site.posts)}).encode())

        self._serve(Handler, "site")
