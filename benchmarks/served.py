"""The whole program as an agent receives it, beside the disassembly floor (issue 45).

For each binary (``/usr/bin/python3.11`` and ``libcrypto.so.3`` of this host by default), in one run: ``objdump -d``
wall time (the floor), then over MCP stdio with the official SDK's client against ``rea serve`` and a fresh cache
(``REA_CACHE_DIR`` in a temporary directory): ``open_binary``, ``binary_overview``, every procedure through
``list_procedures`` pages of 1,000 and every call-graph edge through ``get_call_graph`` pages of 5,000. It prints
each phase, the total against the floor (goal: at most 2x), the bytes and microseconds per edge and per procedure
row (bytes as the host hands them to the model: the result's text content), and the canonical-JSON throughput
(``rea.canonical.canonical_digest`` on the largest result the run received, in MB/s). Last, the CLI's CPU medians
and the server's start against a minimal one (``startup.py``'s figures; ``--no-cli`` leaves them out).

Beside each wall time, the server's CPU time (from /proc; its threads and its worker processes), steadier than wall time
on a loaded host, and its total against objdump's own CPU time. The server's start (to a first ``tools/list``) is
printed but not counted: an agent pays it once per session, not per binary. Wall times on a shared, loaded host vary
by tens of percent: run it twice before reading a trend.

    python benchmarks/served.py [--detail lean|complete] [--in-process] [--no-cli] [BINARY ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

# This folder holds an http.py, which would shadow the standard library's http for the SDK's imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402
import msgspec  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from rea.canonical import canonical_digest  # noqa: E402
from rea.canonical import canonical_json  # noqa: E402

DEFAULT_BINARIES = ("/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3")
GOAL = 2.0  # the whole program as served, over objdump -d
PROCEDURE_PAGE = 1000
EDGE_PAGE = 5000


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    server_cpu: float = 0.0  # the server's CPU time (user + system, all its threads and worker processes)
    calls: int = 0
    bytes: int = 0
    rows: int = 0


@dataclass
class Run:
    binary: str
    floor: float
    floor_cpu: float = 0.0
    start: float = 0.0
    server: int | None = None  # the server's pid, for its CPU time
    phases: list[Phase] = field(default_factory=list)
    largest: Any = None  # the largest result received (its normalized_result), for the canonical-JSON figure
    largest_bytes: int = 0

    @property
    def total(self) -> float:
        return sum(p.seconds for p in self.phases)

    @property
    def total_cpu(self) -> float:
        return sum(p.server_cpu for p in self.phases)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command (state first), None where gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return None


def cpu_of(pid: int | None) -> float:
    """The CPU seconds of a live process and its descendants (user + system; reaped children included), from /proc;
    the server's index workers are processes of their own."""
    if pid is None:
        return 0.0
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        fields = _stat(entry) if entry.isdigit() else None
        if fields is not None:
            parents[int(entry)] = int(fields[1])
            stats[int(entry)] = fields
    tree, grown = {pid}, True
    while grown:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    # utime, stime, cutime, cstime: fields 14-17 of stat (1-based), 11-14 here (the state is index 0).
    ticks = sum(int(stats[p][i]) for p in tree if p in stats for i in (11, 12, 13, 14))
    return ticks / _TICK


