"""The debug and emulation toolsets through the MCP SDK's client: listed on demand with honest hints, answering
over the wire, and a debug session's processes ended when the connection closes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.catalog.document import build_catalog
from rea.registry import Registry
from tests import toolchains
from tests.lldb.conftest import require_lldb
from tests.lldb.test_debug_sessions import POINT_C
from tests.mcp.harness import connect
from tests.waiting import still_running


@pytest.fixture(scope="module")
def point_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_lldb()
    return toolchains.compile_c(POINT_C, tmp_path_factory.mktemp("mcp-debug"), "point", "-O0", "-g")


def _result(reply: Any) -> dict[str, Any]:
    assert reply.is_error is False, reply.content[0].text
    body: dict[str, Any] = reply.structured_content
    out: dict[str, Any] = body.get("normalized_result", body)
    return out


def test_toolsets_on_demand_hints_and_a_session_ended_with_the_connection(
    rea_registry: Registry, routines: dict[str, Path], point_program: Path
) -> None:
    toolset_of = {t["name"]: t["toolset"] for t in build_catalog(rea_registry)["tools"]}
    debug = {n for n, ts in toolset_of.items() if ts == "debug"}
    emulation = {n for n, ts in toolset_of.items() if ts == "emulation"}
    assert emulation == {"emulate_procedure", "emulate_range"} and "debug_launch" in debug and len(debug) == 9
    pids: list[int] = []

    async def main() -> None:
        async with connect() as client:
            first = {t.name for t in (await client.list_tools()).tools}
            assert not (debug | emulation) & first
            enabled = await client.call_tool("enable_toolsets", {"toolsets": ["debug", "emulation"]})
            assert sorted(enabled.structured_content["added"]) == ["debug", "emulation"]
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) - first == debug | emulation
            hints = {n: listed[n].annotations.model_dump() for n in debug | emulation}  # type: ignore[union-attr]
            assert hints["emulate_procedure"]["read_only_hint"] is True
            for name in debug - {"debug_state", "debug_read_memory"}:
                assert hints[name]["read_only_hint"] is False, name
            assert hints["debug_launch"]["open_world_hint"] is True
            assert hints["debug_write_memory"]["destructive_hint"] is True

            _result(await client.call_tool("open_binary", {"path": str(routines["x86_64"])}))
            ran = _result(await client.call_tool("emulate_procedure", {"procedure": "arith", "arguments": [3, 4, 5]}))
            assert ran["stop"]["reason"] == "returned" and ran["return_value"]["int32"] == (3 * 4 + 5) ^ 0x55

            launched = _result(await client.call_tool("debug_launch", {"executable": str(point_program)}))
            sid = launched["session"]
            await client.call_tool("debug_breakpoint", {"session": sid, "procedure": "helper"})
            stop = _result(await client.call_tool("debug_continue", {"session": sid}))["stop"]
            assert stop["procedure"] == "helper" and stop["reason"] == "breakpoint"
            session = _result(await client.call_tool("binary_session", {}))
            snaps = session["analysis_run"]["process_lineage"]["snapshots"]
            pids.extend(p for s in snaps if s["event"] == "debuggee_launched" for p in [s["pid"], *s["descendants"]])
            assert len(still_running(pids)) == len(pids) >= 3
            # Left running on purpose: closing the connection must end it.

    anyio.run(main)
    deadline = time.monotonic() + 15
    while still_running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(pids) == [], json.dumps(pids)
