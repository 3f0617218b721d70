"""MCP logging: the server advertises the capability and sends a call's log records to that call's client
(notifications/message) at the level the client set; ``rea -v``/``--log-file`` write the same records."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp.harness import server_env


async def _session(received: list[types.LoggingMessageNotificationParams], *argv: str, **env: str) -> Any:
    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rea.cli.main", *argv, "serve"], env=server_env(**env)
    )
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write, logging_callback=on_log) as client,
        ):
            init = await client.initialize()
            assert init.capabilities.logging is not None
            quiet = await client.call_tool("binary_session", {})
            assert quiet.is_error is False
            # Nothing below warning until the client asks (a quiet default): a call, even a failed one, sends none.
            refused = await client.call_tool("list_procedures", {"limit": 5})
            assert refused.is_error is True
            assert received == []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level("info")
            ok = await client.call_tool("binary_session", {})
            assert ok.is_error is False
            bad = await client.call_tool("list_procedures", {"limit": 5})
            assert bad.is_error is True


def test_a_call_logs_to_its_client_at_the_level_it_set(tmp_path: Path) -> None:
    received: list[types.LoggingMessageNotificationParams] = []
    log_file = tmp_path / "rea.log"
    anyio.run(_session, received, "-v", "--log-file", str(log_file))
    texts = [(m.level, m.logger, m.data["message"]) for m in received]
    assert ("info", "rea", "binary_session: started") in texts
    assert any(level == "info" and text.startswith("binary_session: completed in ") for level, _, text in texts)
    assert any(level == "info" and text.startswith("list_procedures: failed (") for level, _, text in texts)
    # The server's own log (-v: info) has the same records, in the file and not on the protocol's stdout.
    written = log_file.read_text()
    assert "INFO rea: binary_session: completed in " in written and "INFO rea: list_procedures: failed" in written
