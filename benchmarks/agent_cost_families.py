"""What answers cost an agent in the .NET, Android and JavaScript families (issue 47), beside each other.

Each family's own benchmark (``benchmarks/agent_cost_<family>.py``) builds its fixtures in this run, puts its
questions to ``rea serve`` over MCP stdio with the SDK client, checks each answer against the source, and ends
with one line ``JSON: {"family": ..., "answers": [{"question", "tool", "bytes", "calls"}, ...]}``. This driver
runs them one after another (each is CPU-bound; the machine may have two cores) and prints, per family, the
answers' bytes (median, largest) and the calls an agent needed per question, against the goal: median at most
4 KB, none over 64 KB.

    python benchmarks/agent_cost_families.py [FAMILY ...]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FAMILIES = ("managed", "android", "javascript")
MEDIAN_GOAL = 4 * 1024
MAX_GOAL = 64 * 1024
PREFIX = "JSON: "


def run(family: str) -> dict[str, Any] | str:
    """The family's figures, or why there are none (its benchmark missing or failing)."""
    script = HERE / f"agent_cost_{family}.py"
    if not script.exists():
        return f"{script.name} is missing"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=1800)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(PREFIX)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        return f"exit {proc.returncode}: {tail[:200]}"
    found: dict[str, Any] = json.loads(lines[-1][len(PREFIX) :])
    return found


def kb(n: float) -> str:
    return f"{n / 1024:7.1f} KB"


def main() -> None:
    chosen = sys.argv[1:] or list(FAMILIES)
    print(
        f"{'family':<11} {'questions':>9} {'median':>10} {'largest':>10} {'calls/question':>15}  "
        "goal (median <= 4 KB, max <= 64 KB)"
    )
    for family in chosen:
        figures = run(family)
        if isinstance(figures, str):
            print(f"{family:<11} {'-':>9}  {figures}")
            continue
        answers = figures["answers"]
        sizes = [a["bytes"] for a in answers]
        calls = [a["calls"] for a in answers]
        median, largest = statistics.median(sizes), max(sizes)
        met = median <= MEDIAN_GOAL and largest <= MAX_GOAL
        print(
            f"{family:<11} {len(answers):>9} {kb(median):>10} {kb(largest):>10} {statistics.median(calls):>15g}  "
            f"{'met' if met else 'MISSED'}"
        )
        for a in sorted(answers, key=lambda a: -a["bytes"])[:3]:
            print(f"{'':<11}   largest: {kb(a['bytes'])}  {a['tool']}: {a['question'][:70]}")


if __name__ == "__main__":
    main()
