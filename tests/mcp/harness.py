"""Drive ``rea serve`` as a subprocess with the official SDK's client, over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from collections.abc import Iterator
from typing import Any
from typing import Literal

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult


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


Transport = Literal["stdio", "http"]
# Every test over HTTP knows its token; the generated one is tested on its own.
TEST_TOKEN = "rea-test-token-0123456789abcdef"
_LISTENING = re.compile(r"at (http://\S+/mcp)")


class HttpServer:
    """A running ``rea serve --http`` child: its URL, token and process."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, token: str | None, stderr_path: str) -> None:
        self.proc = proc
        self.url = url
        self.token = token
        self.stderr_path = stderr_path

    def stderr(self) -> str:
        with open(self.stderr_path, encoding="utf-8", errors="replace") as fh:
            return fh.read()

    def headers(self, token: str | None = None) -> dict[str, str]:
        token = self.token if token is None else token
        return {"Authorization": f"Bearer {token}"} if token else {}


@contextlib.contextmanager
def http_server(
    *args: str, token: str | None = TEST_TOKEN, bind: str = "127.0.0.1:0", **env: str
) -> Iterator[HttpServer]:
    """``rea serve --http`` on a free port of 127.0.0.1, stopped with SIGTERM at the end."""
    extra = dict(env)
    if token is not None:
        extra["REA_MCP_TOKEN"] = token
    with tempfile.NamedTemporaryFile(prefix="rea-http-", suffix=".log", delete=False) as log:
        path = log.name
    with open(path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rea.cli.main", "serve", "--http", bind, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=server_env(**extra),
        )
    try:
        url = _wait_for_url(proc, path)
        yield HttpServer(proc, url, token, path)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.unlink(path)


def _wait_for_url(proc: subprocess.Popen[bytes], path: str, timeout: float = 60.0) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, encoding="utf-8", errors="replace") as fh:
            found = _LISTENING.search(fh.read())
        if found:
            return found.group(1)
        if proc.poll() is not None:
            with open(path, encoding="utf-8", errors="replace") as fh:
                raise AssertionError(f"rea serve --http exited {proc.returncode}: {fh.read()[-2000:]}")
        time.sleep(0.05)
    raise AssertionError("rea serve --http did not announce its address")


@contextlib.asynccontextmanager
async def http_client(
    server: HttpServer, recorder: Recorder | None = None, sampling: Any = None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK streamable HTTP client of a running ``rea serve --http``."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=server.headers() if headers is None else headers) as http,
        # rea answers up to its response budget (10 MiB by default); the SDK client stops at 1 MiB per event.
        streamable_http_client(server.url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(read, write, message_handler=recorder, sampling_callback=sampling) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def connect(
    recorder: Recorder | None = None,
    sampling: Any = None,
    wrapper: tuple[str, ...] = (),
    transport: Transport = "stdio",
    **env: str,
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client of ``rea serve``; ``wrapper`` runs the server under a command (e.g. bwrap);
    ``transport="http"`` starts ``rea serve --http`` on 127.0.0.1 for this client alone."""
    if transport == "http":
        assert not wrapper, "a wrapper is for the stdio server"
        with http_server(**env) as server:
            async with http_client(server, recorder, sampling) as session:
                yield session
        return
    argv = [*wrapper, sys.executable, "-m", "rea.cli.main", "serve"]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(**env))
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write, message_handler=recorder, sampling_callback=sampling) as session,
        ):
            await session.initialize()
            yield session


def structured(reply: CallToolResult) -> dict[str, Any]:
    """The structured content of a tool's reply, which must not be an error."""
    assert reply.is_error is False, reply.content
    content: dict[str, Any] | None = reply.structured_content
    assert content is not None
    return content


def error_of(reply: CallToolResult) -> dict[str, Any]:
    """The canonical error document (code, category, message, ...) of a tool's reply, which must be an error."""
    assert reply.is_error is True, reply.content
    first: Any = reply.content[0]
    err: dict[str, Any] = json.loads(first.text)["error"]
    return err


def normalized(reply: CallToolResult) -> Any:
    """The ``normalized_result`` of a tool's reply, which must not be an error."""
    return structured(reply)["normalized_result"]


async def call_structured(client: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Calls ``tool`` through the client; its structured content (the call must not fail)."""
    return structured(await client.call_tool(tool, args))
