"""native's decompiler (flatline) on a real library: per-function latency, coverage, the whole library on both
workers, peak memory, and angr's decompiler on the same functions beside it.

Per function: ``procedure_pseudo_code`` through the tool, as a client sees it (the worker warm, the analysis cache
out of the way), on ``--sample`` local procedures spread evenly over the library. Whole library: every local
procedure on the two decompile workers (what ``batch_decompile`` runs), counting what decompiled. angr: the
first ``--angr`` of the sample through angr's provider (its open, which builds its CFG, timed apart).

    python benchmarks/decompile.py [--binary /usr/lib/x86_64-linux-gnu/libcrypto.so.3] [--sample 300] [--angr 50]
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
    parser.add_argument("--no-library", action="store_true", help="skip the whole-library run")
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
    session.close()

    if opts.angr:
        chosen = sample[: opts.angr]
        angr_session = Session(registry)
        start = time.perf_counter()
        try:
            angr_session.open(opts.binary, "angr", ctx)
        except ReaError as exc:
            print(f"angr: not run ({exc.code}: {exc.message})")
            return
        opened = time.perf_counter() - start
        native_times = ms[: len(chosen)]
        angr_times, angr_failed = _timed(angr_session, chosen)
        angr_ms = [t * 1000 for t in angr_times]
        angr_session.close()
        ratio = statistics.median(angr_ms) / max(statistics.median(native_times), 1e-9)
        print(
            f"angr on the same {len(chosen)} functions (open {opened:.1f} s apart): p50 {_pct(angr_ms, 0.5):.0f} ms, "
            f"p90 {_pct(angr_ms, 0.9):.0f} ms, max {max(angr_ms):.0f} ms, failed {angr_failed}; native p50 "
            f"{_pct(native_times, 0.5):.0f} ms on them: native {ratio:.1f}x faster at the median, "
            f"{sum(angr_ms) / max(sum(native_times), 1e-9):.1f}x in total"
        )


if __name__ == "__main__":
    main()
