"""What Android answers cost an agent (issue 47): bytes and calls per question, on an APK built in this run.

The two versions of the test APK are assembled from smali with apktool and signed with apksigner
(``tests/android/androidfixtures.py``); the questions and the check of each answer are the tests' own
(``tests/android/androidquestions.py``). Each is put to ``rea serve`` over MCP stdio with the SDK client, as an
agent would: one call per question (a tool of the on-demand android toolset may be called directly). The last
line is ``JSON: {"family": "android", "answers": [...]}`` for ``benchmarks/agent_cost_families.py``.

    python benchmarks/agent_cost_android.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "android")]

import androidfixtures  # noqa: E402
import anyio  # noqa: E402
from androidquestions import QUESTIONS  # noqa: E402
from androidquestions import Question  # noqa: E402
from androidquestions import ask  # noqa: E402

from benchmarks.agent_answers import report  # noqa: E402
from tests.mcp.harness import connect  # noqa: E402

# Classes of the scaled application: each logs through the framework and calls the next one, so its graph,
# its framework callers and its strings are too many to list in one answer.
SCALE = 2000
SCALED = "(2,000-class app) "


def generated(index: int) -> str:
    nxt = (index + 1) % SCALE
    return f""".class public Lcom/example/rea/gen/Gen{index};
.super Ljava/lang/Object;

.method public static run(I)I
    .registers 3
    const-string v0, "https://gen.example.test/{index}"
    const-string v1, "Gen"
    invoke-static {{v1, v0}}, Landroid/util/Log;->d(Ljava/lang/String;Ljava/lang/String;)I
    invoke-static {{p0}}, Lcom/example/rea/gen/Gen{nxt};->run(I)I
    move-result v0
    return v0
.end method
"""


def _scaled_graph(r: dict[str, Any]) -> bool:
    return r["counts"]["classes"] == SCALE + len(androidfixtures.SMALI) and "edges" not in r


def _scaled_calls(r: dict[str, Any]) -> bool:
    return r["pages"]["edges"]["total"] == SCALE and len(r["edges"]) == 100


def _scaled_log(r: dict[str, Any]) -> bool:
    return r["subject_external"] and r["page"]["total"] == SCALE and len(r["references"]) == 100


def _scaled_strings(r: dict[str, Any]) -> bool:
    return r["strings_matched"] == SCALE and r["page"]["total"] == SCALE


SCALED_QUESTIONS = (
    Question(
        SCALED + "What is the application's shape?",
        "project_android_application_graph",
        lambda a, b: {"path": str(a)},
        _scaled_graph,
    ),
    Question(
        SCALED + "Which classes of com.example.rea.gen call each other (first page)?",
        "project_android_application_graph",
        lambda a, b: {"path": str(a), "detail": "full", "package": "com.example.rea.gen", "edge_kind": "calls"},
        _scaled_calls,
    ),
    Question(
        SCALED + "Which app methods call android.util.Log.d (first page)?",
        "trace_android_references",
        lambda a, b: {"path": str(a), "class_name": "android.util.Log", "member": "d"},
        _scaled_log,
    ),
    Question(
        SCALED + "Which methods load a gen.example.test URL (first page)?",
        "trace_android_references",
        lambda a, b: {"path": str(a), "string": "gen.example.test", "string_match": "substring"},
        _scaled_strings,
    ),
)


async def measure(v1: Path, v2: Path, big: Path) -> list[dict[str, Any]]:
    rows = []
    async with connect() as client:
        asked = [(q, v1) for q in QUESTIONS] + [(q, big) for q in SCALED_QUESTIONS]
        for q, first in asked:
            result, size = await ask(client, q, first, v2)
            rows.append({"question": q.question, "tool": q.tool, "bytes": size, "calls": 1, "right": q.right(result)})
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rea-agent-cost-android-") as tmp:
        out = Path(tmp)
        v1 = androidfixtures.build_apk(out)
        v2 = androidfixtures.build_apk(out, version=2)
        big = androidfixtures.build_apk(out, extra={f"gen/Gen{i}": generated(i) for i in range(SCALE)}, name="scaled")
        rows = anyio.run(measure, v1, v2, big)
    return report("android", rows, tool_width=34, verdict=False)


if __name__ == "__main__":
    sys.exit(main())
