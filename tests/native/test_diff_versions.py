"""compare_binaries and find_similar_functions on two versions of a small C library (issue 48 item 1).

versions.c changes a constant in an export and in a static function, an instruction in two exports, adds an export
and removes a static function. Every change is classified as the source says (instructions or constants only),
the new export and the removed static function are never paired (with each other or anything else, at any
threshold), with and without symbols. Names come from nm on the unstripped builds (strip keeps addresses).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import load
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.fixtures.native.diff_search_fixtures import VERSIONS_TRUTH
from tests.fixtures.native.diff_search_fixtures import VERSIONS_UNCHANGED
from tests.fixtures.native.diff_search_fixtures import library_version
from tests.mcp.harness import connect

ALL = ["changed", "added", "removed", "unchanged"]


def names(path: Path) -> dict[int, str]:
    """Address -> function name of an unstripped build (nm, not a tool under test)."""
    nm = toolchains.require("nm")
    out = subprocess.run([nm, "--defined-only", str(path)], check=True, capture_output=True, text=True).stdout
    return {int(a, 16): n for a, kind, n in (line.split() for line in out.splitlines()) if kind in "tT"}


def classified(rows: list[dict[str, Any]], left: dict[int, str], right: dict[int, str]) -> dict[str, set[str]]:
    """The rows as the truth's categories, by the nm names of each side's address."""

    def name(row: dict[str, Any], side: str) -> str:
        table = left if side == "left" else right
        return table[int(row[side]["address"], 16)]

    out: dict[str, set[str]] = {"constants": set(), "instructions": set(), "added": set(), "removed": set()}
    out["unchanged"] = set()
    for row in rows:
        if row["status"] in ("changed", "unchanged"):
            # A pair is one function on both sides: never two functions paired by force.
            assert name(row, "left") == name(row, "right"), row
            out[row.get("change") or "unchanged"].add(name(row, "left"))
        elif row["status"] == "added":
            out["added"].add(name(row, "right"))
        else:
            out["removed"].add(name(row, "left"))
    return out


@pytest.fixture(scope="module")
def builds() -> dict[str, Path]:
    return {
        "v1": library_version(1),
        "v2": library_version(2),
        "v1-stripped": library_version(1, stripped=True),
        "v2-stripped": library_version(2, stripped=True),
    }


def test_every_change_is_classified_over_mcp(builds: dict[str, Path]) -> None:
    async def main() -> dict[str, Any]:
        async with connect() as client:
            for alias in ("v1", "v2"):
                opened = await client.call_tool("open_binary", {"path": str(builds[alias]), "alias": alias})
                assert opened.is_error is False, opened.content
            page = await client.call_tool("compare_binaries", {"left": "v1", "right": "v2", "status": ALL})
            assert page.is_error is False, page.content
            result: dict[str, Any] = page.structured_content["normalized_result"]
            return result

    result = anyio.run(main)
    assert result["complete"] is True and result["next_offset"] is None
    got = classified(result["items"], names(builds["v1"]), names(builds["v2"]))
    for kind, truth in VERSIONS_TRUTH.items():
        assert got[kind] == truth, (kind, got)
    assert got["unchanged"] >= VERSIONS_UNCHANGED
    counts = result["counts"]
    assert counts["constants_only"] == len(VERSIONS_TRUTH["constants"])
    assert counts["changed"] == len(VERSIONS_TRUTH["constants"]) + len(VERSIONS_TRUTH["instructions"])
    for row in result["items"]:
        if row.get("change") == "constants":
            # Constants only: the masked instructions agree.
            assert row["similarity"] == 1.0
        elif row.get("change") == "instructions":
            assert 0 < row["similarity"] <= 1


@pytest.mark.parametrize("threshold", [None, 0.0])
def test_stripped_builds_classify_alike_and_pair_nothing_by_force(
    builds: dict[str, Path], threshold: float | None
) -> None:
    """Without symbols the static functions are sub_*: they pair by their masked hash, the constant change is still
    seen, and not even a zero similarity threshold pairs the new export with the removed static function."""
    session = Session(load())
    try:
        for alias in ("v1", "v2"):
            session.open(os.fspath(builds[f"{alias}-stripped"]), "native", CallContext(), alias=alias)
        args: dict[str, Any] = {"left": "v1", "right": "v2", "status": ALL, "limit": 1000}
        if threshold is not None:
            args["min_similarity"] = threshold
        result = result_of(session, "compare_binaries", args)
    finally:
        session.close()
    got = classified(result["items"], names(builds["v1"]), names(builds["v2"]))
    for kind, truth in VERSIONS_TRUTH.items():
        assert got[kind] == truth, (kind, got)
    assert result["min_similarity"] == (0.6 if threshold is None else threshold)
    static = next(r for r in result["items"] if r["status"] == "changed" and r["left"]["name"].startswith("sub_"))
    assert static["matched_by"] == "hash" and static["change"] == "constants"


def test_find_similar_functions_ranks_across_the_open_targets(builds: dict[str, Path]) -> None:
    session = Session(load())
    try:
        for alias in ("v1", "v2"):
            session.open(os.fspath(builds[alias]), "native", CallContext(), alias=alias)
        session.activate("v1")
        v2 = session.find("v2").target_id
        out = call_tool(
            session, "find_similar_functions", {"procedure": "lib_checksum", "min_similarity": 0.0, "limit": 1000}
        )
        assert out.evidence is not None
        result = out.evidence.normalized_result
        right = names(builds["v2"])
        top = result["items"][0]
        # The same function in the other version, constants changed only: identical once they are masked.
        assert top["target_id"] == v2 and right[int(top["procedure"]["address"], 16)] == "lib_checksum"
        assert top["identical"] is True and top["similarity"] == 1.0
        scores = [item["similarity"] for item in result["items"]]
        assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
        assert result["targets"] == 2 and result["total"] == len(scores) and result["complete"] is True
        # The query itself is not listed; every other procedure of both targets was compared.
        assert result["query"]["name"] == "lib_checksum"
        assert not [
            i
            for i in result["items"]
            if i["procedure"]["address"] == result["query"]["address"] and i["target_id"] == result["target_id"]
        ]
        # A threshold leaves out the less similar ones, and the page says how many there are.
        strict = result_of(session, "find_similar_functions", {"procedure": "lib_checksum", "min_similarity": 0.9})
        assert strict["total"] < result["total"] and all(i["similarity"] >= 0.9 for i in strict["items"])
        # One target named: only it is searched, the query's own included.
        only = result_of(session, "find_similar_functions", {"procedure": "lib_scale", "targets": ["v2"]})
        assert only["targets"] == 2 and {i["target_id"] for i in only["items"]} <= {v2, result["target_id"]}
    finally:
        session.close()


def test_find_similar_functions_says_which_procedure_it_cannot_find(builds: dict[str, Path]) -> None:
    session = Session(load())
    try:
        session.open(os.fspath(builds["v1"]), "native", CallContext(), alias="v1")
        with pytest.raises(ReaError) as raised:
            call_tool(session, "find_similar_functions", {"procedure": "no_such_function"})
        assert raised.value.code in ("invalid_request", "not_found"), raised.value
    finally:
        session.close()
