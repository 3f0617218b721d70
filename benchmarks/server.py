"""MCP server figures: cold start (spawn to tools/list answered) and binary_session latency.

Goals: cold start under 500 ms, binary_session median under 5 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

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


async def session_latency() -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=dict(os.environ))
    out = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            await session.call_tool("binary_session", {})
            for _ in range(CALLS):
                start = time.perf_counter()
                await session.call_tool("binary_session", {})
                out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    colds = [anyio.run(cold_start) for _ in range(COLD_RUNS)]
    import_start = time.perf_counter()
    import mcp.server.lowlevel.server  # noqa: F401  (what the SDK alone costs)

    sdk_ms = (time.perf_counter() - import_start) * 1000
    lat = anyio.run(session_latency)
    print(f"cold start, spawn -> tools/list answered   median {statistics.median(colds):7.1f} ms (goal < 500 ms)")
    print(f"  of which importing the mcp SDK alone     {sdk_ms:7.1f} ms (measured in this process)")
    print(f"binary_session round trip                  median {statistics.median(lat):7.2f} ms, "
          f"p90 {sorted(lat)[int(len(lat) * 0.9)]:.2f} ms (goal < 5 ms)")


if __name__ == "__main__":
    main()
