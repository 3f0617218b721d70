"""``run_analysis_script`` over ``rea serve`` with the SDK client: the five-call question in one call, hostile
scripts typed within their bounds while the server keeps answering, refusals, and cancellation."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import psutil  # type: ignore[import-untyped]
import pytest

from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.scripting.conftest import example

pytestmark = pytest.mark.usefixtures("sandboxed")
WORKER_MODULE = "rea_plugins.scripting.worker"
BOUND_S = 4  # REA_SCRIPT_TIMEOUT_S of the hostile scripts' server


def size(result: Any) -> int:
    """What a host reads of a result: every content block's text, as UTF-8 bytes."""
    return sum(len(block.text.encode()) for block in result.content if block.type == "text")


def script_workers() -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if WORKER_MODULE in (proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


def test_five_call_question_in_one_call(script_programs: dict[str, Path]) -> None:
    """String -> xrefs -> procedures -> callers -> C: one script call gives what six direct calls give, and
    records the same Evidence (content-addressed: the same ids)."""

    async def main() -> None:
        async with connect() as client:
            await client.call_tool("open_binary", {"path": str(script_programs["strings"])})
            started = time.monotonic()
            direct: list[Any] = []

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                out = await client.call_tool(name, args)
                assert not out.is_error, out.content[0]
                direct.append(out)
                result: dict[str, Any] = out.structured_content["normalized_result"]
                return result

            [string] = (await call("search_strings", {"pattern": "rea-script-banner", "limit": 5}))["strings"]
            [pointer] = (await call("xrefs", {"address": string["address"]}))["references"]
            [use] = (await call("xrefs", {"address": pointer["from"]}))["references"]
            callers = await call("procedure_callers", {"procedure": use["from_procedure"]})
            for entry in [callers["procedure"]["address"], *(c["address"] for c in callers["callers"])]:
                await call("procedure_pseudo_code", {"procedure": entry, "limit": 200})
            direct_ms = (time.monotonic() - started) * 1000

            started = time.monotonic()
            scripted = await client.call_tool(
                "run_analysis_script",
                {"source": example("string_to_c.py"), "arguments": {"needle": "rea-script-banner"}},
            )
            script_ms = (time.monotonic() - started) * 1000
            assert not scripted.is_error, scripted.content[0]
            run = scripted.structured_content["normalized_result"]
            [row] = run["result"]
            assert row["procedure"]["name"] == "show_banner" and [c["name"] for c in row["callers"]] == ["report"]
            assert "puts" in row["c"] and "show_banner()" in row["callers"][0]["c"]
            # Each inner call was recorded as the direct call was: the same content, the same Evidence id.
            direct_ids = {d.structured_content["evidence_id"] for d in direct}
            assert direct_ids == set(run["call_evidence_ids"])
            assert run["calls"] == len(direct) == 6
            assert set(scripted.structured_content["evidence_links"]) == direct_ids
            print(
                f"\nfive-call question: direct {len(direct)} calls {sum(map(size, direct))} B in {direct_ms:.0f} ms; "
                f"script 1 call {size(scripted)} B in {script_ms:.0f} ms"
            )

    anyio.run(main)


HOSTILE = {
    "shadow": ("print(open('/etc/shadow').read())", {"execution_failure", "access_denied"}),
    # PORT: a socket the test listens on at the host's 127.0.0.1; the sandbox's loopback is its own.
    "socket": (
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=2)\nresult = 'connected'",
        {"access_denied", "execution_failure"},
    ),
    "fork": (
        "import os, time\nfor _ in range(500):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n",
        {"resource_constraint"},
    ),
    "loop": ("while True:\n    pass\n", {"provider_timeout"}),
    "memory": ("blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n", {"resource_constraint"}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_script_is_typed_within_bounds_and_server_answers(name: str, script_programs: dict[str, Path]) -> None:
    source, codes = HOSTILE[name]
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    source = source.replace("PORT", str(listener.getsockname()[1]))

    async def main() -> None:
        async with connect(REA_SCRIPT_TIMEOUT_S=str(BOUND_S), REA_SCRIPT_MEMORY_LIMIT_MB="512") as client:
            await client.call_tool("open_binary", {"path": str(script_programs["strings"])})
            outcome: dict[str, Any] = {}
            pings: list[float] = []

            async def run() -> None:
                started = time.monotonic()
                outcome["result"] = await client.call_tool("run_analysis_script", {"source": source})
                outcome["seconds"] = time.monotonic() - started

            async with anyio.create_task_group() as group:
                group.start_soon(run)
                # The server keeps answering while the script runs.
                while "result" not in outcome:
                    started = time.monotonic()
                    await client.send_ping()
                    pings.append(time.monotonic() - started)
                    await anyio.sleep(0.2)
            err = error_of(outcome["result"])
            assert err["code"] in codes, err
            assert "Traceback" not in err["message"] and "Error" not in err["message"]
            if name != "loop":
                assert err["details"]["script_error"]["line"] is not None
            # Within its bound (with room for the sandbox's start and the worker's end on a loaded host).
            assert outcome["seconds"] < BOUND_S + 10
            assert pings
            await client.send_ping()
            after = await client.call_tool("list_procedures", {"limit": 1})
            assert not after.is_error
            assert not script_workers()

    with listener:
        anyio.run(main)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing reached the host's loopback


def test_write_tool_is_refused_unless_allowed(script_programs: dict[str, Path]) -> None:
    source = "rea.call('set_comment', {'address': ADDRESS, 'comment': 'from a script'})\nresult = 'written'\n"

    async def main(allow: str) -> None:
        async with connect(REA_SCRIPT_ALLOW_EFFECTS=allow) as client:
            await client.call_tool("open_binary", {"path": str(script_programs["strings"])})
            main_entry = (await client.call_tool("procedure_address", {"procedure": "main"})).structured_content
            address = main_entry["normalized_result"]["address"]
            out = await client.call_tool("run_analysis_script", {"source": source.replace("ADDRESS", repr(address))})
            comment = await client.call_tool("comment", {"address": address})
            text = comment.structured_content["normalized_result"]
            if allow == "0":
                err = error_of(out)
                assert err["code"] == "access_denied"
                assert err["details"]["tool_error"]["details"]["reason"] == "not_read_only"
                assert "REA_SCRIPT_ALLOW_EFFECTS" in err["remediation"]["action"]
                assert "from a script" not in json.dumps(text)
                # A read-only script on the same server still runs.
                ok = await client.call_tool("run_analysis_script", {"source": "result = len(rea.tools)"})
                assert not ok.is_error and ok.structured_content["normalized_result"]["result"] > 50
                assert "set_comment" not in json.dumps(ok.structured_content)
            else:
                assert not out.is_error, out.content[0]
                assert out.structured_content["normalized_result"]["result"] == "written"
                assert "from a script" in json.dumps(text)

    anyio.run(main, "0")
    anyio.run(main, "1")


def test_cancellation_kills_the_worker(script_programs: dict[str, Path]) -> None:
    async def main() -> None:
        async with connect(REA_SCRIPT_TIMEOUT_S="120") as client:
            await client.call_tool("open_binary", {"path": str(script_programs["strings"])})
            before = set(script_workers())
            with anyio.move_on_after(2.0):
                await client.call_tool(
                    "run_analysis_script", {"source": "import time\nwhile True:\n    time.sleep(0.05)\n"}
                )
                raise AssertionError("the call should have been cancelled")
            deadline = time.monotonic() + 10
            while set(script_workers()) - before and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            assert not set(script_workers()) - before
            session = await client.call_tool("binary_session", {})
            lineage = json.dumps(session.structured_content)
            assert "script-worker" in lineage
            await client.send_ping()

    anyio.run(main)


def test_deadline_ends_a_slow_inner_call_and_progress_flows() -> None:
    """A tool call still running at the script's deadline is cancelled (and records nothing): the call is a
    timeout, not a cancellation; the inner tool's progress reaches the caller on the script's token."""
    source = "rea.progress('starting')\nrea.probe_wait(steps=100000, step_ms=10)\n"

    async def main() -> None:
        async with connect(REA_PLUGIN_MODULES="tests.mcp.probe_plugin", REA_SCRIPT_TIMEOUT_S="3") as client:
            seen: list[str] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(message or "")

            started = time.monotonic()
            out = await client.call_tool("run_analysis_script", {"source": source}, progress_callback=on_progress)
            took = time.monotonic() - started
            err = error_of(out)
            assert err["code"] == "provider_timeout" and err["details"]["setting"] == "REA_SCRIPT_TIMEOUT_S"
            assert err["details"]["calls"] == 1 and err["details"]["call_evidence_ids"] == []
            assert took < 3 + 10
            await anyio.sleep(0.3)  # progress callbacks are delivered asynchronously
            assert any("script: starting" in m for m in seen), seen
            assert any("probe: step" in m for m in seen), seen
            state = await client.call_tool("binary_session", {})
            assert state.structured_content["retained_evidence_count"] == 0
            assert not script_workers()

    anyio.run(main)
