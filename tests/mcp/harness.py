"""Drive ``rea serve`` as a subprocess with the official SDK's stdio client."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


class Recorder:
    """Every server-initiated message the client saw (notifications included)."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    def methods(self) -> list[str]:
        out = []
        for m in self.messages:
            root = getattr(m, "root", m)
            method = getattr(root, "method", None)
            if method:
                out.append(method)
        return out


@contextlib.asynccontextmanager
async def connect(
    recorder: Recorder | None = None, sampling: Any = None, wrapper: tuple[str, ...] = (), **env: str
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client of ``rea serve``; ``wrapper`` runs the server under a command (e.g. bwrap)."""
    argv = [*wrapper, sys.executable, "-m", "rea.cli.main", "serve"]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(**env))
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write, message_handler=recorder, sampling_callback=sampling) as session,
        ):
            await session.initialize()
            yield session
