"""The session ledger's memory bound (``REA_LEDGER_MEMORY_MB``): a session that lists every procedure of a large
library, with a small bound, the default one and none.

Each run is a fresh process: native open and its analysis, then ``list_procedures`` over every page (1,000
procedures a page, each page an Evidence record the ledger retains), then a summary view of the first page by its id
(read back from disk where it was spilled). Prints the pages' canonical bytes, what the ledger holds in memory, how
many records it spilled, the resident memory the listing left held (RSS after it less RSS before it), and the
listing's time.

Run: ``python benchmarks/ledger.py [PATH]`` (default: the largest libLLVM on the machine, with a fresh analysis
cache per run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import gc, json, sys, time
from rea.budget import measured_length
from rea.catalog.invoke import invoke
from rea.context import CallContext
from rea.evidence import Evidence
from rea.registry import load
from rea.session import Session
from rea.testing import result_of
session = Session(load())
result_of(session, "open_binary", {"path": sys.argv[1], "provider_id": "native"})
result_of(session, "list_procedures", {"offset": 0, "limit": 1})  # the analysis, before the measured listing
def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024
gc.collect()
base = rss_mb()
t = time.perf_counter()
ids, canonical, offset = [], 0, 0
listing_tool = session.registry.tools["list_procedures"]
while offset is not None:
    record = invoke(session, listing_tool, {"offset": offset, "limit": 1000}, CallContext()).evidence
    ids.append(record.evidence_id)
    canonical += measured_length(record.evidence_id) or 0
    offset = record.normalized_result["next_offset"]
listing = time.perf_counter() - t
del record
gc.collect()
held = rss_mb()
t = time.perf_counter()
view = result_of(session, "inspect_analysis_view", {
    "source": {"kind": "retained-evidence", "evidence_id": ids[0]}, "view": {"kind": "summary"}})
view_s = time.perf_counter() - t
ledger = session.ledger
spilled = sum(not isinstance(r, Evidence) for r in ledger._records.values())
print(json.dumps({
    "pages": len(ids), "canonical_mb": canonical / 2**20, "resident_mb": ledger.resident_bytes / 2**20,
    "spilled": spilled, "rss_held_mb": held - base, "listing_s": listing, "view_ms": view_s * 1000,
    "view_ok": bool(view),
}))
session.close()
"""


def largest_libllvm() -> str | None:
    found = sorted(
        (p for p in Path("/usr/lib/x86_64-linux-gnu").glob("libLLVM*.so*") if p.is_file() and not p.is_symlink()),
        key=lambda p: p.stat().st_size,
    )
    return str(found[-1]) if found else None


def run(path: str, bound_mb: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="rea-bench-ledger-") as cache:
        env = {**os.environ, "REA_LEDGER_MEMORY_MB": str(bound_mb), "REA_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else largest_libllvm()
    if path is None:
        sys.exit("no libLLVM here: pass a large binary's path")
    print(f"{Path(path).name} ({Path(path).stat().st_size / 2**20:.1f} MiB): every procedure, 1,000 a page")
    header = ("bound", "pages", "pages MiB", "in memory", "spilled", "RSS held", "list", "view")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (10, 6, 10, 10, 8, 9, 8, 8), strict=True)))
    for label, bound in (("4 MiB", 4), ("32 MiB", 32), ("none", 1 << 20)):
        r = run(path, bound)
        print(
            f"{label:>10} {r['pages']:>6} {r['canonical_mb']:>10.1f} {r['resident_mb']:>10.1f} {r['spilled']:>8} "
            f"{r['rss_held_mb']:>6.0f} MB {r['listing_s']:>6.2f} s {r['view_ms']:>5.0f} ms"
        )


if __name__ == "__main__":
    main()
