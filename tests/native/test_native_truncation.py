"""A large target truncated while open (issue 24 item 4): the server never maps the target itself, so the next
call is ``artifact_changed`` and the server answers on; it once died of SIGBUS (signal 7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio

from tests.mcp.harness import connect


def test_a_large_target_truncated_while_open_is_artifact_changed_not_a_dead_server(tmp_path: Path) -> None:
    target = tmp_path / "large"
    shutil.copyfile("/bin/ls", target)
    with open(target, "r+b") as fh:  # past the size native maps rather than reads (256 MiB), sparse on disk
        fh.truncate(300 << 20)
    other = tmp_path / "other"
    shutil.copyfile("/bin/true", other)

    async def main() -> None:
        async with connect(REA_CACHE_MAX_BYTES="0") as client:
            opened = await client.call_tool("open_binary", {"path": str(target), "provider_id": "native"})
            assert not opened.is_error, opened.content
            listed = await client.call_tool("list_strings", {"limit": 5})
            assert not listed.is_error, listed.content
            with open(target, "r+b") as fh:
                fh.truncate(4096)
            changed = await client.call_tool("list_strings", {"limit": 5, "offset": 5})
            assert changed.is_error
            assert json.loads(changed.content[0].text)["error"]["code"] == "artifact_changed"
            # The same server answers the next call.
            reopened = await client.call_tool("open_binary", {"path": str(other), "provider_id": "native"})
            assert not reopened.is_error, reopened.content
            again = await client.call_tool("list_procedures", {"limit": 3})
            assert not again.is_error

    anyio.run(main)
