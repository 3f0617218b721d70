"""compare_binaries on two builds of real code (issue 25 item 5), checked against the source edits.

cmark-gfm's command as released and with ``CMARK_DIFF_EDITS`` (two functions changed, one added), both stripped:
the diff pairs every procedure the unstripped builds name alike, finds exactly the edited functions changed and
the new one added, through the SDK client.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.registry import load
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.mcp.harness import connect
from tests.realcode.builds import CMARK_DIFF_TRUTH
from tests.realcode.builds import Build
from tests.realcode.builds import cmark_gfm_versions
from tests.waiting import wait_for


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
            provenance = {}
            for path, alias in ((v1.binary, "v1"), (v2.binary, "v2")):
                opened = await client.call_tool("open_binary", {"path": str(path), "alias": alias})
                assert opened.is_error is False
                provenance[alias] = opened.structured_content["analysis_provider_binding"]["provenance"]
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
                # Each side's record names its own target's provenance (the lean presentation's id).
                assert dossier.structured_content["provenance"] == provenance[alias]
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


def _opened(versions: tuple[Build, Build]) -> Session:
    session = Session(load())
    for path, alias in ((versions[0].binary, "v1"), (versions[1].binary, "v2")):
        session.open(os.fspath(path), "native", CallContext(), alias=alias)
    return session


def test_a_bound_answers_a_partial_diff_that_says_what_it_covered(versions: tuple[Build, Build]) -> None:
    """Issue 42 item 5: past max_procedures or max_instructions the answer is typed partial, not a 600-s run."""
    session = _opened(versions)
    try:
        args = {"left": "v1", "right": "v2", "status": ["changed", "added", "removed", "unchanged"], "limit": 1000}
        # 200: the cut falls where read procedures call unread ones (whose neighbourhood the pairing once looked up
        # and failed on, an internal error).
        out = call_tool(session, "compare_binaries", {**args, "max_procedures": 200})
        assert out.evidence is not None
        result = out.evidence.normalized_result
        assert result["complete"] is False and result["bound"] == "max_procedures"
        for side in ("left", "right"):
            assert result[side]["compared"] == 200 < result[side]["procedures"]
        assert len({r["left"]["address"] for r in result["items"] if r.get("left")}) == 200
        assert any(lim.startswith("Partial: max_procedures") for lim in out.evidence.limitations)
        few = call_tool(session, "compare_binaries", {**args, "max_instructions": 500}).evidence
        assert few is not None
        partial = few.normalized_result
        assert partial["complete"] is False and partial["bound"] == "max_instructions"
        assert partial["left"]["compared"] < partial["left"]["procedures"]
        # The bound stops before the procedure that would pass it: what a side reads is within one procedure's.
        assert 500 <= partial["left"]["instructions"] < 500 + 4000
        whole = call_tool(session, "compare_binaries", args).evidence
        assert whole is not None
        assert whole.normalized_result["complete"] is True and "bound" not in whole.normalized_result
        assert whole.normalized_result["left"]["compared"] == whole.normalized_result["left"]["procedures"]
    finally:
        session.close()


def test_a_cancel_during_the_pairing_stops_the_diff(versions: tuple[Build, Build]) -> None:
    """Issue 42 item 5: the pairing and the similarity measures (the diff's own work, no provider call in it) check
    the cancellation; before, a diff whose sides were read ran to its end however it was cancelled."""
    session = _opened(versions)
    try:
        call_tool(session, "compare_binaries", {"left": "v1", "right": "v2"})  # both sides read and kept
        signal = CancelSignal()
        seen: list[str] = []

        def sink(_: float, _total: float | None, message: str) -> None:
            seen.append(message)
            if "pairing" in message:
                signal.cancel()  # the moment the comparison starts its own work

        outcome: list[BaseException | object] = []

        def run() -> None:
            try:
                outcome.append(
                    call_tool(session, "compare_binaries", {"left": "v1", "right": "v2"}, CallContext(signal, sink))
                )
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        wait_for(lambda: not worker.is_alive(), "the cancelled comparison to end")
        assert seen and "pairing" in seen[-1], seen
        (err,) = outcome
        assert isinstance(err, ReaError) and err.code == "cancelled", err
        # Stopped inside the pairing, at its first check: not at the end, where the kernel refuses to record the
        # Evidence of a call cancelled meanwhile (the phase is then the tool's name, and all the work was done).
        assert err.details["phase"].startswith("compare_binaries: pairing"), err.details
    finally:
        session.close()


def test_a_cancel_while_a_side_is_read_stops_the_diff(versions: tuple[Build, Build]) -> None:
    """A cancellation from another thread while the first side is read ends the call, long before the pairing."""
    session = _opened(versions)
    try:
        signal = CancelSignal()
        seen: list[str] = []
        outcome: list[BaseException | object] = []

        def run() -> None:
            try:
                ctx = CallContext(signal, lambda _, _t, m: seen.append(m))
                outcome.append(call_tool(session, "compare_binaries", {"left": "v1", "right": "v2"}, ctx))
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        # Any report of the left side's reading: progress is rate-bound, so one particular count may never be sent.
        wait_for(
            lambda: any("reading the left side" in m for m in seen) or not worker.is_alive(), "the left side's reading"
        )
        signal.cancel()
        wait_for(lambda: not worker.is_alive(), "the cancelled comparison to end")
        (err,) = outcome
        assert isinstance(err, ReaError) and err.code == "cancelled", err
        assert not any("pairing" in m for m in seen), seen
    finally:
        session.close()


def test_a_diff_page_is_drawn_on_request(versions: tuple[Build, Build]) -> None:
    """format mermaid: the page's pairs as left -> right edges labelled with the change; an added one alone, +."""
    session = _opened(versions)
    try:
        args = {"left": "v1", "right": "v2", "status": ["changed", "added"]}
        plain = call_tool(session, "compare_binaries", args).evidence
        drawn = call_tool(session, "compare_binaries", {**args, "format": "mermaid"}).evidence
        assert plain is not None and drawn is not None and "picture" not in plain.normalized_result
        result = drawn.normalized_result
        text = result["picture"]["text"]
        changed = [r for r in result["items"] if r["status"] == "changed"]
        added = [r for r in result["items"] if r["status"] == "added"]
        assert changed and added
        assert text.count('-->|"changed') == len(changed) == result["picture"]["edges"]
        assert text.count('(["+ ') == len(added)
        assert result["items"] == plain.normalized_result["items"]
    finally:
        session.close()
