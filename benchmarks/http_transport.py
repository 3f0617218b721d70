"""``rea serve --http`` against stdio: latency and throughput of many clients, and the memory of a shared target.

Latency: CLIENTS clients at once (default 50), each opening the same target and making CALLS (default 20) warm
queries (list_procedures, a page of 20 at an offset of its own), over one HTTP server and over one stdio server per
client. Printed: p50, p99 and calls per second of each, and HTTP's p99 over stdio's (goal: at most 2).
Memory: MEMORY_CLIENTS clients (default 10) with the target open, over one HTTP server against one stdio server
each: the resident and proportional set sizes of the server processes and everything they started.

Run: python benchmarks/http_transport.py [--clients 50] [--calls 20] [--stdio-clients N] [--memory-clients 10]
     [--target PATH]
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's folder comes first on sys.path, and this file would stand in for the standard http.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import argparse  # noqa: E402
import contextlib  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "benchmark-token-0123456789abcdef"
CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
    "/usr/bin/python3.11",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
)


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    out["PYTHONPATH"] = ROOT + os.pathsep + out.get("PYTHONPATH", "")
    out["REA_MCP_TOKEN"] = TOKEN
    # Every client of the benchmark at once; the default is 64 sessions.
    out["REA_HTTP_MAX_SESSIONS"] = "1000"
    for name in ("REA_DISABLE_PLUGINS", "REA_CACHE_DIR"):
        if name in os.environ:
            out[name] = os.environ[name]
    return out


@contextlib.contextmanager
def http_server() -> Any:
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rea", "serve", "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env(),
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                log.seek(0)
                found = re.search(r"at (http://\S+/mcp)", log.read())
                if found:
                    yield proc, found.group(1)
                    break
                if proc.poll() is not None:
                    raise SystemExit(f"rea serve --http exited {proc.returncode}")
                time.sleep(0.05)
            else:
                raise SystemExit("rea serve --http did not start")
        finally:
            proc.terminate()
            proc.wait(60)


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def stdio_session() -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=env())
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def one_client(
    opener: Callable[[], contextlib.AbstractAsyncContextManager[ClientSession]],
    index: int,
    target: str,
    calls: int,
    ready: list[int],
    start: anyio.Event,
    done: anyio.Event | None,
    latencies: list[float],
) -> None:
    async with opener() as session:
        opened = await session.call_tool("open_binary", {"path": target})
        assert not opened.is_error, opened.content
        await session.call_tool("list_procedures", {"limit": 20})  # warm
        ready.append(index)
        await start.wait()
        for j in range(calls):
            args = {"limit": 20, "offset": 20 * ((index * calls + j) % 200)}
            began = time.perf_counter()
            result = await session.call_tool("list_procedures", args)
            latencies.append((time.perf_counter() - began) * 1000)
            assert not result.is_error, result.content
        if done is not None:
            await done.wait()  # the memory phase measures with every session still open


async def run_clients(
    opener: Callable[[], contextlib.AbstractAsyncContextManager[ClientSession]],
    clients: int,
    target: str,
    calls: int,
    measure: Callable[[], None] | None = None,
    at_start: Callable[[], None] | None = None,
) -> tuple[list[float], float]:
    latencies: list[float] = []
    ready: list[int] = []
    start, done = anyio.Event(), anyio.Event() if measure is not None else None
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(one_client, opener, i, target, calls, ready, start, done, latencies)
        while len(ready) < clients:
            await anyio.sleep(0.05)
        if at_start is not None:
            at_start()
        began = time.perf_counter()
        start.set()
        while len(latencies) < clients * calls:
            await anyio.sleep(0.01)
        wall = time.perf_counter() - began
        if measure is not None and done is not None:
            await anyio.to_thread.run_sync(measure)
            done.set()
    return latencies, wall


def tree(pid: int) -> list[int]:
    """``pid`` and every descendant."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) summed over ``pids``, in KiB."""
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                text = fh.read()
        except OSError:
            continue
        rss += int(re.search(r"^Rss:\s+(\d+)", text, re.M).group(1))  # type: ignore[union-attr]
        pss += int(re.search(r"^Pss:\s+(\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    return rss, pss


def stdio_servers() -> list[int]:
    """The ``rea serve`` stdio children of this process (and their descendants)."""
    me = os.getpid()
    out = []
    for pid in tree(me)[1:]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if cmd.endswith(b"rea\0serve\0"):
            out += tree(pid)
    return sorted(set(out))


Usage = dict[tuple[int, int], tuple[int, int]]


def usage(pids: list[int]) -> Usage:
    """Per thread of ``pids``: (ns on a CPU, ns ready to run but waiting for one), from schedstat."""
    out: Usage = {}
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                    on_cpu, waited = fh.read().split()[:2]
            except (OSError, ValueError):
                continue
            out[(pid, int(tid))] = (int(on_cpu), int(waited))
    return out


def spent(before: Usage, after: Usage) -> tuple[float, float]:
    """(CPU seconds, seconds waiting for a CPU) between two snapshots; a thread that started between them counts
    whole, one that ended between them is not seen (an underestimate)."""
    cpu = wait = 0
    for key, (on_cpu, waited) in after.items():
        was = before.get(key, (0, 0))
        cpu += on_cpu - was[0]
        wait += waited - was[1]
    return cpu / 1e9, wait / 1e9


def figures(
    label: str, clients: int, latencies: list[float], wall: float, server_cpu: float, client_cpu: float, waited: float
) -> float:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    calls = len(latencies)
    print(
        f"{label:6} {clients:3} clients x {calls // clients} calls: p50 {statistics.median(ordered):7.1f} ms, "
        f"p99 {p99:7.1f} ms, {calls / wall:7.1f} calls/s; CPU per call: servers {1000 * server_cpu / calls:.1f} ms, "
        f"clients {1000 * client_cpu / calls:.1f} ms; servers waited for a CPU {1000 * waited / calls:.1f} ms"
    )
    return p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--stdio-clients", type=int, default=None, help="stdio servers at once (default: --clients)")
    parser.add_argument("--memory-clients", type=int, default=10)
    parser.add_argument("--target", default=next((p for p in CANDIDATES if os.path.exists(p)), None))
    args = parser.parse_args()
    if args.target is None:
        raise SystemExit("no target: give --target PATH (a large ELF)")
    target = os.path.realpath(args.target)
    stdio_clients = args.stdio_clients or args.clients
    print(f"target {target} ({os.path.getsize(target) >> 20} MiB); load average {os.getloadavg()[0]:.1f}")

    with http_server() as (proc, url):
        # The first open computes the analysis (or reads it from the analysis cache): not part of any figure.
        began = time.perf_counter()
        anyio.run(run_clients, lambda: http_session(url), 1, target, 1)
        print(f"first open and query: {time.perf_counter() - began:.1f} s")
        cpu: dict[str, float] = {}
        snap: dict[str, Usage] = {}

        def mark(label: str) -> Callable[[], None]:
            def take() -> None:
                cpu[label], cpu[label + "-wait"] = spent(snap["server"], usage(tree(proc.pid)))
                cpu[label + "-client"] = time.process_time() - cpu.get("client", 0.0)

            return take

        def start_marks() -> None:
            snap["server"], cpu["client"] = usage(tree(proc.pid)), time.process_time()

        latencies, wall = anyio.run(
            run_clients, lambda: http_session(url), args.clients, target, args.calls, mark("http"), start_marks
        )
        http_p99 = figures("http", args.clients, latencies, wall, cpu["http"], cpu["http-client"], cpu["http-wait"])

    def start_stdio() -> None:
        snap["server"], cpu["client"] = usage(stdio_servers()), time.process_time()

    def end_stdio() -> None:
        cpu["stdio"], cpu["stdio-wait"] = spent(snap["server"], usage(stdio_servers()))
        cpu["stdio-client"] = time.process_time() - cpu["client"]

    latencies, wall = anyio.run(run_clients, stdio_session, stdio_clients, target, args.calls, end_stdio, start_stdio)
    stdio_p99 = figures("stdio", stdio_clients, latencies, wall, cpu["stdio"], cpu["stdio-client"], cpu["stdio-wait"])
    print(f"http p99 / stdio p99: {http_p99 / stdio_p99:.2f} (goal: at most 2)")

    shown: dict[str, tuple[int, int]] = {}
    with http_server() as (proc, url):

        def measure_http() -> None:
            shown["http"] = memory_kib(tree(proc.pid))

        anyio.run(run_clients, lambda: http_session(url), args.memory_clients, target, 1, measure_http)

    def measure_stdio() -> None:
        shown["stdio"] = memory_kib(stdio_servers())

    anyio.run(run_clients, stdio_session, args.memory_clients, target, 1, measure_stdio)
    for label in ("http", "stdio"):
        rss, pss = shown[label]
        servers = "one server" if label == "http" else f"{args.memory_clients} servers"
        print(
            f"memory, {args.memory_clients} clients with the target open, {label} ({servers}): "
            f"RSS {rss >> 10} MiB, PSS {pss >> 10} MiB"
        )


if __name__ == "__main__":
    main()
