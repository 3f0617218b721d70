"""The report a family's agent-cost benchmark prints (benchmarks/agent_cost_*.py): a row per question, the median
and largest answer against the goals, and the ``JSON:`` line ``benchmarks/agent_cost_families.py`` reads."""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

MEDIAN_GOAL = 4 * 1024
MAX_GOAL = 64 * 1024


def report(family: str, rows: list[dict[str, Any]], *, tool_width: int, verdict: bool = True) -> int:
    """Prints the rows (question, tool, bytes, calls, right) and their figures, with whether the goals were met when
    ``verdict``; 1 when an answer was wrong, else 0."""
    width = max(len(r["question"]) for r in rows)
    print(f"{'question':<{width}}  {'tool':<{tool_width}} {'bytes':>7} {'calls':>5}  right")
    for r in rows:
        print(f"{r['question']:<{width}}  {r['tool']:<{tool_width}} {r['bytes']:>7} {r['calls']:>5}  {r['right']}")
    sizes = [r["bytes"] for r in rows]
    median, largest = statistics.median(sizes), max(sizes)
    calls = f"calls per question {statistics.median(r['calls'] for r in rows):.0f}"
    goals = f"median {median:.0f} B (goal {MEDIAN_GOAL}), max {largest} B (goal {MAX_GOAL})"
    if verdict:
        met = median <= MEDIAN_GOAL and largest <= MAX_GOAL
        print(f"{goals}: {'met' if met else 'MISSED'}; {calls}")
    else:
        print(f"{goals}, {calls}")
    wrong = [r["question"] for r in rows if not r["right"]]
    if wrong:
        print(f"wrong answers: {wrong}", file=sys.stderr)
        return 1
    answers = [{k: r[k] for k in ("question", "tool", "bytes", "calls")} for r in rows]
    print("JSON: " + json.dumps({"family": family, "answers": answers}))
    return 0
