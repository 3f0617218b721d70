"""The radare2 provider: open + binary_overview on /bin/ls and a 4+ MB library, per analysis depth.

Each measurement runs in a fresh process (so the peak RSS is its own, the radare2 worker included): open
the target with ``provider_id: radare2`` and REA_RADARE2_ANALYSIS set to the depth, call binary_overview
(worker start, load, whole-program analysis, inventory), then list every procedure's callees. The native
provider's open + binary_overview on the same target is printed alongside for scale.

Run: ``python benchmarks/radare2.py``; ``--target PATH`` (repeatable) replaces the default targets,
``--levels aa,aaa`` picks depths, ``--no-callees`` skips the callee sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def default_targets() -> list[str]:
    out = ["/bin/ls"]
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu"):
        path = os.path.join(d, "libcrypto.so.3")
        if os.path.isfile(path):
            out.append(os.path.realpath(path))
            break
    return out


def child(path: str, provider: str, callees: bool) -> dict[str, Any]:
    """One measurement in this process: open, binary_overview, then optionally every procedure's callees."""
    sys.path.insert(0, str(ROOT))
    from rea import registry
    from rea.session import Session
    from rea.testing import result_of

    session = Session(registry.load())
    began = time.monotonic()
    result_of(session, "open_binary", {"path": path, "provider_id": provider})
    opened = time.monotonic()
    overview = result_of(session, "binary_overview", {})
    done = time.monotonic()
    out: dict[str, Any] = {
        "open_s": opened - began,
        "overview_s": done - opened,
        "procedures": overview["counts"]["procedures"],
        "strings": overview["counts"]["strings"],
    }
    if callees:
        addresses: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
            addresses += [p["address"] for p in page["procedures"] if p["kind"] == "local"]
            offset = page["next_offset"]
        started = time.monotonic()
        edges = 0
        for addr in addresses:
            edges += len(result_of(session, "procedure_callees", {"procedure": addr})["callees"])
        out["callees_s"] = time.monotonic() - started
        out["callee_entries"] = edges
    session.close()
    # The worker is this process's child, reaped by close(): the larger of the two peaks is the run's.
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    out["peak_rss_mb"] = peak / 1024
    return out


def measure(path: str, provider: str, level: str, callees: bool) -> dict[str, Any]:
    env = {**os.environ, "REA_RADARE2_ANALYSIS": level, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, __file__, "--child", path, "--provider", provider] + (["--callees"] if callees else [])
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{provider} on {path} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", help="binary to measure (repeatable)")
    parser.add_argument("--levels", default="aa,aaa", help="comma-separated radare2 analysis depths")
    parser.add_argument("--no-callees", action="store_true", help="skip the sweep of every procedure's callees")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--provider", default="radare2", help=argparse.SUPPRESS)
    parser.add_argument("--callees", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.provider, args.callees)))
        return 0
    targets = args.target or default_targets()
    print(
        f"{'target':<28} {'size':>8} {'provider':<12} {'open':>6} {'overview':>9} {'total':>7} {'procs':>6} "
        f"{'callees':>8} {'peak RSS':>9}"
    )
    for path in targets:
        size = os.path.getsize(path) / 1e6
        runs = [("native", "native", False)] + [
            (f"radare2 {lvl}", lvl, not args.no_callees) for lvl in args.levels.split(",")
        ]
        for label, level, callees in runs:
            r = measure(path, "native" if label == "native" else "radare2", level, callees)
            total = r["open_s"] + r["overview_s"]
            sweep = f"{r['callees_s']:7.1f}s" if "callees_s" in r else f"{'-':>8}"
            rss = f"{r['peak_rss_mb']:7.0f}MB"
            print(
                f"{os.path.basename(path)[:28]:<28} {size:6.1f}MB {label:<12} {r['open_s']:5.2f}s "
                f"{r['overview_s']:8.2f}s {total:6.2f}s {r['procedures']:>6} {sweep} {rss}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
