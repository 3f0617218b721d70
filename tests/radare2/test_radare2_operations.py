"""radare2's answers beyond the shared conformance suite: pseudo-C, blocks, references, formats, stripped code."""

from __future__ import annotations

from typing import Any

import pytest

import tests.fixtures.native.native_fixtures as nf
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.engine_lifecycle import op
from tests.radare2.conftest import require_radare2
from tests.radare2.r2_support import open_r2


def _named(session: Session, name: str) -> dict[str, Any]:
    return op(session, "procedure_address", procedure=name)


def test_pseudo_code_is_marked_as_radare2_pseudo_c(r2_session: Session) -> None:
    out = call_tool(r2_session, "procedure_pseudo_code", {"procedure": "main"})
    assert out.evidence is not None
    body = out.evidence.normalized_result
    assert (body["name"], body["language"], body["decompiler"]) == ("main", "c", "radare2-pdc")
    assert body["dialect"] == "radare2 pseudo-C" and "greet" in body["text"]
    assert any("pseudo-C (pdc)" in lim and "not a decompiler" in lim for lim in out.evidence.limitations)


def test_jump_table_cases_are_block_successors(r2_session: Session) -> None:
    blocks = op(r2_session, "procedure_blocks", procedure=nf.JUMP_TABLE_FUNCTION)
    switch = max(blocks["blocks"], key=lambda b: len(b["successors"]))
    assert len(switch["successors"]) >= nf.JUMP_TABLE_CASES
    targets = {e["to"] for e in blocks["edges"]}
    assert set(switch["successors"]) <= targets
    starts = {b["start"] for b in blocks["blocks"]}
    assert set(switch["successors"]) <= starts
    refs = op(r2_session, "procedure_references", procedure=nf.JUMP_TABLE_FUNCTION, limit=1000)["references"]
    assert sum(1 for r in refs if r["kind"] == "computed") >= nf.JUMP_TABLE_CASES


def test_references_both_ways_and_xrefs(r2_session: Session) -> None:
    main, greet = _named(r2_session, "main"), _named(r2_session, "greet")
    out = op(r2_session, "procedure_references", procedure="main", limit=1000)
    assert out["direction"] == "outgoing" and out["procedure"]["name"] == "main"
    calls = {r["to"] for r in out["references"] if r["kind"] == "call"}
    assert greet["address"] in calls
    assert any(r["kind"] == "indirect" and r["to"] is None for r in out["references"])
    assert all(r["from_procedure"] == main["address"] for r in out["references"])
    incoming = op(r2_session, "procedure_references", procedure="greet", direction="incoming")["references"]
    assert any(r["from_procedure"] == main["address"] and r["kind"] == "call" for r in incoming)
    hit = op(r2_session, "search_strings", pattern="REA_FIXTURE_GREETING")["strings"][0]
    xrefs = op(r2_session, "xrefs", address=hit["address"])["references"]
    assert [(r["from_procedure"], r["kind"]) for r in xrefs] == [(greet["address"], "data")]
    callers = op(r2_session, "procedure_callers", procedure="greet")["callers"]
    assert [c["name"] for c in callers] == ["main"]


def test_instruction_pages_match_the_listing(r2_session: Session) -> None:
    listing = op(r2_session, "procedure_assembly", procedure="main", split_operands=True)
    assert listing["truncated"] is False and listing["instructions"]
    first = listing["instructions"][0]
    assert first["address"] == _named(r2_session, "main")["address"] and first["bytes"]
    assert first["text"] == f"{first['mnemonic']} {first['operands']}".strip()
    paged: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = op(
            r2_session, "read_function_instructions", procedure="main", offset=offset, limit=7, split_operands=True
        )
        paged += page["instructions"]
        offset = page["next_offset"]
    assert paged == listing["instructions"]
    info = op(r2_session, "procedure_info", procedure="main")
    assert info["instruction_count"] == len(paged) and info["calling_convention"] == "sysv"
    assert info["signature"] and "main" in info["signature"] and info["section"] == ".text"


