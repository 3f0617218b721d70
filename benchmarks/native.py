"""Benchmark the native provider (and angr when registered) on a fixture, /bin/ls and the largest ELF library.

Prints, per binary and provider: open + binary_overview time, list_procedures time, peak RSS, warm p50 of
procedure_info, and the overlap of native's procedure list with angr's. Run: ``python benchmarks/native.py``.
Options: ``--angr-timeout S`` bounds each angr step (default 300 s); ``--skip-angr-large`` skips angr on the
large library (CFGFast on a 100+ MB library can take hours).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def largest_elf_library() -> str | None:
    best: tuple[int, str] | None = None
    for root in ("/usr/lib", "/usr/lib64", "/usr/local/lib", "/opt", "/root", "/home"):
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                if ".so" not in name:
                    continue
                path = os.path.join(dirpath, name)
                try:
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    size = os.path.getsize(path)
                    with open(path, "rb") as fh:
                        if fh.read(4) != b"\x7fELF":
                            continue
                except OSError:
                    continue
                if best is None or size > best[0]:
                    best = (size, path)
    return best[1] if best else None


def fixture_binary() -> str:
    src = ROOT / "tests" / "fixtures" / "native" / "program.c"
    out = Path(tempfile.gettempdir()) / "rea-bench-fixture"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(out), str(src)], check=True)
    return str(out)


# Each measurement runs in a fresh child so peak RSS belongs to one provider and one binary.
CHILD = r"""
import json, resource, statistics, sys, time
from rea.registry import load
from rea.session import Session
from rea.testing import result_of
path, provider = sys.argv[1], sys.argv[2]
out = {}
session = Session(load())
t = time.perf_counter()
result_of(session, "open_binary", {"path": path, "provider_id": provider})
overview = result_of(session, "binary_overview", {})
out["open_overview_s"] = time.perf_counter() - t
# Again on a fresh session: providers that keep a worker across opens (native's parse worker) show warm cost.
session.close()
session = Session(session.registry)
t = time.perf_counter()
result_of(session, "open_binary", {"path": path, "provider_id": provider})
result_of(session, "binary_overview", {})
out["reopen_overview_s"] = time.perf_counter() - t
t = time.perf_counter()
procs, offset = [], 0
while offset is not None:
    page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
    procs.extend(page["procedures"])
    offset = page["next_offset"]
out["list_procedures_s"] = time.perf_counter() - t
out["procedures"] = len(procs)
local = [p for p in procs if p["kind"] == "local"]
sample = [p["address"] for p in local[:: max(1, len(local) // 50)]][:50]
for a in sample:  # warm
    result_of(session, "procedure_info", {"procedure": a})
times = []
for a in sample:
    t = time.perf_counter()
    result_of(session, "procedure_info", {"procedure": a})
    times.append(time.perf_counter() - t)
out["procedure_info_warm_p50_ms"] = statistics.median(times) * 1000 if times else None
registry = session.registry
session.close()
for p in registry.providers.values():  # reap provider-owned workers so RUSAGE_CHILDREN covers them
    stop = getattr(getattr(p, "_worker", None), "stop", None)
    if callable(stop):
        stop()
out["peak_rss_mb"] = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                         resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
# Every kind counts for the overlap: engines differ on whether a PLT stub is "local" or "import".
out["addresses"] = sorted(p["address"] for p in procs)
print(json.dumps(out))
"""


def measure(path: str, provider: str, timeout: float) -> dict[str, Any]:
    """Run CHILD in a fresh interpreter and return its figures (or the error)."""
    import json

    started = time.perf_counter()
    env = dict(os.environ)
    if provider == "angr":  # give angr's own deadlines the benchmark's budget, so it can finish if it will
        budget = str(int(timeout * 1000))
        env.update({"REA_ANGR_LOAD_TIMEOUT_MS": budget, "REA_ANGR_CFG_TIMEOUT_MS": budget,
                    "REA_ANGR_QUERY_TIMEOUT_MS": budget})
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path, provider], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s", "elapsed_s": time.perf_counter() - started}
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or ["failed"])[-1][:200], "elapsed_s": time.perf_counter() - started}
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}" if value < 10 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--angr-timeout", type=float, default=300.0)
    ap.add_argument("--skip-angr-large", action="store_true")
    args = ap.parse_args()
    from rea.registry import load

    have_angr = "angr" in load().providers
    large = largest_elf_library()
    targets = [("fixture", fixture_binary()), ("/bin/ls", "/bin/ls")]
    if large:
        targets.append((f"largest .so ({os.path.getsize(large) >> 20} MiB)", large))
    print(f"{'binary':<28} {'provider':<8} {'open+overview':>14} {'again':>9} {'list_procs':>11} {'procs':>7} "
          f"{'info p50':>9} {'peak RSS':>9}")
    for label, path in targets:
        results = {"native": measure(path, "native", 900)}
        if have_angr and not (args.skip_angr_large and label.startswith("largest")):
            results["angr"] = measure(path, "angr", args.angr_timeout)
        for pid, r in results.items():
            if "error" in r:
                print(f"{label:<28} {pid:<8} error after {r['elapsed_s']:.0f} s: {r['error']}")
                continue
            print(f"{label:<28} {pid:<8} {fmt(r['open_overview_s'], ' s'):>14} {fmt(r['reopen_overview_s'], ' s'):>9} "
                  f"{fmt(r['list_procedures_s'], ' s'):>11} "
                  f"{r['procedures']:>7} {fmt(r['procedure_info_warm_p50_ms'], ' ms'):>9} "
                  f"{fmt(r['peak_rss_mb'], ' MB'):>9}")
        nat, ang = results.get("native", {}), results.get("angr", {})
        if "error" in ang and "open_overview_s" in nat:
            bound = ang["elapsed_s"] / max(nat["open_overview_s"], 1e-9)
            print(f"{'':<28} angr gave no overview in {ang['elapsed_s']:.0f} s: native is at least {bound:.0f}x faster")
        if "addresses" in nat and "addresses" in ang and ang["addresses"]:
            a, b = set(nat["addresses"]), set(ang["addresses"])
            print(f"{'':<28} overlap: {100 * len(a & b) / max(1, len(b)):.1f}% of angr's functions found by native, "
                  f"{100 * len(a & b) / max(1, len(a)):.1f}% of native's found by angr")
            speed = ang["open_overview_s"] / max(nat["open_overview_s"], 1e-9)
            warm = ang["reopen_overview_s"] / max(nat["reopen_overview_s"], 1e-9)
            print(f"{'':<28} native open+overview is {speed:.1f}x faster than angr's ({warm:.1f}x on reopen)")
    print(f"(benchmark process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
