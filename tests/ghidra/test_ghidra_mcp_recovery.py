"""The contract's first-query recovery, in real time, on one stdio connection (mcp-contracts.md, "Ghidra
first-query deadlines and recovery").

A client with a 12 s request deadline asks for an overview while the (fake) engine takes 25 s to start: it
gets the waiting notification at 10 s, times out (the SDK sends a cancel), then close_binary, open_binary with
the same path and provider_id "ghidra", and an overview with a longer deadline succeed on the same connection.
No process of the fake remains.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.ghidra.conftest import fake_processes
from tests.mcp.harness import Recorder
from tests.mcp.harness import connect

STARTUP_S = 25


class Progress:
    """Progress notifications of one request: (seconds since the call, progress, total, message)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.seen: list[tuple[float, float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((time.monotonic() - self.started, progress, total, message))

    def waiting(self) -> list[tuple[float, float, float | None, str | None]]:
        return [s for s in self.seen if s[3] and "waiting for startup" in s[3]]


def _check_progress(progress: Progress) -> None:
    values = [p for _, p, _, _ in progress.seen]
    assert values == sorted(values) and len(set(values)) == len(values), "progress must strictly increase"
    # No total while waiting (future observations are unknown); only the terminal update is complete.
    assert all(total is None for _, _, total, _ in progress.seen[:-1]), "no total: future observations are unknown"
    assert progress.seen[-1][2] in (None, progress.seen[-1][1])


def test_client_timeout_during_startup_then_close_reopen_retry(
    program: str, fake_worker: Path, recorded_model: Path
) -> None:
    env = {
        "REA_GHIDRA_TEST_WORKER": str(fake_worker),
        "REA_GHIDRA_TEST_MODEL": str(recorded_model),
        "REA_GHIDRA_TEST_MODE": f"slow:{STARTUP_S}",
    }
    first, retry = Progress(), Progress()
    outcome: dict[str, Any] = {}

    async def main() -> None:
        async with connect(Recorder(), **env) as client:
            opened = await client.call_tool("open_binary", {"path": program, "provider_id": "ghidra"})
            assert opened.is_error is False, opened.content
            # open_binary binds only: no engine process yet.
            assert fake_processes() == []
            first.started = time.monotonic()
            with pytest.raises(MCPError) as timed_out:
                await client.call_tool("binary_overview", {}, read_timeout_seconds=12, progress_callback=first)
            outcome["timeout"] = timed_out.value
            outcome["timed_out_after"] = time.monotonic() - first.started
            closed = await client.call_tool("close_binary", {})
            assert closed.is_error is False, closed.content
            outcome["closed"] = closed.structured_content
            outcome["after_close"] = fake_processes()
            reopened = await client.call_tool("open_binary", {"path": program, "provider_id": "ghidra"})
            assert reopened.is_error is False, reopened.content
            binding = reopened.structured_content["analysis_provider_binding"]
            assert binding["provider"]["id"] == "ghidra" and binding["selection_source"] == "request"
            retry.started = time.monotonic()
            overview = await client.call_tool(
                "binary_overview", {}, read_timeout_seconds=STARTUP_S + 60, progress_callback=retry
            )
            assert overview.is_error is False, overview.content
            outcome["overview"] = overview.structured_content
            # Warm: the next query answers from the started engine.
            procs = await client.call_tool("list_procedures", {"limit": 5})
            assert procs.is_error is False, procs.content
            final = await client.call_tool("close_binary", {})
            assert final.structured_content["cleanup"] == "complete"

    anyio.run(main)
    # The waiting notification came at about ten seconds, before the client gave up; it gives elapsed time.
    waiting = first.waiting()
    assert waiting, f"no waiting notification before the timeout: {first.seen}"
    assert "10 s elapsed" in (waiting[0][3] or "")
    assert waiting[0][0] < outcome["timed_out_after"]
    _check_progress(first)
    # Nothing after the cancel: notifications stop when the caller gives up.
    assert all(t <= outcome["timed_out_after"] + 1.0 for t, _, _, _ in first.seen)
    assert outcome["closed"]["cleanup"] == "complete"
    assert outcome["after_close"] == []
    # The retry waited out the whole startup, with notifications at 10 s and 20 s, then completed.
    assert [m for _, _, _, m in retry.waiting()][:2] and "20 s elapsed" in (retry.waiting()[1][3] or "")
    assert any(m and "binary_overview: completed" in m for _, _, _, m in retry.seen)
    _check_progress(retry)
    assert outcome["overview"]["normalized_result"]["counts"]["procedures"] > 0
    assert fake_processes() == []
