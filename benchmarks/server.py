"""MCP server figures: cold start (spawn to tools/list answered) and binary_session latency.

Goals: cold start under 500 ms, binary_session median under 5 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client

COLD_RUNS = 3
CALLS = 50


async def cold_start() -> float:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=dict(os.environ))
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            await session.list_tools()
            return (time.perf_counter() - start) * 1000


async def latency(tool: str) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=dict(os.environ))
    out = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            await session.call_tool(tool, {})
            for _ in range(CALLS):
                start = time.perf_counter()
                await session.call_tool(tool, {})
                out.append((time.perf_counter() - start) * 1000)
    return out


def in_process_latency() -> list[float]:
    from rea.registry import load
    from rea.session import Session
    from rea.testing import call_tool

    session = Session(load())
    call_tool(session, "binary_session", {})
    out = []
    for _ in range(CALLS):
        start = time.perf_counter()
        call_tool(session, "binary_session", {})
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    colds = [anyio.run(cold_start) for _ in range(COLD_RUNS)]
    probe = (
        "import time; t = time.perf_counter(); import mcp.server.lowlevel.server, mcp.server.stdio; "
        "print((time.perf_counter() - t) * 1000)"
    )
    sdk = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    sdk_ms = float(sdk.stdout)
    lat = anyio.run(latency, "binary_session")
    floor = anyio.run(latency, "close_binary")
    in_process = in_process_latency()
    print(f"cold start, spawn -> tools/list answered   median {statistics.median(colds):7.1f} ms (goal < 500 ms)")
    print(f"  of which importing the mcp SDK alone     {sdk_ms:7.1f} ms (in a fresh interpreter)")
    print(
        f"binary_session round trip                  median {statistics.median(lat):7.2f} ms, "
        f"p90 {sorted(lat)[int(len(lat) * 0.9)]:.2f} ms (goal < 5 ms)"
    )
    print(f"  handler alone (in process)               median {statistics.median(in_process):7.2f} ms")
    print(f"  smallest tool round trip (close_binary)  median {statistics.median(floor):7.2f} ms (SDK + stdio floor)")


if __name__ == "__main__":
    main()
