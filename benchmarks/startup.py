"""Start-up cost: `rea providers list --json` wall time, and importing the registry with every plugin.

Goal: under 300 ms each (plugins import their engines lazily, only when a provider is used).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    cli = [wall([sys.executable, "-m", "rea", "providers", "list", "--json"]) for _ in range(RUNS)]
    load = [wall([sys.executable, "-c", "import rea.registry as r; r.load()"]) for _ in range(RUNS)]
    bare = [wall([sys.executable, "-c", "pass"]) for _ in range(RUNS)]
    print(f"python -c pass (interpreter floor)    median {statistics.median(bare):7.1f} ms")
    print(f"rea providers list --json             median {statistics.median(cli):7.1f} ms  (goal < 300 ms)")
    print(f"import registry + load every plugin   median {statistics.median(load):7.1f} ms  (goal < 300 ms)")
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import sys, rea.registry as r; r.load(); "
                "print(','.join(m for m in ('angr','lief','capstone','tree_sitter','mcp','jsonschema') "
                "if m in sys.modules))"
            ),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"heavy modules imported by loading:    {heavy or 'none'}")


if __name__ == "__main__":
    main()
