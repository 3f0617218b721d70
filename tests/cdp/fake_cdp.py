"""A fake Chrome DevTools endpoint on 127.0.0.1: /json/version over HTTP and a scripted WebSocket.

It answers the commands the cdp plugin sends with minimal well-formed results, and misbehaves on request:
``garbage_on`` (a non-JSON frame), ``error_on`` (a protocol error reply), ``close_on`` (the connection drops,
as when the browser dies) and ``hang_on`` (no reply at all), each keyed by CDP method.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from websockets.http11 import Request
from websockets.http11 import Response
from websockets.sync.server import ServerConnection
from websockets.sync.server import serve

PAGE = "PAGE-1"
SESSION = "SESSION-1"


class FakeBrowser:
    def __init__(
        self,
        *,
        garbage_on: str = "",
        error_on: dict[str, str] | None = None,
        close_on: str = "",
        hang_on: str = "",
        page_url: str = "http://127.0.0.1:9/app",
    ) -> None:
        self.garbage_on, self.close_on, self.hang_on = garbage_on, close_on, hang_on
        self.error_on = error_on or {}
        self.page_url = page_url
        self.methods: list[str] = []
        self.server = serve(self._handle, "127.0.0.1", 0, process_request=self._http, compression=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-cdp", daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path == "/json/version":
            body = {
                "Browser": "FakeChrome/1.0",
                "Protocol-Version": "1.3",
                "User-Agent": "fake",
                "V8-Version": "0",
                "WebKit-Version": "0",
                "webSocketDebuggerUrl": f"ws://127.0.0.1:{self.port}/devtools/browser/x",
            }
            return connection.respond(200, json.dumps(body))
        return None

    def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "Target.getTargets":
            return {
                "targetInfos": [
                    {"targetId": PAGE, "type": "page", "title": "Fake", "url": self.page_url, "attached": False}
                ]
            }
        if method == "Target.attachToTarget":
            return {"sessionId": SESSION}
        if method == "Page.navigate":
            return {"frameId": PAGE, "loaderId": "LOADER-1"}
        if method == "Page.getNavigationHistory":
            return {"currentIndex": 0, "entries": [{"url": self.page_url, "title": "Fake"}]}
        if method == "DOM.getDocument":
            return {"root": {"nodeId": 1, "backendNodeId": 1, "nodeType": 9, "nodeName": "#document", "children": []}}
        if method == "DOM.getOuterHTML":
            return {"outerHTML": "<html><body>fake</body></html>"}
        if method == "Page.getFrameTree" or method == "Page.getResourceTree":
            return {
                "frameTree": {"frame": {"id": PAGE, "url": self.page_url, "mimeType": "text/html"}, "resources": []}
            }
        return {}

    def _handle(self, ws: ServerConnection) -> None:
        for raw in ws:
            msg = json.loads(raw)
            method, ident = msg["method"], msg["id"]
            self.methods.append(method)
            session = {"sessionId": msg["sessionId"]} if "sessionId" in msg else {}
            if method == self.close_on:
                ws.socket.close()  # abrupt, no close frame: the browser died
                return
            if method == self.hang_on:
                continue
            if method == self.garbage_on:
                ws.send("this is not JSON {")
                continue
            if method in self.error_on:
                ws.send(
                    json.dumps({"id": ident, "error": {"code": -32000, "message": self.error_on[method]}, **session})
                )
                continue
            ws.send(json.dumps({"id": ident, "result": self._result(method, msg.get("params", {})), **session}))
            if method == "Page.navigate":
                for name in ("commit", "DOMContentLoaded", "load"):
                    ws.send(
                        json.dumps(
                            {
                                "method": "Page.lifecycleEvent",
                                "params": {"frameId": PAGE, "loaderId": "LOADER-1", "name": name},
                                **session,
                            }
                        )
                    )
                ws.send(
                    json.dumps(
                        {
                            "method": "Runtime.consoleAPICalled",
                            "params": {"type": "log", "args": [{"type": "string", "value": "fake page loaded"}]},
                            **session,
                        }
                    )
                )

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)
