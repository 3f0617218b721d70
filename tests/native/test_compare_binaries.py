"""compare_binaries on two builds of real code (issue 25 item 5), checked against the source edits.

cmark-gfm's command as released and with ``CMARK_DIFF_EDITS`` (two functions changed, one added), both stripped:
the diff pairs every procedure the unstripped builds name alike, finds exactly the edited functions changed and
the new one added, through the SDK client.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import toolchains
from tests.mcp.harness import connect
from tests.realcode.builds import CMARK_DIFF_TRUTH, Build, cmark_gfm_versions


def truth(build: Build) -> dict[int, str]:
    """Address -> function name of an unstripped build, every copy of a name kept (static functions repeat)."""
    nm = toolchains.require("nm")
    out = subprocess.run([nm, "--defined-only", str(build.unstripped)], check=True, capture_output=True, text=True)
    return {int(a, 16): n for a, kind, n in (line.split() for line in out.stdout.splitlines()) if kind in "tT"}


def score(rows: list[dict[str, Any]], left: dict[int, str], right: dict[int, str]) -> tuple[float, float]:
    """Pairing precision (pairs whose truth names agree) and recall (of the names both builds have)."""
    pairs = [r for r in rows if r["status"] in ("changed", "unchanged")]
    judged = [
        (left.get(int(r["left"]["address"], 16)), right.get(int(r["right"]["address"], 16)))
        for r in pairs
        if int(r["left"]["address"], 16) in left and int(r["right"]["address"], 16) in right
    ]
    good = sum(1 for a, b in judged if a == b)
    common = sum((Counter(left.values()) & Counter(right.values())).values())
    return good / len(judged), good / common


@pytest.fixture(scope="module")
def versions() -> tuple[Build, Build]:
    return cmark_gfm_versions()


def test_the_diff_of_two_stripped_builds_is_the_source_diff(versions: tuple[Build, Build]) -> None:
    v1, v2 = versions

    async def main() -> list[dict[str, Any]]:
        async with connect() as client:
            for path, alias in ((v1.binary, "v1"), (v2.binary, "v2")):
                opened = await client.call_tool("open_binary", {"path": str(path), "alias": alias})
                assert opened.is_error is False
            rows: list[dict[str, Any]] = []
            offset: int | None = 0
            while offset is not None:
                args = {"left": "v1", "right": "v2", "status": ["changed", "added", "removed", "unchanged"]}
                page = await client.call_tool("compare_binaries", {**args, "offset": offset, "limit": 200})
                assert page.is_error is False, page.content
                result = page.structured_content["normalized_result"]
                rows += result["items"]
                offset = result["next_offset"]
            default = await client.call_tool("compare_binaries", {"left": "v1", "right": "v2"})
            lean = default.structured_content["normalized_result"]
            assert lean["counts"]["unchanged"] > 500 and {r["status"] for r in lean["items"]} <= {"changed", "added"}
            # A changed pair goes on to compare_functions: each side's dossier from its own target.
            pair = next(r for r in lean["items"] if r["status"] == "changed")
            sides = []
            for side, alias in (("left", "v1"), ("right", "v2")):
                args = {"procedure": pair[side]["address"], "target": alias}
                dossier = await client.call_tool("analyze_function", args)
                assert dossier.is_error is False, dossier.content
                assert (
                    dossier.structured_content["subject"]["name"]
                    == Path(v1.binary if alias == "v1" else v2.binary).name
                )
                sides.append({"kind": "retained-evidence", "evidence_id": dossier.structured_content["evidence_id"]})
            compared = await client.call_tool("compare_functions", {"left": sides[0], "right": sides[1]})
            assert compared.is_error is False, compared.content
            verdict = compared.structured_content["normalized_result"]
            assert verdict["status"] == "changed" and verdict["comparison"] == "versions"
            same = await client.call_tool("compare_binaries", {"left": "v1", "right": "v1"})
            assert same.is_error is True
            assert json.loads(same.content[0].text)["error"]["code"] == "invalid_request"
            return rows

    rows = anyio.run(main)
    left, right = truth(v1), truth(v2)

    def names(status: str, side: str) -> set[str | None]:
        table = left if side == "left" else right
        return {table.get(int(r[side]["address"], 16)) for r in rows if r["status"] == status}

    assert names("changed", "left") == names("changed", "right") == CMARK_DIFF_TRUTH["changed"]
    assert names("added", "right") == CMARK_DIFF_TRUTH["added"]
    assert not [r for r in rows if r["status"] == "removed"]
    precision, recall = score(rows, left, right)
    assert precision == 1.0 and recall >= 0.99, (precision, recall)
    changed = [r for r in rows if r["status"] == "changed"]
    assert all(0 < r["similarity"] < 1 for r in changed)


def test_a_diff_needs_two_open_targets(hello_elf: Path) -> None:
    async def main() -> dict[str, Any]:
        async with connect() as client:
            await client.call_tool("open_binary", {"path": str(hello_elf), "alias": "only"})
            missing = await client.call_tool("compare_binaries", {"left": "only", "right": "other"})
            assert missing.is_error is True
            err: dict[str, Any] = json.loads(missing.content[0].text)["error"]
            return err

    err = anyio.run(main)
    assert err["code"] == "invalid_request" and err["details"]["issues"][0]["path"] == "right"
