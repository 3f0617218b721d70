"""What issue 47's JavaScript questions cost an agent: result bytes and calls per question, over ``rea serve``.

A page bundle built by esbuild in this run, in two versions minified differently (names kept with a source map;
names mangled with one, and without), with template literals, class-field handlers, object-literal methods and
``module.exports.x`` assignments (``tests/javascript/minified.py``). Each question (``tests/javascript/questions.py``)
is a plan of MCP calls through the official SDK's stdio client, checked against the sources; the bytes are those of
each result's text content (what a host hands the model), summed over the question's calls. Goals: median at most
4 KB per answer, no result over 64 KB. The last line is ``JSON: {...}`` for the families' aggregate.

    python benchmarks/agent_cost_javascript.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "javascript")]

import appfixtures  # noqa: E402
import minified  # noqa: E402
from questions import MAX_RESULT_BYTES  # noqa: E402
from questions import Question  # noqa: E402
from questions import answer  # noqa: E402
from questions import questions  # noqa: E402

from tests.mcp.harness import connect  # noqa: E402

MEDIAN_GOAL = 4 * 1024


def build(root: Path) -> dict[str, Path]:
    reason = appfixtures.install_npm_tools()
    if reason is not None:
        raise SystemExit(reason)
    return {
        "v1": minified.build_v1(root / "v1"),
        "v2": minified.build_v2(root / "v2"),
        "v2n": minified.build_v2_without_map(root / "v2n"),
    }


async def run(asked: list[Question], pages: dict[str, Path]) -> None:
    async with connect() as client:
        for question in asked:
            await answer(client, question, pages)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rea-js-cost-") as tmp:
        pages = build(Path(tmp))
        asked = questions()
        anyio.run(run, asked, pages)
    width = max(len(q.text) for q in asked)
    print(f"{'question':<{width}}  {'tool':<30} {'bytes':>8} {'largest':>8} {'calls':>5}  right")
    for q in asked:
        print(f"{q.text:<{width}}  {q.tool:<30} {sum(q.sizes):>8} {max(q.sizes):>8} {q.calls:>5}  {q.right}")
    totals = [sum(q.sizes) for q in asked]
    largest = max(max(q.sizes) for q in asked)
    median = statistics.median(totals)
    print(
        f"median {median / 1024:.1f} KB per answer (goal <= {MEDIAN_GOAL // 1024} KB: "
        f"{'met' if median <= MEDIAN_GOAL else 'MISSED'}); largest result {largest / 1024:.1f} KB (goal <= "
        f"{MAX_RESULT_BYTES // 1024} KB: {'met' if largest <= MAX_RESULT_BYTES else 'MISSED'}); "
        f"{sum(q.right for q in asked)} of {len(asked)} right"
    )
    answers = [{"question": q.text, "tool": q.tool, "bytes": sum(q.sizes), "calls": q.calls} for q in asked]
    print("JSON: " + json.dumps({"family": "javascript", "answers": answers}))


if __name__ == "__main__":
    main()
