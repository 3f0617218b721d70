"""compare_binaries on two builds of real code: its time and its pairing precision and recall.

cmark-gfm's command as released and with the edits of ``tests.realcode.builds.CMARK_DIFF_EDITS`` (x86-64 ELF,
gcc -O2 -fno-inline), stripped and unstripped, on each provider given. Truth: the unstripped builds' symbol
tables (a pair is right when both addresses carry the same name) and the edits (which functions changed).

    python benchmarks/compare_binaries.py [--providers native,radare2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rea.context import CallContext  # noqa: E402
from rea.registry import load  # noqa: E402
from rea.session import Session  # noqa: E402
from rea.testing import call_tool  # noqa: E402
from tests.native.test_compare_binaries import score  # noqa: E402
from tests.native.test_compare_binaries import truth  # noqa: E402
from tests.realcode.builds import CMARK_DIFF_TRUTH  # noqa: E402
from tests.realcode.builds import cmark_gfm_versions  # noqa: E402

ALL = ["changed", "added", "removed", "unchanged"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", default="native", help="comma-separated provider ids")
    opts = parser.parse_args()
    v1, v2 = cmark_gfm_versions()
    left, right = truth(v1), truth(v2)
    registry = load()
    for provider in opts.providers.split(","):
        for kind in ("stripped", "unstripped"):
            a, b = (v1.binary, v2.binary) if kind == "stripped" else (v1.unstripped, v2.unstripped)
            session, ctx = Session(registry), CallContext()
            started = time.perf_counter()
            session.open(os.fspath(a), provider, ctx, alias="v1")
            session.open(os.fspath(b), provider, ctx, alias="v2")
            opened = time.perf_counter()
            out = call_tool(session, "compare_binaries", {"left": "v1", "right": "v2", "status": ALL, "limit": 1000})
            done = time.perf_counter()
            session.close()
            assert out.evidence is not None
            result = out.evidence.normalized_result
            rows = result["items"]
            precision, recall = score(rows, left, right)
            changed = {left.get(int(r["left"]["address"], 16)) for r in rows if r["status"] == "changed"}
            c = result["counts"]
            print(
                f"{provider:8} {kind:10} open {opened - started:5.2f} s, diff {done - opened:5.2f} s; "
                f"{result['left']['procedures']}/{result['right']['procedures']} procedures; pairs by name "
                f"{c['by_name']}, hash {c['by_hash']}, neighbourhood {c['by_neighbourhood']}, similarity "
                f"{c['by_similarity']}; precision {precision:.3f}, recall {recall:.3f}; changed found "
                f"{sorted(n or '?' for n in changed)} (truth {sorted(CMARK_DIFF_TRUTH['changed'])})"
            )


if __name__ == "__main__":
    main()
