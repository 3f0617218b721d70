"""The corpus tools through the official MCP SDK client: progress with counts, then a query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.mcp.harness import connect


def test_triage_and_query_over_mcp(corpus_build: dict[str, Any], tmp_path: Path) -> None:
    index = tmp_path / "mcp.db"
    seen: list[str] = []

    async def main() -> None:
        async with connect(REA_MCP_TOOLSETS="corpus") as client:  # the corpus toolset, whatever the default
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"triage_corpus", "query_corpus", "compare_corpora"} <= names

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(message or "")

            result = await client.call_tool(
                "triage_corpus",
                {"paths": [str(corpus_build["root"])], "index": str(index), "scheduler": "synchronous"},
                progress_callback=on_progress,
            )
            assert not result.is_error, result.content
            assert result.structured_content is not None
            counts = result.structured_content["normalized_result"]["counts"]
            assert counts["analysed"] >= 5
            await anyio.sleep(0.2)  # progress callbacks are delivered asynchronously
            query = await client.call_tool("query_corpus", {"query": "imports", "value": "strcpy", "index": str(index)})
            assert not query.is_error, query.content
            assert query.structured_content is not None
            page = query.structured_content["normalized_result"]
            assert {p for r in page["rows"] for p in r["binary"]["paths"]} == {"bin/alpha", "dup/alpha-copy"}
            bad = await client.call_tool("query_corpus", {"query": "binaries", "index": str(tmp_path / "none.db")})
            assert bad.is_error

    anyio.run(main)
    counted = [m for m in seen if "binaries" in m and "failed" in m and "files/s" in m]
    assert counted, seen
    assert any(m.startswith("triage_corpus") and "analysed" in m for m in seen)
