"""get_call_graph without a procedure: every call edge of the program, paged, on every provider (issue 27 item 2).

The whole-program answer (``program_call_graph``) must say what each procedure's ``procedure_callees`` says,
edge for edge: the dispatch program (tests/fixtures/conformance/dispatch.c), stripped, on x86-64 ELF.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from rea.operations.shapes import EDGE_KIND_CODES
from rea.operations.shapes import ProgramCallGraph
from rea.operations.shapes import ProgramCallGraphRows
from rea.registry import Registry
from rea.testing import result_of
from tests.conformance import references_support as rs

PROVIDERS = ("native", "angr", "radare2")


@pytest.fixture(scope="module")
def sessions(rea_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[rs.Sessions]:
    yield from rs.sessions_fixture(rea_registry, tmp_path_factory.mktemp("annotations"))


def _same_facts(complete: dict[str, Any], lean: dict[str, Any]) -> None:
    """The default lean page says what the complete page says: each edge as a row under its caller, each name but a
    made one."""
    msgspec.convert(lean, ProgramCallGraphRows)
    fields = ("offset", "limit", "total", "next_offset", "procedures")
    assert {k: complete[k] for k in fields} == {k: lean[k] for k in fields}
    callees: dict[str, list[list[Any]]] = {}
    for e in complete["edges"]:
        callee = e["callee"] if e["callee"] is not None else e.get("callee_name")
        callees.setdefault(e["caller"], []).append([callee, EDGE_KIND_CODES[e["kind"]], e["calls"]])
    assert lean["callees"] == callees and list(lean["callees"]) == list(callees)
    named = {a: n for a, n in complete["names"].items() if n != f"sub_{a[2:]}"}
    for e in complete["edges"]:
        if e["callee"] is not None and e.get("callee_name") and e["callee"] not in complete["names"]:
            named[e["callee"]] = e["callee_name"]
    assert lean["names"] == named


@pytest.mark.parametrize("provider_id", PROVIDERS)
def test_the_whole_graph_is_every_procedures_callees(sessions: rs.Sessions, provider_id: str) -> None:
    session = sessions.get(provider_id, rs.build("elf-x64").stripped)
    edges: list[dict[str, object]] = []
    names: dict[str, str] = {}
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = result_of(session, "get_call_graph", {"offset": offset, "limit": 7, "detail": "complete"})
        msgspec.convert(page, ProgramCallGraph)  # the advertised shape
        _same_facts(page, result_of(session, "get_call_graph", {"offset": offset, "limit": 7}))
        assert len(page["edges"]) <= 7
        edges += page["edges"]
        names.update(page["names"])
        offset = page["next_offset"]
        pages += 1
    assert pages > 1 and len(edges) == page["total"]
    order = [(int(str(e["caller"]), 16), e["callee"] is None, int(str(e["callee"] or "0x0"), 16)) for e in edges]
    assert order == sorted(order), "edges are ordered by caller, then callee"
    procedures = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    assert page["procedures"] == len(procedures)
    expected: Counter[tuple[str, str | None, str]] = Counter()
    for p in procedures:
        for c in result_of(session, "procedure_callees", {"procedure": p["address"]})["callees"]:
            expected[p["address"], c["address"], c["kind"]] += len(c["call_sites"])
    got: Counter[tuple[str, str | None, str]] = Counter()
    for e in edges:
        got[str(e["caller"]), None if e["callee"] is None else str(e["callee"]), str(e["kind"])] += int(str(e["calls"]))
    assert got == expected
    # main calls getenv (an import) and the dispatcher; every caller on a page is named there.
    main = next(p["address"] for p in procedures if p["name"] == "main")
    assert any(e["caller"] == main for e in edges)
    assert all(e["caller"] in names for e in edges if e["caller"] == main)
