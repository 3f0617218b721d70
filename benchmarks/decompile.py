"""native's decompiler (flatline) on a real library: per-function latency, coverage, the whole library on both
workers, peak memory, and angr's decompiler on the same functions beside it.

Per function: ``procedure_pseudo_code`` through the tool, as a client sees it (the worker warm, the analysis cache
out of the way), on ``--sample`` local procedures spread evenly over the library. Whole library: every local
procedure on the two decompile workers (what ``batch_decompile`` runs), counting what decompiled. angr: the
first ``--angr`` of the sample, each function on its own (a CFG of its extent, then angr's Decompiler; the project
load timed apart).

Over MCP stdio (``--mcp``): what a client receives from a fresh ``rea serve`` with an empty cache: the first
answer (the server, the index and the decompile worker all start), then ``--mcp`` functions one at a time, with the
result bytes an agent reads.

    python benchmarks/decompile.py [--binary /usr/lib/x86_64-linux-gnu/libcrypto.so.3] [--sample 300] [--angr 50]
        [--mcp 50]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rea.context import CallContext  # noqa: E402
from rea.errors import ReaError  # noqa: E402
from rea.registry import load  # noqa: E402
from rea.session import Session  # noqa: E402
from rea.testing import call_tool  # noqa: E402

DEFAULT = "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _hwm_kib(pid: int | None) -> int:
    if pid is None:
        return 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _timed(session: Session, addresses: list[str]) -> tuple[list[float], int]:
    times: list[float] = []
    failed = 0
    for a in addresses:
        start = time.perf_counter()
        try:
            call_tool(session, "procedure_pseudo_code", {"procedure": a})
        except ReaError:
            failed += 1
        times.append(time.perf_counter() - start)
    return times, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=DEFAULT)
    parser.add_argument("--sample", type=int, default=300, help="functions timed one at a time")
    parser.add_argument("--angr", type=int, default=50, help="of those, how many angr decompiles too (0: none)")
    parser.add_argument("--angr-timeout", type=int, default=120, help="seconds angr may take on one function")
    parser.add_argument("--no-library", action="store_true", help="skip the whole-library run")
    parser.add_argument("--mcp", type=int, default=50, help="functions asked over MCP stdio (0: none)")
    opts = parser.parse_args()
    if not os.path.exists(opts.binary):
        sys.exit(f"{opts.binary} is not present on this machine")
    os.environ["REA_CACHE_DIR"] = tempfile.mkdtemp(prefix="rea-bench-decompile-")
    from rea_plugins.native import decompile

    if not decompile.engine().available:
        sys.exit(f"native's decompiler cannot run here: {decompile.engine().reason}")
    registry = load()
    provider: Any = registry.providers["native"]
    session, ctx = Session(registry), CallContext()
    started = time.perf_counter()
    session.open(opts.binary, "native", ctx)
    client: Any = session._client
    procs = [p for p in client.program.procedures() if p.kind == "local" and p.part_of is None]
    print(f"{opts.binary}: {len(procs)} local procedures (open and index {time.perf_counter() - started:.1f} s)")

    step = max(1, len(procs) // opts.sample)
    sample = [hex(p.address) for p in procs[::step][: opts.sample]]
    target = client.decompiler()
    target._cache = None  # timed by the engine, not the analysis cache
    _timed(session, sample[:3])  # the worker starts and loads the image: the timings below are warm
    target._done.clear()
    times, failed = _timed(session, sample)
    ms = [t * 1000 for t in times]
    print(
        f"per function (n={len(sample)}, warm, through the tool): p50 {_pct(ms, 0.5):.0f} ms, "
        f"p90 {_pct(ms, 0.9):.0f} ms, max {max(ms):.0f} ms, mean {statistics.fmean(ms):.0f} ms; failed {failed}"
    )

    if not opts.no_library:
        target._done.clear()
        done: dict[int, bool] = {}
        reasons: dict[str, int] = {}
        lock = threading.Lock()

        def heard(p: Any, result: Any) -> None:
            with lock:
                ok = not isinstance(result, ReaError) and result.text is not None
                done[p.address] = ok
                if not ok:
                    why = result.code if isinstance(result, ReaError) else (result.error or "no text")
                    reasons[why] = reasons.get(why, 0) + 1

        start = time.perf_counter()
        target.many(procs, ctx, heard)
        took = time.perf_counter() - start
        ok = sum(done.values())
        print(
            f"whole library on {provider.pool().size} workers: {len(procs)} functions in {took:.1f} s "
            f"({took / max(1, len(procs)) * 1000:.0f} ms each on average); decompiled {ok} "
            f"({100 * ok / max(1, len(procs)):.1f} %); failures by reason {reasons or '{}'}"
        )
    server_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker_mib = max(_hwm_kib(s.channel.pid) for s in provider.pool().slots) / 1024
    print(f"peak RSS: server {server_mib:.0f} MiB, largest decompile worker {worker_mib:.0f} MiB")

    if opts.angr:
        chosen = [int(a, 16) for a in sample[: opts.angr]]
        ends = {p.address: client.program.end_of(p) for p in procs}
        native_times = ms[: len(chosen)]
        angr_ms, angr_failed, loaded = _angr(opts.binary, [(a, ends[a]) for a in chosen], opts.angr_timeout)
        ratio = statistics.median(angr_ms) / max(statistics.median(native_times), 1e-9)
        print(
            f"angr {_dist('angr')} on the same {len(chosen)} functions (project load {loaded:.1f} s apart; each: a "
            f"CFG of the function, then its Decompiler): p50 {_pct(angr_ms, 0.5):.0f} ms, p90 {_pct(angr_ms, 0.9):.0f} "
            f"ms, max {max(angr_ms):.0f} ms, failed or over {opts.angr_timeout} s {angr_failed}; native p50 "
            f"{_pct(native_times, 0.5):.0f} ms on them: native {ratio:.0f}x faster at the median, "
            f"{sum(angr_ms) / max(sum(native_times), 1e-9):.0f}x in total"
        )
    session.close()
    if opts.mcp:
        _over_mcp(opts.binary, sample[: opts.mcp])


def _over_mcp(binary: str, addresses: list[str]) -> None:
    """The same questions as a client asks them: a fresh ``rea serve`` over stdio with an empty cache."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["REA_CACHE_DIR"] = tempfile.mkdtemp(prefix="rea-bench-decompile-mcp-")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=env)

    async def run() -> tuple[float, float, list[float], list[int], int]:
        with open(os.devnull, "w") as devnull:
            start = time.perf_counter()
            async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as client:
                await client.initialize()
                await client.call_tool("open_binary", {"path": binary})
                opened = time.perf_counter() - start
                first = time.perf_counter()
                await client.call_tool("procedure_pseudo_code", {"procedure": addresses[0]})
                first_s = time.perf_counter() - first
                times, sizes, errors = [], [], 0
                for a in addresses[1:]:
                    t = time.perf_counter()
                    res = await client.call_tool("procedure_pseudo_code", {"procedure": a})
                    times.append((time.perf_counter() - t) * 1000)
                    sizes.append(sum(len(getattr(c, "text", "").encode()) for c in res.content))
                    errors += bool(res.is_error)
                return opened, first_s, times, sizes, errors

    opened, first_s, times, sizes, errors = anyio.run(run)
    print(
        f"over MCP stdio, fresh server and cache: start + open_binary {opened:.1f} s, first pseudo code "
        f"{first_s:.1f} s; then {len(times)} functions p50 {_pct(times, 0.5):.0f} ms, p90 {_pct(times, 0.9):.0f} ms, "
        f"max {max(times):.0f} ms; result bytes median {statistics.median(sizes):.0f}, max {max(sizes)}; "
        f"errors {errors}"
    )


