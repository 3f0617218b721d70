"""``rea serve --http``: the SDK's streamable HTTP client on 127.0.0.1; sessions apart, the door shut to strangers."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from rea.process import procfs
from tests import toolchains
from tests.mcp.harness import TEST_TOKEN
from tests.mcp.harness import HttpServer
from tests.mcp.harness import http_client
from tests.mcp.harness import http_server
from tests.mcp.harness import server_env

PROBE = {"REA_PLUGIN_MODULES": "tests.mcp.probe_plugin"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
ACCEPT = "application/json, text/event-stream"


def _post(server: HttpServer, body: Any, **headers: str) -> httpx2.Response:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    return httpx2.post(server.url, content=json.dumps(body).encode(), headers=sent, timeout=30)


def _initialized(server: HttpServer) -> dict[str, str]:
    """The headers of a new session on ``server`` (protocol 2025-11-25, the test token), initialized."""
    good = {"Authorization": f"Bearer {TEST_TOKEN}"}
    sid = _post(server, INITIALIZE, **good).headers["mcp-session-id"]
    session = {"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", **good}
    _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
    return session


def test_two_clients_at_once_keep_their_own_ledgers_and_targets(hello_elf: Path) -> None:
    with http_server(**PROBE) as server:

        async def main() -> None:
            async with http_client(server) as a, http_client(server) as b:
                # At once: a's slow call does not hold b up, and each records only its own Evidence.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(a.call_tool, "probe_wait", {"steps": 30, "step_ms": 10})
                    opened = await b.call_tool("open_binary", {"path": str(hello_elf)})
                    assert not opened.is_error, opened.content
                ra = (await a.call_tool("binary_session", {})).structured_content
                rb = (await b.call_tool("binary_session", {})).structured_content
                assert ra["retained_evidence_count"] == 1
                assert ra["target"] is None and rb["target"] is not None
                assert ra["server_identity"]["server"]["pid"] == rb["server_identity"]["server"]["pid"]
                assert ra["server_identity"]["protocol"]["version"] == "2025-11-25"

        anyio.run(main)


def test_strangers_are_refused_without_detail() -> None:
    with http_server() as server:
        port = server.url.split(":")[2].split("/")[0]
        good = {"Authorization": f"Bearer {TEST_TOKEN}"}
        no_token = _post(server, INITIALIZE)
        wrong = _post(server, INITIALIZE, Authorization="Bearer " + "x" * len(TEST_TOKEN))
        basic = _post(server, INITIALIZE, Authorization=f"Basic {TEST_TOKEN}")
        for refused in (no_token, wrong, basic):
            assert refused.status_code == 401 and refused.content == b""
            assert refused.headers["www-authenticate"] == "Bearer"
        # DNS rebinding: a name that resolves to 127.0.0.1 but is not the bound address.
        rebound = _post(server, INITIALIZE, Host=f"attacker.example:{port}", **good)
        assert rebound.status_code == 421 and rebound.content == b""
        foreign = _post(server, INITIALIZE, Origin="https://attacker.example", **good)
        assert foreign.status_code == 403 and foreign.content == b""
        # No CORS unless configured: a preflight gets no Access-Control-* answer.
        preflight = httpx2.options(
            server.url, headers={"Origin": "https://attacker.example", "Access-Control-Request-Method": "POST"}
        )
        assert preflight.status_code in (403, 405)
        assert not any(k.lower().startswith("access-control") for k in preflight.headers)
        ok = _post(server, INITIALIZE, **good)
        assert ok.status_code == 200 and ok.headers["mcp-session-id"]
        # localhost names the loopback bind too.
        assert _post(server, INITIALIZE, Host=f"localhost:{port}", **good).status_code == 200

        async def sdk_with_wrong_token() -> None:
            async with http_client(server, headers={"Authorization": "Bearer wrong-token-wrong-token"}):
                raise AssertionError("a wrong token must not open a session")

        with pytest.raises(BaseException) as raised:
            anyio.run(sdk_with_wrong_token)
        assert "error response" in repr(raised.value)


def test_an_allow_listed_origin_and_cors_when_configured() -> None:
    origin = "https://ide.example"
    with http_server("--allow-origin", origin, "--cors") as server:
        good = {"Authorization": f"Bearer {TEST_TOKEN}"}
        assert _post(server, INITIALIZE, Origin=origin, **good).status_code == 200
        assert _post(server, INITIALIZE, Origin="https://other.example", **good).status_code == 403
        preflight = httpx2.options(
            server.url, headers={"Origin": origin, "Access-Control-Request-Method": "POST"}, timeout=30
        )
        assert preflight.headers.get("access-control-allow-origin") == origin


def test_a_generated_token_is_printed_once_and_kept_0600(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    with http_server(token=None, XDG_RUNTIME_DIR=str(runtime)) as server:
        err = server.stderr()
        token = err.split("bearer token (also in ")[1].split("): ")[1].split()[0]
        assert err.count(token) == 1
        files = list((runtime / "rea").iterdir())
        assert len(files) == 1 and files[0].read_text().strip() == token
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert stat.S_IMODE((runtime / "rea").stat().st_mode) == 0o700
        assert _post(server, INITIALIZE, Authorization=f"Bearer {token}").status_code == 200
        assert _post(server, INITIALIZE).status_code == 401
    assert not files[0].exists()  # removed when the server stops


def test_no_auth_only_on_loopback_and_said_at_start() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "serve", "--http", "0.0.0.0:0", "--no-auth", "--allow-host", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
    )
    assert proc.returncode != 0 and "configuration_invalid" in proc.stderr and "--no-auth" in proc.stderr
    with http_server("--no-auth", token=None) as server:
        assert "authentication is OFF" in server.stderr()
        assert _post(server, INITIALIZE).status_code == 200


def test_per_session_limits_body_bytes_and_concurrent_requests() -> None:
    with http_server(REA_HTTP_MAX_CONCURRENT_REQUESTS="1", **PROBE) as server:
        good = {"Authorization": f"Bearer {TEST_TOKEN}"}
        opened = _post(server, INITIALIZE, **good)
        sid = opened.headers["mcp-session-id"]
        session = {"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25", **good}
        assert _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session).status_code == 202
        # The stdio line limit's rule: two response budgets (10 MiB by default) plus 1 MiB.
        big = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "binary_session", "arguments": {"x": "y" * (22 << 20)}},
        }
        refused = _post(server, big, **session)
        assert refused.status_code == 413
        error = refused.json()["error"]
        assert error["data"]["code"] == "resource_constraint"
        assert error["data"]["reported_limits"]["max_request_bytes"] == 21 << 20
        # Refused as stdio refuses a line, before any parser sees it.
        headers = {"Content-Type": "application/json", "Accept": ACCEPT, **session}
        for body, code in ((b"{not json", -32700), (b"[" * 100_000 + b"]" * 100_000, -32600), (b"[1, 2]", -32600)):
            refused = httpx2.post(server.url, content=body, headers=headers, timeout=30)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == code

        async def two_at_once() -> list[int]:
            statuses: list[int] = []

            async def call(rid: int) -> None:
                body = {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "probe_wait", "arguments": {"steps": 50, "step_ms": 10}},
                }
                async with httpx2.AsyncClient(timeout=30) as client:
                    headers = {"Content-Type": "application/json", "Accept": ACCEPT, **session}
                    response = await client.post(server.url, content=json.dumps(body).encode(), headers=headers)
                    statuses.append(response.status_code)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, 1)
                await anyio.sleep(0.2)
                tg.start_soon(call, 2)
            return statuses

        statuses = anyio.run(two_at_once)
        assert sorted(statuses) == [200, 429]


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    out = tmp_path_factory.mktemp("http-sleeper")
    (out / "sleeper.c").write_text(
        '#include <stdio.h>\n#include <unistd.h>\nint main(void) { puts("sleeping"); fflush(stdout); sleep(120); }\n'
    )
    subprocess.run([gcc, "-O0", "-o", str(out / "sleeper"), str(out / "sleeper.c")], check=True, capture_output=True)
    return out / "sleeper"


def _tree_with(pid: int, needle: str, timeout_s: float = 60) -> list[procfs.ProcInfo]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        tree = procfs.descendants(pid, procfs.scan())
        for info in tree:
            try:
                with open(f"/proc/{info.pid}/cmdline", "rb") as fh:
                    if needle.encode() in fh.read():
                        return tree
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError(f"no process running {needle} under the server")


def _server_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"rea_plugins." in fh.read()
    except OSError:
        return False


def test_a_disconnect_mid_call_cancels_it_and_leaves_no_owned_process(sleeper: Path, tmp_path: Path) -> None:
    toolchains.require("bwrap")
    with http_server() as server:
        session = _initialized(server)
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "capture_process_scenario",
                "arguments": {"executable": str(sleeper), "working_directory": str(tmp_path), "timeout_ms": 120_000},
            },
        }
        headers = {"Content-Type": "application/json", "Accept": ACCEPT, **session}
        with (
            httpx2.Client(timeout=30) as client,
            client.stream("POST", server.url, content=json.dumps(call).encode(), headers=headers) as response,
        ):
            assert response.status_code == 200
            # The call's processes: not the server's own workers (rea serve starts native's as it starts).
            tree = [i for i in _tree_with(server.proc.pid, str(sleeper)) if not _server_worker(i.pid)]
            # Leaving the block closes the connection while the call runs.
        deadline = time.monotonic() + 20
        while [i for i in tree if procfs.same_process(i)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [i.pid for i in tree if procfs.same_process(i)] == [], "owned processes outlived the dropped call"
        # The session goes on, and the cancelled call recorded nothing.
        status = _post(
            server,
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "binary_session", "arguments": {}}},
            **session,
        )
        assert status.status_code == 200
        data = next(line for line in status.text.splitlines() if line.startswith("data: "))
        assert json.loads(data[6:])["result"]["structuredContent"]["retained_evidence_count"] == 0
        assert server.proc.poll() is None


def test_sigterm_closes_every_session_and_exits_0() -> None:
    with http_server(**PROBE) as server:

        async def hold_a_session() -> None:
            async with http_client(server) as a:
                await a.call_tool("probe_wait", {"steps": 1, "step_ms": 0})
                server.proc.terminate()
                assert await anyio.to_thread.run_sync(server.proc.wait, 30) == 0

        anyio.run(hold_a_session)
        assert server.proc.returncode == 0


def test_a_read_only_shared_server_by_toolsets_and_the_hints_binary_session_shows() -> None:
    with http_server(REA_MCP_TOOLSETS="binary") as server:

        async def main() -> None:
            async with http_client(server) as client:
                listed = {t.name: t.annotations for t in (await client.list_tools()).tools}
                destructive = sorted(n for n, a in listed.items() if a is not None and a.destructive_hint)
                # Nothing listed runs foreign code; close_binary is destructive for its snapshot_path (a file written).
                assert destructive == ["close_binary"], destructive
                assert "capture_process_scenario" not in listed and "run_analysis_script" not in listed
                refused = await client.call_tool("call_tool_by_name", {"name": "run_analysis_script", "arguments": {}})
                assert refused.is_error
                error = json.loads(refused.content[0].text)["error"]
                assert error["code"] == "invalid_request" and error["details"]["toolset"] == "scripting"
                rows: dict[str, Any] = {}
                offset: int | None = 0
                while offset is not None:
                    page = await client.call_tool("binary_session", {"detail": "tools", "offset": offset})
                    rows.update({r["name"]: r for r in page.structured_content["tool_availability"]})
                    offset = page.structured_content["tool_page"]["next_offset"]
                # What a tool may do is shown for every tool, listed or not: foreign code is destructive, open-world.
                hints = rows["capture_process_scenario"]["annotations"]
                assert hints["destructiveHint"] is True and hints["openWorldHint"] is True
                assert rows["list_procedures"]["annotations"]["readOnlyHint"] is True

        anyio.run(main)


def test_a_client_of_the_previous_revision_works_and_the_sessionless_one_is_told_why() -> None:
    with http_server() as server:
        good = {"Authorization": f"Bearer {TEST_TOKEN}"}
        older = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-06-18"}}
        opened = _post(server, older, **good)
        assert opened.status_code == 200 and '"protocolVersion":"2025-06-18"' in opened.text.replace(" ", "")
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18", **good}
        _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
        listed = _post(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, **session)
        assert listed.status_code == 200 and '"binary_session"' in listed.text
        # 2026-07-28 has no session: rea refuses it over HTTP rather than forget each client's targets per request.
        modern = _post(
            server,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            **{"Mcp-Protocol-Version": "2026-07-28"},
            **good,
        )
        assert modern.status_code == 400 and "2025-11-25" in modern.json()["error"]["message"]


def test_an_idle_session_is_closed_and_its_id_forgotten(hello_elf: Path) -> None:
    with http_server(REA_HTTP_IDLE_TIMEOUT_S="2") as server:
        good = {"Authorization": f"Bearer {TEST_TOKEN}"}
        session = _initialized(server)
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "open_binary", "arguments": {"path": str(hello_elf)}},
        }
        assert _post(server, call, **session).status_code == 200
        time.sleep(3.5)
        # Closed with its target; the id is unknown now, and a new session starts from nothing.
        assert _post(server, {**call, "id": 2}, **session).status_code == 404
        assert _post(server, INITIALIZE, **good).status_code == 200


def test_the_sdk_client_in_auto_mode_falls_back_to_the_handshake() -> None:
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with http_server() as server:

        async def main() -> None:
            # auto: server/discover at 2026-07-28 first; rea's refusal sends it to initialize, and the session works.
            async with (
                create_mcp_http_client(headers=server.headers()) as http,
                Client(streamable_http_client(server.url, http_client=http), mode="auto") as client,
            ):
                assert client.protocol_version == "2025-11-25"
                result = await client.call_tool("binary_session", {})
                assert result.structured_content is not None
                assert result.structured_content["server_identity"]["protocol"]["version"] == "2025-11-25"

        anyio.run(main)