def server_pid() -> int | None:
    """This process's child running ``rea serve`` (the SDK does not expose the pid it started)."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = f.read().rpartition(")")[2].split()[1]
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if parent == me and b"serve" in argv:
            return int(entry)
    return None


def server_env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env["REA_CACHE_DIR"] = cache
    return env


def objdump_floor(binary: str) -> tuple[float, float]:
    """``objdump -d`` of the binary to /dev/null, best of two (the page cache warm for both it and rea): wall and
    CPU seconds."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(2):
        before = os.times()
        began = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(["objdump", "-d", binary], stdout=sink, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - began)
        after = os.times()
        best_cpu = min(
            best_cpu, after.children_user - before.children_user + after.children_system - before.children_system
        )
    return best, best_cpu


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(session: ClientSession, run: Run, phase: Phase, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    cpu = cpu_of(run.server)
    began = time.perf_counter()
    result = await session.call_tool(tool, args)
    phase.seconds += time.perf_counter() - began
    phase.server_cpu += cpu_of(run.server) - cpu
    text = text_of(result)
    if result.is_error:
        raise SystemExit(f"{tool} {args} failed: {text[:400]}")
    size = len(text.encode())
    phase.calls += 1
    phase.bytes += size
    doc: dict[str, Any] = json.loads(text)
    body = doc.get("normalized_result", doc)
    if size > run.largest_bytes:
        run.largest, run.largest_bytes = body, size
    return body if isinstance(body, dict) else {}


async def pages(
    session: ClientSession, run: Run, phase: Phase, tool: str, args: dict[str, Any], key: str, limit: int
) -> None:
    offset: int | None = 0
    while offset is not None:
        body = await call(session, run, phase, tool, {**args, "offset": offset, "limit": limit})
        rows = body.get(key) or ()
        # The lean call graph lists each caller's edges under it; the complete one lists edges.
        phase.rows += sum(len(r) for r in rows.values()) if isinstance(rows, dict) else len(rows)
        offset = body.get("next_offset")


async def served(binary: str, detail: str, run: Run) -> None:
    with tempfile.TemporaryDirectory(prefix="rea-served-") as cache:
        params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=server_env(cache))
        began = time.perf_counter()
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                await session.list_tools()
                run.start = time.perf_counter() - began
                run.server = server_pid()
                steps: list[tuple[Phase, Callable[[Phase], Awaitable[Any]]]] = [
                    (Phase("open_binary"), lambda p: call(session, run, p, "open_binary", {"path": binary})),
                    (Phase("binary_overview"), lambda p: call(session, run, p, "binary_overview", {})),
                    (
                        Phase("list_procedures"),
                        lambda p: pages(
                            session, run, p, "list_procedures", {"detail": detail}, "procedures", PROCEDURE_PAGE
                        ),
                    ),
                    (
                        Phase("get_call_graph"),
                        lambda p: pages(
                            session,
                            run,
                            p,
                            "get_call_graph",
                            {"detail": detail},
                            "callees" if detail == "lean" else "edges",
                            EDGE_PAGE,
                        ),
                    ),
                ]
                for phase, step in steps:
                    await step(phase)
                    run.phases.append(phase)


def in_process(binary: str, detail: str) -> list[tuple[str, float, int]]:
    """The same pages built in this process (the tool's handler, its Evidence and the lean presentation's encoding;
    no transport, no SDK): what answer building costs, beside what the client received. Warm: after one pass."""
    from rea import registry as registry_mod
    from rea.budget import encode_result
    from rea.catalog.invoke import invoke
    from rea.context import CallContext
    from rea.presentation import LEAN
    from rea.presentation import present
    from rea.session import Session

    session = Session(registry_mod.load())
    try:
        invoke(session, session.registry.tools["open_binary"], {"path": binary}, CallContext())
        out = []
        for tool, key, limit in (
            ("list_procedures", "procedures", PROCEDURE_PAGE),
            ("get_call_graph", "callees" if detail == "lean" else "edges", EDGE_PAGE),
        ):
            spec = session.registry.tools[tool]
            best = float("inf")
            rows = 0
            for _ in range(2):
                began = time.perf_counter()
                offset: int | None = 0
                rows = 0
                while offset is not None:
                    args = {"offset": offset, "limit": limit, "detail": detail}
                    evidence = invoke(session, spec, args, CallContext()).evidence
                    assert evidence is not None
                    encode_result(present(evidence, LEAN))
                    body = json.loads(msgspec.json.encode(evidence.normalized_result))
                    got = body[key]
                    rows += sum(len(r) for r in got.values()) if isinstance(got, dict) else len(got)
                    offset = body["next_offset"]
                best = min(best, time.perf_counter() - began)
            out.append((tool, best, rows))
        return out
    finally:
        session.close()


