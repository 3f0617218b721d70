"""capture_web_screenshot through a real MCP client (issue 23 item 12): the PNG comes as MCP image content a host
can show, besides the Evidence, and it is the very artifact the Evidence names."""

from __future__ import annotations

import base64
import hashlib

import anyio

from rea_plugins.cdp.browser import OwnedBrowser
from tests.mcp.harness import connect


def test_the_screenshot_is_image_content_too(browser: OwnedBrowser, page: str) -> None:
    async def main() -> None:
        async with connect() as client:
            result = await client.call_tool(
                "capture_web_screenshot", {"cdp_endpoint": browser.endpoint, "target_id": page}
            )
            assert not result.is_error, result.content
            images = [c for c in result.content if c.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            data = base64.b64decode(images[0].data)
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
            artifact = result.structured_content["normalized_result"]["artifact"]
            assert hashlib.sha256(data).hexdigest() == artifact["sha256"] and len(data) == artifact["bytes"]

    anyio.run(main)
