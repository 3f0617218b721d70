"""What Android answers cost an agent (issue 47): bytes and calls per question, on an APK built in this run.

The two versions of the test APK are assembled from smali with apktool and signed with apksigner
(``tests/android/androidfixtures.py``); the questions and the check of each answer are the tests' own
(``tests/android/androidquestions.py``). Each is put to ``rea serve`` over MCP stdio with the SDK client, as an
agent would: one call per question (a tool of the on-demand android toolset may be called directly). The last
line is ``JSON: {"family": "android", "answers": [...]}`` for ``benchmarks/agent_cost_families.py``.

    python benchmarks/agent_cost_android.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "android")]

import androidfixtures  # noqa: E402
import anyio  # noqa: E402
from androidquestions import QUESTIONS, ask  # noqa: E402

from tests.mcp.harness import connect  # noqa: E402

MEDIAN_GOAL = 4 * 1024
MAX_GOAL = 64 * 1024


async def measure(v1: Path, v2: Path) -> list[dict[str, Any]]:
    rows = []
    async with connect() as client:
        for q in QUESTIONS:
            result, size = await ask(client, q, v1, v2)
            rows.append({"question": q.question, "tool": q.tool, "bytes": size, "calls": 1, "right": q.right(result)})
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rea-agent-cost-android-") as tmp:
        out = Path(tmp)
        v1 = androidfixtures.build_apk(out)
        v2 = androidfixtures.build_apk(out, version=2)
        rows = anyio.run(measure, v1, v2)
    width = max(len(r["question"]) for r in rows)
    print(f"{'question':<{width}}  {'tool':<34} {'bytes':>7} {'calls':>5}  right")
    for r in rows:
        print(f"{r['question']:<{width}}  {r['tool']:<34} {r['bytes']:>7} {r['calls']:>5}  {r['right']}")
    sizes = [r["bytes"] for r in rows]
    median, largest = statistics.median(sizes), max(sizes)
    print(
        f"median {median:.0f} B (goal {MEDIAN_GOAL}), max {largest} B (goal {MAX_GOAL}), "
        f"calls per question {statistics.median(r['calls'] for r in rows):.0f}"
    )
    wrong = [r["question"] for r in rows if not r["right"]]
    if wrong:
        print(f"wrong answers: {wrong}", file=sys.stderr)
        return 1
    answers = [{k: r[k] for k in ("question", "tool", "bytes", "calls")} for r in rows]
    print("JSON: " + json.dumps({"family": "android", "answers": answers}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