def throughput(value: Any) -> tuple[int, float]:
    """The canonical form's size of ``value`` and canonical_digest's MB/s over it (best of five)."""
    size = len(canonical_json(value))
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        canonical_digest(value)
        best = min(best, time.perf_counter() - began)
    return size, size / best / 1e6


def report(run: Run) -> None:
    print(f"\n{run.binary} ({os.path.getsize(run.binary) / 1e6:.1f} MB)")
    print(f"  {'objdump -d (floor)':<22}{run.floor * 1000:9.0f} ms  (CPU {run.floor_cpu * 1000:.0f} ms)")
    print(f"  {'server start':<22}{run.start * 1000:9.0f} ms   (to a first tools/list; not counted)")
    for p in run.phases:
        line = f"  {p.name:<22}{p.seconds * 1000:9.0f} ms  (server CPU {p.server_cpu * 1000:5.0f} ms)"
        line += f"  {p.calls:4d} calls  {p.bytes / 1024:9.1f} KB"
        if p.rows:
            line += f"  {p.rows:7d} rows  {p.bytes / p.rows:6.1f} B/row  {p.seconds * 1e6 / p.rows:6.1f} us/row"
        print(line)
    ratio = run.total / run.floor
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"  {'total':<22}{run.total * 1000:9.0f} ms   {ratio:.2f}x the floor ({verdict} the {GOAL:.0f}x goal)")
    if run.floor_cpu and run.total_cpu:
        ratio_cpu = run.total_cpu / run.floor_cpu
        print(f"  {'server CPU, total':<22}{run.total_cpu * 1000:9.0f} ms   {ratio_cpu:.2f}x objdump's CPU")
    if run.largest is not None:
        size, rate = throughput(run.largest)
        print(f"  canonical_digest on the largest result ({size / 1024:.0f} KB canonical): {rate:.0f} MB/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="*", default=list(DEFAULT_BINARIES))
    parser.add_argument("--detail", choices=("lean", "complete"), default="lean", help="the rows' projection")
    parser.add_argument(
        "--in-process", action="store_true", help="also build the same pages in this process (no transport)"
    )
    parser.add_argument("--no-cli", action="store_true", help="leave out the CLI's start-up figures (startup.py)")
    opts = parser.parse_args()
    if shutil.which("objdump") is None:
        print("objdump is missing (Debian: binutils)", file=sys.stderr)
        return 2
    print(f"rows: {opts.detail}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for binary in opts.binaries:
        if not os.path.isfile(binary):
            print(f"\n{binary}: not on this host, skipped")
            continue
        floor, floor_cpu = objdump_floor(binary)
        run = Run(binary=binary, floor=floor, floor_cpu=floor_cpu)
        anyio.run(served, binary, opts.detail, run)
        report(run)
        if opts.in_process:
            for tool, seconds, rows in in_process(binary, opts.detail):
                per_row = seconds * 1e6 / max(rows, 1)
                print(f"  in process, warm: {tool:<16}{seconds * 1000:7.0f} ms  {per_row:6.1f} us/row")
    if not opts.no_cli:
        cli_figures()
    return 0


def cli_figures() -> None:
    """The CLI's CPU medians and the server's start beside a minimal one, from startup.py (its goals named there)."""
    print("\nthe CLI and the server's start (benchmarks/startup.py, 5 rounds)")
    script = Path(__file__).with_name("startup.py")
    out = subprocess.run([sys.executable, str(script), "--rounds", "5"], capture_output=True, text=True, check=False)
    keep = ("cpu medians", "rea serve: spawn", "minimal mcp server", "cpu time to the tools/list")
    for line in out.stdout.splitlines():
        if line.startswith(keep):
            print("  " + line)
    if out.returncode != 0:
        print("  startup.py failed: " + out.stderr.strip()[-400:])


if __name__ == "__main__":
    raise SystemExit(main())
