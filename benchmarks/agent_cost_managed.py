""".NET answers and what they cost an agent (issue 47): bytes and calls per question, on assemblies built in this run.

Two versions of a C# library and an application against it are compiled with Debian's mcs (mono-mcs) and a C
library with gcc (``tests/managed/csfixtures.py``); the questions and the check of each answer are the tests'
own (``tests/managed/managedquestions.py``). Each is put to ``rea serve`` over MCP stdio with the SDK client, as an
agent would: one call per question (a tool of the on-demand managed toolset may be called directly). The bytes
are those of each result's text content, in the server's default (lean) presentation. Goals: median at most 4 KB,
none over 64 KB. The last line is ``JSON: {"family": "managed", "answers": [...]}`` for
``benchmarks/agent_cost_families.py``.

    python benchmarks/agent_cost_managed.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "managed")]

import anyio  # noqa: E402
import csfixtures  # noqa: E402
from managedquestions import QUESTIONS  # noqa: E402
from managedquestions import ask  # noqa: E402

from benchmarks.agent_answers import report  # noqa: E402
from tests.mcp.harness import connect  # noqa: E402


async def measure(fixtures: dict[str, Path]) -> list[dict[str, Any]]:
    rows = []
    async with connect() as client:
        for q in QUESTIONS:
            result, size = await ask(client, q, fixtures)
            rows.append({"question": q.question, "tool": q.tool, "bytes": size, "calls": 1, "right": q.right(result)})
    return rows


def main() -> int:
    mcs, gcc = shutil.which("mcs"), shutil.which("gcc")
    if mcs is None or gcc is None:
        print("mcs and gcc are needed to build the fixtures (apt-get install mono-mcs gcc)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rea-agent-cost-managed-") as tmp:
        fixtures = csfixtures.build_all(mcs, gcc, Path(tmp))
        rows = anyio.run(measure, fixtures)
    return report("managed", rows, tool_width=32)


if __name__ == "__main__":
    sys.exit(main())