def _dist(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def _angr(path: str, functions: list[tuple[int, int]], timeout_s: int) -> tuple[list[float], int, float]:
    """angr's decompiler on each function as its own: a CFGFast over the function's extent, then Decompiler (the
    whole library's CFG, which rea's angr provider builds at open, takes far longer than all of these together).
    A function over ``timeout_s`` (SIGALRM) counts as failed, at ``timeout_s``."""
    import logging
    import signal

    import angr

    logging.getLogger("angr").setLevel(logging.CRITICAL)
    logging.getLogger("cle").setLevel(logging.CRITICAL)
    start = time.perf_counter()
    project = angr.Project(path, auto_load_libs=False, load_debug_info=False)
    loaded = time.perf_counter() - start
    rebase = project.loader.main_object.mapped_base - project.loader.main_object.linked_base

    class Over(Exception):
        pass

    def alarm(*_: Any) -> None:
        raise Over

    signal.signal(signal.SIGALRM, alarm)
    times: list[float] = []
    failed = 0
    for address, end in functions:
        a, e = address + rebase, end + rebase
        start = time.perf_counter()
        signal.alarm(timeout_s)
        try:
            cfg = project.analyses.CFGFast(
                regions=[(a, e)], function_starts=[a], normalize=True, force_complete_scan=False
            )
            dec = project.analyses.Decompiler(cfg.kb.functions[a], cfg=cfg.model)
            if dec.codegen is None or not dec.codegen.text:
                failed += 1
        except Over:
            failed += 1
        except Exception:  # angr's analyses raise many types on code they cannot lift; counted, not shown
            failed += 1
        finally:
            signal.alarm(0)
        times.append(min(time.perf_counter() - start, float(timeout_s)) * 1000)
    return times, failed, loaded


if __name__ == "__main__":
    main()
