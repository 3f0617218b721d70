"""References from data, indirect sites, symbolized operands and stub procedures, on every provider.

The program (tests/fixtures/conformance/dispatch.c) dispatches through ``static op_fn table[4]`` with a
bounded index, calls ``getenv("LS_COLORS")`` and is built in the session for x86-64 ELF (also with IBT, whose
import stubs live in ``.plt.sec``), arm64 ELF and x86-64 PE; providers read the stripped build, and every
expected address comes from the symbolized one (references_support.truth).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from rea.errors import ReaError
from rea.operations.shapes import InstructionInspection
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.conformance import references_support as rs

PROVIDERS = tuple(sorted(rs.EXPECTED))
STUB_SECTIONS = (".plt", ".plt.sec", ".plt.got")


@pytest.fixture(scope="module")
def sessions(rea_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[rs.Sessions]:
    yield from rs.sessions_fixture(rea_registry, tmp_path_factory.mktemp("annotations"))


def _open(sessions: rs.Sessions, provider_id: str, target_id: str) -> tuple[Session, rs.Truth]:
    b = rs.build(target_id)
    return sessions.get(provider_id, b.stripped), rs.truth(b)


def test_every_native_provider_has_a_row(rea_registry: Registry) -> None:
    """A provider that answers xrefs is held to a row of the expectations table."""
    answering = sorted(pid for pid, p in rea_registry.providers.items() if "xrefs" in p.descriptor.operations)
    assert answering, "no registered provider answers xrefs"
    assert set(answering) <= set(rs.EXPECTED), f"providers without a row: {set(answering) - set(rs.EXPECTED)}"


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.DATA_REFS, PROVIDERS, rs.TABLE_TARGETS))
def test_table_slots_are_data_references(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    for op in rs.OPS:
        address = hex(t.symbols[op])
        refs = result_of(session, "xrefs", {"address": address})["references"]
        data = {r["from"] for r in refs if r["kind"] == "data"}
        assert hex(t.slots[op]) in data, f"xrefs({op} {address}) lacks the data reference from its slot: {refs}"
        incoming = result_of(
            session, "procedure_references", {"procedure": address, "direction": "incoming", "limit": 1000}
        )["references"]
        assert any(r["kind"] == "data" and r["from"] == hex(t.slots[op]) for r in incoming), incoming


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.INDIRECT, PROVIDERS, rs.TABLE_TARGETS))
def test_dispatch_is_an_indirect_callee(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    apply, site = hex(t.symbols["apply"]), hex(t.dispatch)
    callees = result_of(session, "procedure_callees", {"procedure": apply})["callees"]
    unknown = [c for c in callees if c["address"] is None and c["kind"] == "indirect"]
    assert unknown and site in unknown[0]["call_sites"], f"no indirect callee at {site}: {callees}"
    graph = result_of(session, "get_call_graph", {"address": apply, "depth": 1})
    assert graph["unresolved_call_sites"] >= 1, graph
    # The table's targets stay procedures of their own: the dispatcher does not absorb them.
    for op in rs.OPS:
        found = result_of(session, "resolve_containing_procedure", {"address": hex(t.symbols[op])})["procedure"]
        assert found is not None and found["address"] == hex(t.symbols[op]), (op, found)


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.POINTER_TABLE, PROVIDERS, rs.TABLE_TARGETS))
def test_pointer_table_targets_are_resolved(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    apply, site = hex(t.symbols["apply"]), hex(t.dispatch)
    result = result_of(session, "resolve_native_call_targets", {"procedure": apply, "address": site})
    rows = result["call_sites"]
    assert [r["address"] for r in rows] == [site], rows
    row = rows[0]
    assert row["status"] == "resolved", row
    assert [t_["address"] for t_ in row["targets"]] == [hex(t.symbols[op]) for op in sorted(rs.OPS, key=t.symbols.get)]
    assert {t_["provenance"] for t_ in row["targets"]} == {"pointer-table"}, row


def _instructions(session: Session, procedure: str) -> list[dict[str, Any]]:
    return list(result_of(session, "procedure_assembly", {"procedure": procedure})["instructions"])


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.SYMBOLIZED, PROVIDERS, rs.TABLE_TARGETS))
def test_import_call_named_and_string_load_annotated(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    rows = _instructions(session, hex(t.symbols["main"]))
    calls = [r for r in rows if any(rs.base_name(s.get("name")) == "getenv" for s in r.get("symbols", []))]
    assert calls, f"no instruction of main names getenv: {[r.get('symbolized', r['text']) for r in rows]}"
    assert "getenv" in calls[0]["symbolized"], calls[0]
    assert calls[0]["text"] != calls[0]["symbolized"], "text stays as the engine printed it"
    loads = [r for r in rows if any(s.get("string") == "LS_COLORS" for s in r.get("symbols", []))]
    assert loads, f'no instruction of main is annotated with "LS_COLORS": {[r.get("symbolized") for r in rows]}'
    symbol = next(s for s in loads[0]["symbols"] if s.get("string") == "LS_COLORS")
    assert symbol["address"] == hex(t.string), symbol
    assert '"LS_COLORS"' in loads[0]["symbolized"], loads[0]
    one = result_of(session, "inspect_native_instruction", {"address": calls[0]["address"]})["instruction"]
    assert "getenv" in one.get("symbolized", ""), one


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.SYMBOLIZED, PROVIDERS, ("elf-x64",)))
def test_user_names_reach_symbolized_operands(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    apply = hex(t.symbols["apply"])
    result_of(session, "set_address_name", {"address": apply, "name": "dispatch_operation"})
    try:
        rows = _instructions(session, hex(t.symbols["main"]))
        named = [r for r in rows if any(s["address"] == apply for s in r.get("symbols", []))]
        assert named, rows
        assert "dispatch_operation" in named[0]["symbolized"], named[0]
        assert any(s["name"] == "dispatch_operation" for s in named[0]["symbols"]), named[0]
    finally:
        result_of(session, "set_address_name", {"address": apply, "name": ""})


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.STUBS, PROVIDERS, ("elf-x64", "elf-x64-ibt")))
def test_stub_sections_hold_stubs(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, _ = _open(sessions, provider_id, target_id)
    segments = result_of(session, "list_segments", {})["segments"]
    stubs = {
        s["name"]: (int(s["start"], 16), int(s["end"], 16))
        for s in segments
        if s["kind"] == "section" and s["name"] in STUB_SECTIONS
    }
    assert ".plt" in stubs, segments
    procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    inside = {name: [p for p in procs if lo <= int(p["address"], 16) < hi] for name, (lo, hi) in stubs.items()}
    plt0 = [p for p in inside[".plt"] if int(p["address"], 16) == stubs[".plt"][0]]
    assert plt0 and plt0[0]["kind"] == "thunk", f"PLT0 is not a thunk: {plt0}"
    for name, found in inside.items():
        for p in found:
            # One stub each: 16 bytes on x86-64 (8 in .plt.got without IBT).
            assert p["size"] <= 16, f"{p['name']} at {p['address']} spans {p['size']} bytes of {name}"
    imports = [p for name in (".plt.sec",) if name in inside for p in inside[name]] or inside[".plt"][1:]
    assert {rs.base_name(p["name"]) for p in imports if p["kind"] == "import"} >= {"getenv", "puts"}, imports


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params("instruction", PROVIDERS, rs.TABLE_TARGETS))
def test_instruction_facts_at_the_dispatch(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    site = hex(t.dispatch)
    out = result_of(session, "inspect_native_instruction", {"address": site})
    found = out["instruction"]
    # One shape whichever path answers: the procedure beside the instruction, never inside it (issue 26).
    msgspec.convert(out, type=InstructionInspection, strict=True)
    assert "procedure" not in found and out["source"] in ("provider", "read_function_instructions")
    assert found["address"] == site and out["procedure"]["address"] == hex(t.symbols["apply"]), out
    if "flow" in found:  # the provider's own facts (a provider without the operation reports them unavailable)
        assert found["flow"] == "jump" and found["fallthrough"] is None, found
        assert found["targets"] == [hex(t.symbols[op]) for op in sorted(rs.OPS, key=t.symbols.get)], found
    with pytest.raises(ReaError) as inside:
        result_of(session, "inspect_native_instruction", {"address": hex(t.dispatch + 1)})
    assert inside.value.code == "invalid_request" and site in inside.value.message, inside.value.message


@pytest.mark.parametrize(("provider_id", "target_id"), rs.params(rs.DATA_TYPES, PROVIDERS, rs.TABLE_TARGETS))
def test_table_slot_is_a_pointer(sessions: rs.Sessions, provider_id: str, target_id: str) -> None:
    session, t = _open(sessions, provider_id, target_id)
    found = result_of(session, "inspect_native_data_type", {"address": hex(t.slots["op_add"])})
    assert found["type"].get("kind") == "pointer" and found["type"].get("target") == hex(t.symbols["op_add"]), found
    text = result_of(session, "inspect_native_data_type", {"address": hex(t.string)})
    assert text["type"].get("kind") == "string" and text.get("value") == "LS_COLORS", text
