"""capture_process_scenario over MCP: progress only with a token, and cancellation that reaches the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from rea.process import procfs
from tests.mcp.harness import connect


def _running(pid: int) -> bool:
    info = procfs.read(pid)
    return info is not None and info.state != "Z"


def test_progress_names_phases_and_the_final_cleanup(programs: dict[str, Path], tmp_path: Path) -> None:
    args = {
        "executable": str(programs["waiter"]),
        "working_directory": str(tmp_path),
        "sandbox": "preferred",
        "checkpoints": [{"id": "ready", "output_contains": "ready"}],
        "events": [{"action": "signal", "signal": "SIGUSR1", "checkpoint": "ready", "delay_ms": 300}],
    }

    async def main() -> None:
        async with connect() as client:
            messages: list[str] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                messages.append(message or "")

            with_token = await client.call_tool("capture_process_scenario", args, progress_callback=on_progress)
            await anyio.sleep(0.2)  # progress callbacks are delivered asynchronously
            assert with_token.is_error is False, with_token.content
            assert any("process scenario: running" in m and "ms elapsed" in m for m in messages)
            assert any("finished (exited)" in m and "cleanup complete" in m for m in messages)
            without = await client.call_tool("capture_process_scenario", args)
            assert without.is_error is False
            exit_of = without.structured_content["normalized_result"]["lifecycle"]["exit"]
            assert exit_of == with_token.structured_content["normalized_result"]["lifecycle"]["exit"]

    anyio.run(main)


def test_cancellation_mid_capture_stops_the_program(programs: dict[str, Path], tmp_path: Path) -> None:
    args = {
        "executable": str(programs["hang"]),
        "working_directory": str(tmp_path),
        "timeout_ms": 60_000,
        "limits": {"termination_grace_ms": 200},
        "sandbox": "preferred",
    }

    async def main() -> None:
        async with connect() as client:
            with anyio.move_on_after(1.5):
                await client.call_tool("capture_process_scenario", args)
                raise AssertionError("the capture should have been cancelled")
            snaps: list[dict[str, Any]] = []
            for _ in range(100):
                doc = (await client.call_tool("binary_session", {})).structured_content
                lineage = doc["analysis_run"]["process_lineage"]
                snaps = [s for s in lineage.get("snapshots", []) if s["resource"] == "process-scenario"]
                if snaps and snaps[-1]["event"] == "closed":
                    break
                await anyio.sleep(0.1)
            assert [s["event"] for s in snaps][:1] == ["started"] and snaps[-1]["event"] == "closed"
            assert snaps[-1]["status"] == "verified"
            # The driver closed the capture long before its 60 s timeout: it saw the cancellation. Nothing runs on.
            pids = {snaps[0]["pid"]} | {p for s in snaps for p in s.get("descendants", [])}
            assert [p for p in pids if _running(p)] == []
            # Cancelled work records no Evidence.
            assert doc["retained_evidence_count"] == 0

    anyio.run(main)
