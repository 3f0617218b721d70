"""MCP Tasks (protocol 2025-11-25) with the SDK client, over stdio and streamable HTTP: a long call as a task
(create, progress, poll, result, cancel, list), its answer the direct call's, per-session tasks, and clients that
do not speak Tasks served as before."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from rea.mcp import tasks as rea_tasks
from rea.process import procfs
from tests import toolchains
from tests.mcp.harness import TEST_TOKEN
from tests.mcp.harness import Recorder
from tests.mcp.harness import Transport
from tests.mcp.harness import connect
from tests.mcp.harness import http_client
from tests.mcp.harness import http_server
from tests.mcp.harness import server_env

PROBE = {"REA_PLUGIN_MODULES": "tests.mcp.probe_plugin"}


async def create_task(
    client: ClientSession, name: str, arguments: dict[str, Any], ttl: int | None = None, progress: str | None = None
) -> Any:
    """A task-augmented tools/call. Sent through the SDK client's dispatcher: ``send_request`` checks a tools/call
    answer against the revision's CallToolResult, and the SDK types Tasks without dispatching them."""
    params = types.CallToolRequestParams(
        name=name,
        arguments=arguments,
        task=types.TaskMetadata(ttl=ttl),
        _meta={"progressToken": progress} if progress is not None else None,
    )
    raw = await client._dispatcher.send_raw_request(
        "tools/call", params.model_dump(by_alias=True, mode="json", exclude_none=True), {"timeout": 60}
    )
    return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def get_task(client: ClientSession, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.send_request(request, types.GetTaskResult)


async def task_result(client: ClientSession, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.send_request(request, types.CallToolResult)


async def cancel_task(client: ClientSession, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.send_request(request, types.CancelTaskResult)


async def list_tasks(client: ClientSession, cursor: str | None = None) -> types.ListTasksResult:
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    return await client.send_request(types.ListTasksRequest(params=params), types.ListTasksResult)


def test_a_long_call_runs_as_a_task_and_answers_what_the_direct_call_does(transport: Transport) -> None:
    async def main() -> None:
        rec = Recorder()
        async with connect(rec, transport=transport, **PROBE) as client:
            init = client.initialize_result
            assert init is not None and init.capabilities.tasks is not None
            assert init.capabilities.tasks.requests is not None and init.capabilities.tasks.requests.tools is not None
            listed = {t.name: t for t in (await client.list_tools()).tools}
            probe = listed["probe_wait"].execution
            assert probe is not None and probe.task_support == "optional"
            assert listed["binary_session"].execution is None  # a quick tool runs as a direct call only
            arguments = {"steps": 30, "step_ms": 50}
            started = time.monotonic()
            task = await create_task(client, "probe_wait", arguments, ttl=120_000, progress="task-progress")
            # Answered at once, while the 1.5 s call runs on.
            assert time.monotonic() - started < 1.5
            assert task.status == "working" and task.ttl == 120_000 and task.poll_interval is not None
            messages: set[str] = set()
            state = await get_task(client, task.task_id)
            while state.status == "working":
                messages.add(state.status_message or "")
                await anyio.sleep(0.1)
                state = await get_task(client, task.task_id)
            assert state.status == "completed", state
            assert any(m.startswith("probe: step ") for m in messages), messages  # progress, as the status
            # and, for the progress token the request gave, as notifications marked with the task
            notes = [getattr(m, "root", m) for m in rec.messages]
            progress = [n.params for n in notes if getattr(n, "method", None) == "notifications/progress"]
            assert progress and all(p.progress_token == "task-progress" for p in progress)
            assert progress[-1].meta == {rea_tasks.RELATED_TASK: {"taskId": task.task_id}}
            result = await task_result(client, task.task_id)
            assert not result.is_error and result.meta == {rea_tasks.RELATED_TASK: {"taskId": task.task_id}}
            direct = await client.call_tool("probe_wait", arguments)
            assert not direct.is_error and result.structured_content is not None
            assert result.structured_content == direct.structured_content
            assert result.structured_content["evidence_id"] == direct.structured_content["evidence_id"]
            # The task's call recorded its Evidence in the session's ledger, as a direct call does.
            session = await client.call_tool("binary_session", {})
            assert session.structured_content["retained_evidence_count"] == 1
            # tasks/list pages this session's tasks; its result may be fetched again while kept.
            second = await create_task(client, "probe_wait", {"steps": 1, "step_ms": 0})
            page = await list_tasks(client)
            assert [t.task_id for t in page.tasks] == [task.task_id, second.task_id]
            assert page.next_cursor is None
            again = await task_result(client, task.task_id)
            assert again.structured_content == result.structured_content

    anyio.run(main)


def test_unknown_tasks_and_tools_without_task_support_get_typed_errors(transport: Transport) -> None:
    async def main() -> None:
        async with connect(transport=transport, **PROBE) as client:
            for call in (get_task, task_result, cancel_task):
                with pytest.raises(MCPError) as raised:
                    await call(client, "no-such-task")
                assert raised.value.error.code == types.INVALID_PARAMS
                data = raised.value.error.data
                assert isinstance(data, dict) and data["error"]["code"] == "invalid_request"
                assert data["error"]["details"]["task_id"] == "no-such-task"
            with pytest.raises(MCPError) as raised:
                await list_tasks(client, cursor="not-a-cursor")
            assert raised.value.error.code == types.INVALID_PARAMS
            with pytest.raises(MCPError) as raised:
                await create_task(client, "binary_session", {})
            assert raised.value.error.code == types.METHOD_NOT_FOUND
            assert raised.value.error.data["error"]["details"] == {"tool": "binary_session"}
            # A task for no tool at all is the direct call's typed answer: there is no such tool.
            params = types.CallToolRequestParams(name="no_such_tool", arguments={}, task=types.TaskMetadata())
            raw = await client._dispatcher.send_raw_request(
                "tools/call", params.model_dump(by_alias=True, mode="json", exclude_none=True), {"timeout": 60}
            )
            assert raw["isError"] is True and "task" not in raw
            # A call that fails ends its task failed, tasks/result answers its typed error, and it cannot be cancelled.
            failed = await create_task(client, "probe_fail", {"code": "provider_timeout"})
            answer = await task_result(client, failed.task_id)
            assert answer.is_error and json.loads(answer.content[0].text)["error"]["code"] == "provider_timeout"
            assert (await get_task(client, failed.task_id)).status == "failed"
            with pytest.raises(MCPError) as raised:
                await cancel_task(client, failed.task_id)
            assert raised.value.error.data["error"]["details"]["status"] == "failed"

    anyio.run(main)


def test_a_target_opened_by_a_task_is_the_session_s(hello_elf: Path, transport: Transport) -> None:
    """open_binary (whole-program analysis at open) as a task: the session's target is open once it completes."""

    async def main() -> None:
        async with connect(transport=transport) as client:
            task = await create_task(client, "open_binary", {"path": str(hello_elf)})
            with anyio.fail_after(120):
                opened = await task_result(client, task.task_id)
            assert not opened.is_error, opened.content
            assert (await get_task(client, task.task_id)).status == "completed"
            session = await client.call_tool("binary_session", {})
            assert session.structured_content["target"]["path"] == str(hello_elf)
            listed = await client.call_tool("list_procedures", {"limit": 5})
            assert not listed.is_error

    anyio.run(main)


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    out = tmp_path_factory.mktemp("task-sleeper")
    (out / "sleeper.c").write_text(
        '#include <stdio.h>\n#include <unistd.h>\nint main(void) { puts("sleeping"); fflush(stdout); sleep(120); }\n'
    )
    subprocess.run([gcc, "-O0", "-o", str(out / "sleeper"), str(out / "sleeper.c")], check=True, capture_output=True)
    return out / "sleeper"


def _running(needle: str) -> list[procfs.ProcInfo]:
    """Processes of this user whose command line names ``needle`` (the module's own sleeper path)."""
    found = []
    for info in procfs.scan().values():
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as fh:
                if needle.encode() in fh.read():
                    found.append(info)
        except OSError:
            continue
    return found


def test_a_cancelled_task_stops_its_call_and_leaves_no_owned_process(
    sleeper: Path, tmp_path: Path, transport: Transport
) -> None:
    toolchains.require("bwrap")

    async def main() -> None:
        async with connect(transport=transport) as client:
            arguments = {"executable": str(sleeper), "working_directory": str(tmp_path), "timeout_ms": 120_000}
            task = await create_task(client, "capture_process_scenario", arguments)
            deadline = time.monotonic() + 60
            while not _running(str(sleeper)) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            running = _running(str(sleeper))
            assert running, "the task's call never started the program"
            assert (await get_task(client, task.task_id)).status == "working"
            cancelled = await cancel_task(client, task.task_id)
            assert cancelled.status == "cancelled"
            # tasks/result waits for the call to stop: then its owned processes are gone.
            with anyio.fail_after(40):
                result = await task_result(client, task.task_id)
            assert result.is_error
            assert json.loads(result.content[0].text)["error"]["code"] in ("cancelled", "cleanup_incomplete")
            deadline = time.monotonic() + 20
            while [i for i in running if procfs.same_process(i)] and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            assert [i.pid for i in running if procfs.same_process(i)] == [], "owned processes outlived the task"
            assert (await get_task(client, task.task_id)).status == "cancelled"  # sticky
            session = await client.call_tool("binary_session", {})
            assert session.structured_content["retained_evidence_count"] == 0

    anyio.run(main)


def test_another_session_cannot_see_a_task(transport: Transport) -> None:
    async def main() -> None:
        if transport == "http":
            with http_server(**PROBE) as server:
                async with http_client(server) as a, http_client(server) as b:
                    await _only_its_own(a, b)
        else:
            async with connect(**PROBE) as a, connect(**PROBE) as b:
                await _only_its_own(a, b)

    anyio.run(main)


async def _only_its_own(a: ClientSession, b: ClientSession) -> None:
    task = await create_task(a, "probe_wait", {"steps": 1, "step_ms": 0})
    with pytest.raises(MCPError) as raised:
        await get_task(b, task.task_id)
    assert raised.value.error.code == types.INVALID_PARAMS
    assert (await list_tasks(b)).tasks == []
    assert not (await task_result(a, task.task_id)).is_error


def _stdio_exchange(messages: list[dict[str, Any]], answers: int) -> list[dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea.cli.main", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(**PROBE),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m).encode() + b"\n")
        proc.stdin.flush()
        out = []
        while len(out) < answers:
            doc = json.loads(proc.stdout.readline())
            if "id" in doc:
                out.append(doc)
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_client_of_the_previous_revision_gets_a_direct_answer(transport: Transport) -> None:
    """A client on 2025-06-18 (no Tasks) that sends task metadata anyway is answered as before: the CallToolResult."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "probe_wait", "arguments": {"steps": 2, "step_ms": 1}, "task": {"ttl": 1000}},
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    if transport == "stdio":
        opened, answered = _stdio_exchange([initialize, initialized, call], 2)
    else:
        import httpx2

        with http_server(**PROBE) as server, httpx2.Client(timeout=30) as http:
            head = {
                "Authorization": f"Bearer {TEST_TOKEN}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }

            def post(body: dict[str, Any], **extra: str) -> dict[str, Any] | None:
                response = http.post(server.url, content=json.dumps(body).encode(), headers={**head, **extra})
                assert response.status_code in (200, 202), response.text
                data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
                return json.loads(data[-1]) if data else None

            response = http.post(server.url, content=json.dumps(initialize).encode(), headers=head)
            sid = response.headers["mcp-session-id"]
            opened = json.loads(next(ln[6:] for ln in response.text.splitlines() if ln.startswith("data: ")))
            session = {"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
            post(initialized, **session)
            answered = post(call, **session) or {}
    assert opened["result"]["protocolVersion"] == "2025-06-18"
    result = answered["result"]
    assert "task" not in result and result["isError"] is False
    assert result["structuredContent"]["normalized_result"] == {"steps": 2}


def test_the_flag_is_data_on_the_long_tools() -> None:
    """The long tools declare task support on their definitions, and tools/list carries it."""
    from rea.registry import default_registry

    specs = default_registry().tool_specs()
    flagged = {n for n, s in specs.items() if s.task_support == "optional"}
    long_tools = {"open_binary", "batch_decompile", "triage_corpus", "compare_binaries", "capture_process_scenario"}
    assert long_tools <= flagged
    assert "binary_session" not in flagged and "list_procedures" not in flagged
