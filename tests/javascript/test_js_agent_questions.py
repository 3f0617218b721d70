"""Issue 47's JavaScript questions over ``rea serve`` (the SDK's stdio client) on a page bundle esbuild minified two
ways at test time: each answered right by the tool named, no result over 64 KB."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from questions import MAX_RESULT_BYTES
from questions import answer
from questions import questions

from tests.mcp.harness import connect


@pytest.fixture(scope="module")
def pages(page_v1: Path, page_v2: Path, page_v2_without_map: Path) -> dict[str, Path]:
    return {"v1": page_v1, "v2": page_v2, "v2n": page_v2_without_map}


@pytest.mark.parametrize("number", range(len(questions())), ids=[q.text for q in questions()])
def test_each_question_is_answered_right_within_64_kb(number: int, pages: dict[str, Path]) -> None:
    question = questions()[number]

    async def main() -> None:
        async with connect() as client:
            await answer(client, question, pages)

    anyio.run(main)
    assert question.right, question.text
    assert max(question.sizes) <= MAX_RESULT_BYTES, question.sizes
