"""Memory and time of analysing one 16 MiB line of JavaScript (issue 24 item 7): prints the process's peak RSS.

Before the parse bound this took 1,190 MiB and 5.7 s (the syntax tree alone 850 MiB); run with
``python benchmarks/javascript_parse_bound.py``.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    from rea.registry import default_registry
    from rea.session import Session
    from rea.testing import result_of

    with tempfile.TemporaryDirectory(prefix="rea-bench-js-") as tmp:
        app = Path(tmp)
        numbers = ",".join(str(i) for i in range(2_200_000))
        (app / "big.js").write_text(f'var labels = ["needle label"]; var a = [{numbers}];\n')
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        session = Session(default_registry())
        started = time.monotonic()
        result = result_of(session, "analyze_javascript_application", {"input_path": str(app)})
        took = time.monotonic() - started
        session.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        json.dumps(
            {
                "file_mib": 16,
                "seconds": round(took, 2),
                "peak_rss_mib": peak,
                "before_mib": before,
                "modules": len(result.get("modules", [])) if isinstance(result, dict) else None,
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
