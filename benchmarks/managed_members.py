"""inspect_managed_members against dnfile's own parse of the same assembly (issue 28: goal at most 2x the parse).

Each side runs in a fresh process so its peak RSS is its own. The assembly is the largest .NET assembly found in
the usual places (Mono's mscorlib.dll when mono is installed), or the path given; run with
``python benchmarks/managed_members.py [ASSEMBLY]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from child_runs import run
from child_runs import time_ratio

CANDIDATES = ("/usr/lib/mono/4.5", "/usr/lib/mono", "/usr/share/dotnet", "/usr/lib/dotnet")

DNFILE = """
import json, resource, sys, time
import dnfile
started = time.monotonic()
pe = dnfile.dnPE(sys.argv[1])
methods = len(pe.net.mdtables.MethodDef.rows) if pe.net and pe.net.mdtables.MethodDef else 0
print(json.dumps({"seconds": round(time.monotonic() - started, 2), "methods": methods,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""

REA = """
import json, resource, sys, time
from rea.registry import default_registry
from rea.session import Session
from rea.testing import result_of
session = Session(default_registry())
started = time.monotonic()
out = result_of(session, "inspect_managed_members", {"path": sys.argv[1], "method_limit": 10000})
took = time.monotonic() - started
session.close()
print(json.dumps({"seconds": round(took, 2), "methods_listed": len(out["methods"]["items"]),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def largest_assembly() -> Path | None:
    found = [p for root in CANDIDATES if Path(root).is_dir() for p in Path(root).rglob("*.dll") if p.is_file()]
    return max(found, key=lambda p: p.stat().st_size, default=None)


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else largest_assembly()
    if path is None:
        print(json.dumps({"skipped": "no .NET assembly found; pass one (apt-get install mono-runtime has many)"}))
        return 0
    parse, rea = run(DNFILE, path), run(REA, path)
    ratio = time_ratio(rea, parse)
    print(
        json.dumps(
            {"assembly": str(path), "bytes": path.stat().st_size, "dnfile": parse, "rea": rea, "time_ratio": ratio}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