def test_selectors_and_addresses(r2_session: Session) -> None:
    main = _named(r2_session, "main")
    assert op(r2_session, "procedure_address", procedure=main["address"])["name"] == "main"
    assert op(r2_session, "address_name", address=main["address"])["name"] == "main"
    inside = hex(int(main["address"], 16) + 2)
    assert op(r2_session, "resolve_containing_procedure", address=inside)["procedure"]["name"] == "main"
    assert op(r2_session, "resolve_containing_procedure", address="0x0")["procedure"] is None
    found = op(r2_session, "search_procedures", pattern="^op_(add|sub)$", mode="regex")["procedures"]
    assert [p["name"] for p in found] == ["op_add", "op_sub"]


@pytest.fixture
def opened(rea_registry: Registry, native_fixtures: Any) -> Any:
    require_radare2()
    sessions: list[Session] = []

    def open_fixture(fixture_id: str) -> Session:
        session = Session(rea_registry)
        sessions.append(session)
        open_r2(session, native_fixtures.get(fixture_id).path)
        return session

    yield open_fixture
    for session in sessions:
        assert session.close() == []


def test_pe_thunks_read_the_import_slot(opened: Any) -> None:
    session = opened("pe-x64-exe")
    procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    thunk = next(p for p in procs if p["name"] == "puts" and p["kind"] == "thunk")
    slot = next(p for p in procs if p["name"] == "puts" and p["kind"] == "import")
    refs = op(session, "procedure_references", procedure=thunk["address"])["references"]
    assert {(r["kind"], r["to"], r["to_name"]) for r in refs} == {
        ("external", slot["address"], "puts"),
        ("jump", slot["address"], "puts"),
    }
    callees = op(session, "procedure_callees", procedure=thunk["address"])["callees"]
    assert [(c["address"], c["kind"]) for c in callees] == [(slot["address"], "import")]
    greet = op(session, "procedure_callees", procedure="greet")["callees"]
    assert [(c["name"], c["kind"]) for c in greet] == [("puts", "import")]


def test_universal_binary_reads_the_host_slice(opened: Any) -> None:
    doc = op(opened("macho-fat"), "list_documents")["documents"][0]
    assert doc["format"] == "mach-o-universal" and set(doc["slices"]) == {"x86_64", "arm64"}
    assert doc["slice"] == doc["architecture"] == "x86_64"


def test_stripped_build_keeps_every_function_start(opened: Any) -> None:
    symbolized, stripped = opened("elf-x64"), opened("elf-x64-stripped")
    expected = {_named(symbolized, name)["address"] for name in nf.PROGRAM_FUNCTIONS}
    procs = result_of(stripped, "list_procedures", {"limit": 1000})["procedures"]
    assert expected <= {p["address"] for p in procs}
    names = {p["address"]: p["name"] for p in procs}
    assert all(names[a] == f"sub_{int(a, 16):x}" for a in expected if names[a] != "main")


def test_layout_agrees_with_the_file(r2_session: Session, rea_registry: Registry, native_fixtures: Any) -> None:
    layout = op(r2_session, "inspect_binary_layout")
    assert (layout["format"], layout["architecture"]) == ("elf", "x86_64")
    m = layout["mitigations"]
    assert m["nx"] is True and m["pie"] is True and m["relro"] in ("partial", "full")
    assert layout["linkage"]["interpreter"].endswith("ld-linux-x86-64.so.2")
    assert "libc.so.6" in layout["linkage"]["needed"]
    assert {"puts", "printf", "strlen"} <= {i["name"] for i in layout["imports"]}
    native = Session(rea_registry)
    try:
        call_tool(native, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
        theirs = result_of(native, "inspect_binary_layout", {})["mitigations"]
    finally:
        native.close()
    assert {k: m[k] for k in ("nx", "pie", "relro", "canary", "fortify")} == {
        k: theirs[k] for k in ("nx", "pie", "relro", "canary", "fortify")
    }
