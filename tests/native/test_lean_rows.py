"""Lean rows (issue 45 item 2): get_call_graph's whole-program page by default, and list_procedures and
search_procedures with ``detail: lean``, cost at most 40 bytes a row with the page's names, and say the same facts as
the complete form (``detail: complete``, whose evidence id is the one the page had before the lean default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import registry as registry_mod
from rea.annotations import AnnotationStore
from rea.operations.shapes import EDGE_KIND_CODES
from rea.operations.shapes import PROCEDURE_KIND_CODES
from rea.operations.shapes import REFERENCE_KIND_CODES
from rea.operations.shapes import ProcedureRows
from rea.operations.shapes import ProgramCallGraphRows
from rea.operations.shapes import ReferenceRows
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of

ROW_BUDGET = 40
TARGETS = ("shapes-elf-x64", "elf-x64-so", "pe-x64-exe", "/bin/ls")


def _size(value: Any) -> int:
    return len(msgspec.json.encode(value))


@pytest.fixture(params=TARGETS)
def session(
    request: pytest.FixtureRequest, native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    path = request.param if request.param.startswith("/") else native_fixtures.get(request.param).path
    # An empty annotation store of its own: no analyst's names from the real home.
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path / "annotations"))
    s = Session(registry_mod.load(), annotations=AnnotationStore(str(tmp_path / "annotations")))
    result_of(s, "open_binary", {"path": path, "provider_id": "native"})
    yield s
    s.close()


def test_call_graph_pages_are_lean_and_say_what_the_complete_pages_say(session: Session) -> None:
    offset: int | None = 0
    edges = row_bytes = name_bytes = 0
    while offset is not None:
        lean = result_of(session, "get_call_graph", {"offset": offset, "limit": 1000})
        msgspec.convert(lean, ProgramCallGraphRows)
        complete = result_of(session, "get_call_graph", {"offset": offset, "limit": 1000, "detail": "complete"})
        want: dict[str, list[list[Any]]] = {}
        for e in complete["edges"]:
            want.setdefault(e["caller"], []).append([e["callee"], EDGE_KIND_CODES[e["kind"]], e["calls"]])
        assert lean["callees"] == want
        named = {a: n for a, n in complete["names"].items() if n != f"sub_{a[2:]}"}
        named.update({e["callee"]: e["callee_name"] for e in complete["edges"] if e.get("callee_name")})
        assert lean["names"] == named
        edges += len(complete["edges"])
        # The paging fields and the legend are the page's, not a row's.
        row_bytes += _size(lean["callees"])
        name_bytes += _size(lean["names"])
        offset = lean["next_offset"]
    assert edges > 0
    assert row_bytes / edges <= ROW_BUDGET, f"{row_bytes / edges:.1f} bytes an edge"
    if edges >= 500:
        # A page's names are shared by its rows: with the names, a real program's edge is still within budget (a
        # fixture of a dozen edges, each procedure named for one or two of them, cannot spread them).
        assert (row_bytes + name_bytes) / edges <= ROW_BUDGET, f"{(row_bytes + name_bytes) / edges:.1f} bytes an edge"


def test_the_complete_page_keeps_its_evidence_id_and_the_lean_one_says_it_is_lean(session: Session) -> None:
    complete = call_tool(session, "get_call_graph", {"limit": 50, "detail": "complete"}).evidence
    assert complete is not None and "detail" not in complete.parameters
    lean = call_tool(session, "get_call_graph", {"limit": 50}).evidence
    assert lean is not None and lean.parameters["detail"] == "lean"
    assert lean.evidence_id != complete.evidence_id


@pytest.mark.parametrize("tool", ["list_procedures", "search_procedures"])
def test_procedure_pages_are_lean_on_request_with_the_same_facts(session: Session, tool: str) -> None:
    args: dict[str, Any] = {"pattern": "."} if tool == "search_procedures" else {}
    if tool == "search_procedures":
        args["mode"] = "regex"
    offset: int | None = 0
    rows = row_bytes = 0
    while offset is not None:
        lean = result_of(session, tool, {**args, "offset": offset, "limit": 100, "detail": "lean"})
        msgspec.convert(lean, ProcedureRows)
        complete = result_of(session, tool, {**args, "offset": offset, "limit": 100})
        assert [[p["address"], p["name"], p["size"], p["kind"]] for p in complete["procedures"]] == [
            [a, n if n is not None else f"sub_{a[2:]}", s, next(k for k, c in PROCEDURE_KIND_CODES.items() if c == kc)]
            for a, n, s, kc in lean["procedures"]
        ]
        assert all(int(p["end"], 16) == int(p["address"], 16) + p["size"] for p in complete["procedures"])
        assert lean.get("parts", {}) == {p["address"]: p["part_of"] for p in complete["procedures"] if p["part_of"]}
        rows += len(lean["procedures"])
        row_bytes += _size(lean["procedures"]) + _size(lean.get("parts", {}))
        offset = lean["next_offset"]
    assert rows > 0
    # A procedure's row carries its name, so the budget holds for names of a usual length (not a C++ program's).
    assert row_bytes / rows <= ROW_BUDGET, f"{row_bytes / rows:.1f} bytes a procedure"


@pytest.mark.parametrize("direction", ["outgoing", "incoming"])
def test_reference_pages_are_lean_on_request_with_the_same_facts(session: Session, direction: str) -> None:
    procedures = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    busiest = max((p for p in procedures if p["kind"] == "local"), key=lambda p: p["size"])
    args = {"procedure": busiest["address"], "direction": direction, "limit": 1000}
    lean = result_of(session, "procedure_references", {**args, "detail": "lean"})
    msgspec.convert(lean, ReferenceRows)
    complete = result_of(session, "procedure_references", args)
    assert lean["procedure"] == complete["procedure"] and lean["total"] == complete["total"]
    codes = {c: k for k, c in REFERENCE_KIND_CODES.items()}
    grouped: dict[str, list[list[Any]]] = {}
    for r in complete["references"]:
        grouped.setdefault(r.get("from_procedure") or "", []).append(
            [r["from"], r["to"], REFERENCE_KIND_CODES[r["kind"]]]
        )
    assert lean["references"] == grouped
    assert {codes[k] for rows in lean["references"].values() for _, _, k in rows} <= set(REFERENCE_KIND_CODES)
    for r in complete["references"]:
        name = r.get("to_name")
        if name and name != f"sub_{r['to'][2:]}":
            assert lean["names"][r["to"]] == name
    rows = sum(len(r) for r in lean["references"].values())
    assert rows == len(complete["references"])
    if rows >= 50:
        per_row = (_size(lean["references"]) + _size(lean["names"])) / rows
        assert per_row <= ROW_BUDGET, f"{per_row:.1f} bytes a reference"


def test_a_user_name_shows_in_the_lean_call_graph(
    native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path / "annotations"))
    s = Session(registry_mod.load(), annotations=AnnotationStore(str(tmp_path / "annotations")))
    try:
        result_of(s, "open_binary", {"path": native_fixtures.get("shapes-elf-x64").path, "provider_id": "native"})
        before = result_of(s, "get_call_graph", {"limit": 1000})
        caller = next(iter(before["callees"]))
        result_of(s, "set_address_name", {"address": caller, "name": "renamed_by_analyst"})
        after = result_of(s, "get_call_graph", {"limit": 1000})
        assert after["names"][caller] == "renamed_by_analyst"
        assert after["callees"] == before["callees"]
        complete = result_of(s, "get_call_graph", {"limit": 1000, "detail": "complete"})
        assert complete["names"][caller] == "renamed_by_analyst"
    finally:
        s.close()
