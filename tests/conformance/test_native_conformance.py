"""One conformance suite for every native-analysis provider, over every compiled fixture.

Expected facts come from the fixture sources (native_fixtures MANIFEST constants), never from a
provider. A provider that is not registered, unavailable, or that does not support a fixture's format
is skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

import tests.fixtures.native.native_fixtures as nf
from rea.context import CallContext
from rea.errors import ReaError
from rea.operations.shapes import OPERATION_TYPES
from rea.operations.shapes import RESULT_TYPES
from rea.operations.shapes import DataInspection
from rea.operations.shapes import InstructionInspection
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.binary.core.shapes import CallTargets

CASES = (
    [("native", fid) for fid in nf.FIXTURE_IDS]
    + [("angr", "elf-x64"), ("angr", "pe-x64-exe")]
    + [
        # Real Ghidra only: without GHIDRA_INSTALL_DIR these skip with that reason (tests/ghidra has the fake).
        ("ghidra", "elf-x64"),
        ("ghidra", "elf-x64-stripped"),
        ("ghidra", "pe-x64-exe"),
    ]
)
CASES += [("radare2", fid) for fid in nf.FIXTURE_IDS]


@dataclass
class Opened:
    session: Session
    fixture: Any
    provider_id: str

    def call(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        return result_of(self.session, tool, args or {})

    def need(self, *operations: str) -> None:
        provider = self.session.provider
        assert provider is not None
        missing = [op for op in operations if op not in provider.descriptor.operations]
        if missing:
            pytest.skip(f"{self.provider_id} does not declare {', '.join(missing)}")


def base(name: str | None) -> str:
    """A symbol's C name: Mach-O's leading underscore and ELF version suffixes removed."""
    if name is None:
        return ""
    name = name.split("@")[0]
    return name[1:] if name.startswith("_") and not name.startswith("__") else name


@pytest.fixture(scope="module", params=CASES, ids=[f"{p}-{f}" for p, f in CASES])
def opened(request: pytest.FixtureRequest, rea_registry: Registry, native_fixtures: Any) -> Iterator[Opened]:
    provider_id, fixture_id = request.param
    provider = rea_registry.providers.get(provider_id)
    if provider is None:
        pytest.skip(f"provider {provider_id} is not registered")
    availability = provider.availability()
    if availability.status != "available":
        pytest.skip(f"provider {provider_id} is unavailable: {availability.reason}")
    fx = native_fixtures.get(fixture_id)
    session = Session(rea_registry)
    try:
        try:
            out = result_of(session, "open_binary", {"path": fx.path, "provider_id": provider_id})
        except ReaError as exc:
            if exc.code == "unsupported_target":
                pytest.skip(f"{provider_id} does not support {fixture_id}: {exc.message}")
            raise
        assert out["analysis_provider_binding"]["provider"]["id"] == provider_id
        assert out["analysis_provider_binding"]["selection_source"] == "request"
        yield Opened(session, fx, provider_id)
    finally:
        session.close()


def all_procedures(o: Opened) -> list[dict[str, Any]]:
    return o.call("list_procedures", {"limit": 1000})["procedures"]


def proc_named(o: Opened, c_name: str) -> dict[str, Any]:
    matches = [p for p in all_procedures(o) if base(p["name"]) == c_name and p["kind"] == "local"]
    assert matches, f"{c_name} not among the procedures of {o.fixture.id}"
    return matches[0]


def expected_functions(o: Opened) -> tuple[str, ...]:
    return nf.PROGRAM_FUNCTIONS if o.fixture.source == "program" else nf.LIBRARY_EXPORTS


def test_documents_identify_the_fixture(opened: Opened) -> None:
    opened.need("list_documents")
    doc = opened.call("list_documents")["documents"][0]
    assert doc["architecture"] == opened.fixture.arch
    assert doc["format"] == opened.fixture.format
    assert doc["entry"] is None or doc["entry"].startswith("0x")


def test_known_functions_have_their_names(opened: Opened) -> None:
    opened.need("list_procedures")
    procs = all_procedures(opened)
    assert procs, "no procedures"
    for p in procs:
        assert p["address"] == p["address"].lower() and p["address"].startswith("0x")
        assert p["kind"] in ("local", "import", "thunk", "external")
    if opened.fixture.stripped:
        assert sum(1 for p in procs if p["kind"] == "local") >= len(expected_functions(opened))
        return
    names = {base(p["name"]) for p in procs}
    missing = set(expected_functions(opened)) - names
    assert not missing, f"missing functions {missing}"


def test_pagination_is_consistent(opened: Opened) -> None:
    opened.need("list_procedures")
    whole = opened.call("list_procedures", {"limit": 1000})
    assert whole["offset"] == 0 and whole["next_offset"] is None and whole["total"] == len(whole["procedures"])
    paged: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = opened.call("list_procedures", {"offset": offset, "limit": 3})
        assert page["total"] == whole["total"] and len(page["procedures"]) <= 3
        paged.extend(page["procedures"])
        offset = page["next_offset"]
    assert paged == whole["procedures"]
    addresses = [int(p["address"], 16) for p in paged]
    assert addresses == sorted(addresses)


def test_call_edges_from_main(opened: Opened) -> None:
    opened.need("procedure_callees")
    if opened.fixture.source != "program" or opened.fixture.stripped:
        pytest.skip("call edges by name need a symbolized program fixture")
    main = proc_named(opened, "main")
    callees = opened.call("procedure_callees", {"procedure": main["address"]})["callees"]
    names = {base(c["name"]) for c in callees}
    for caller, callee in nf.PROGRAM_CALL_EDGES:
        assert caller == "main" and callee in names, f"main -> {callee} missing from {names}"
    assert any(c["kind"] == "indirect" and c["address"] is None for c in callees), "indirect call kept unknown"


def test_import_calls_are_named(opened: Opened) -> None:
    opened.need("procedure_callees")
    if opened.fixture.source != "program" or opened.fixture.stripped:
        pytest.skip("needs a symbolized program fixture")
    for caller, imported in nf.PROGRAM_IMPORT_CALLS:
        proc = proc_named(opened, caller)
        callees = opened.call("procedure_callees", {"procedure": proc["address"]})["callees"]
        assert imported in {base(c["name"]) for c in callees}, f"{caller} -> {imported}"


def test_callers_mirror_callees(opened: Opened) -> None:
    opened.need("procedure_callers")
    if opened.fixture.source != "program" or opened.fixture.stripped:
        pytest.skip("needs a symbolized program fixture")
    greet = proc_named(opened, "greet")
    callers = opened.call("procedure_callers", {"procedure": greet["address"]})["callers"]
    assert "main" in {base(c["name"]) for c in callers}


def test_strings_present_with_addresses(opened: Opened) -> None:
    opened.need("list_strings")
    strings = []
    offset: int | None = 0
    while offset is not None:
        page = opened.call("list_strings", {"offset": offset, "limit": 1000})
        strings.extend(page["strings"])
        offset = page["next_offset"]
    values = {s["value"]: s for s in strings}
    expected = nf.PROGRAM_STRINGS if opened.fixture.source == "program" else nf.LIBRARY_STRINGS
    for text in expected:
        assert text in values, f"string {text!r} missing"
        s = values[text]
        assert s["address"].startswith("0x") and s["byte_length"] >= len(text.encode())
        assert s["encoding"] in ("ascii", "utf-8") and s["truncated"] is False


def test_wide_string_is_utf16(opened: Opened) -> None:
    opened.need("list_strings")
    if opened.fixture.source != "program":
        pytest.skip("the wide marker is in program.c")
    hits = opened.call("search_strings", {"pattern": nf.PROGRAM_WIDE})["strings"]
    assert any(h["encoding"] == "utf-16le" and h["value"] == nf.PROGRAM_WIDE for h in hits)


def test_xrefs_from_function_to_string(opened: Opened) -> None:
    opened.need("search_strings", "xrefs")
    expected = nf.PROGRAM_STRINGS if opened.fixture.source == "program" else nf.LIBRARY_STRINGS
    text, user = next(iter(expected.items()))
    hit = [
        s
        for s in opened.call("search_strings", {"pattern": text, "case_sensitive": True})["strings"]
        if s["value"] == text
    ]
    assert hit
    refs = opened.call("xrefs", {"address": hit[0]["address"]})["references"]
    assert refs, f"no reference to {text!r}"
    assert all(r["to"] == hit[0]["address"] for r in refs)
    if not opened.fixture.stripped:
        users = {r["from_procedure"] for r in refs}
        assert proc_named(opened, user)["address"] in users


def test_imports_are_named(opened: Opened) -> None:
    opened.need("list_names")
    names = opened.call("list_names", {"limit": 1000})["names"]
    imports = {base(n["name"]) for n in names if n["kind"] == "import"}
    expected = nf.PROGRAM_IMPORTS if opened.fixture.source == "program" else nf.LIBRARY_IMPORTS
    assert set(expected) <= imports
    assert all(n["external"] for n in names if n["kind"] == "import")


def test_segments_have_exclusive_ends(opened: Opened) -> None:
    opened.need("list_segments")
    segments = opened.call("list_segments")["segments"]
    assert segments
    for s in segments:
        assert int(s["end"], 16) == int(s["start"], 16) + s["size"]
        assert s["kind"] in ("segment", "section") and len(s["permissions"]) == 3


def test_procedure_info_and_containment(opened: Opened) -> None:
    opened.need("procedure_info", "resolve_containing_procedure")
    target = next(p for p in all_procedures(opened) if p["kind"] == "local" and p["size"] > 4)
    info = opened.call("procedure_info", {"procedure": target["address"]})
    assert info["address"] == target["address"] and info["instruction_count"] >= 1
    inner = hex(int(target["address"], 16) + 1)
    found = opened.call("resolve_containing_procedure", {"address": inner})["procedure"]
    assert found is not None and found["address"] == target["address"]


def test_unknown_procedure_is_invalid_request(opened: Opened) -> None:
    opened.need("procedure_info")
    with pytest.raises(ReaError) as err:
        opened.call("procedure_info", {"procedure": "no_such_function_anywhere"})
    assert err.value.code == "invalid_request"
    assert err.value.details["issues"][0]["path"] == "procedure"


def test_overview_counts_match_inventory(opened: Opened) -> None:
    opened.need("list_documents", "list_segments", "list_procedures", "list_strings")
    overview = opened.call("binary_overview")
    assert overview["counts"]["procedures"] == opened.call("list_procedures", {"limit": 1})["total"]
    assert overview["architecture"] == opened.fixture.arch


def test_every_operation_result_decodes_into_its_shape(opened: Opened) -> None:
    """Each provider's result of every operation tool is its shape (rea/operations/shapes.py), nothing else:
    the Struct the tool's advertised output schema is generated from (issue 26)."""
    provider = opened.session.provider
    assert provider is not None
    declared = set(provider.descriptor.operations)
    first = all_procedures(opened)
    local = next(p for p in first if p["kind"] == "local")
    inner = hex(int(local["address"], 16) + 1)
    strings = opened.call("list_strings", {"limit": 1})["strings"] if "list_strings" in declared else []
    target = strings[0]["address"] if strings else local["address"]
    args: dict[str, dict[str, Any]] = {
        "list_procedures": {"limit": 5},
        "search_procedures": {"pattern": local["name"][:3]},
        "list_strings": {"limit": 5},
        "search_strings": {"pattern": "e"},
        "list_names": {"limit": 5},
        "address_name": {"address": local["address"]},
        "procedure_address": {"procedure": local["address"]},
        "resolve_containing_procedure": {"address": inner},
        "procedure_info": {"procedure": local["address"]},
        "procedure_assembly": {"procedure": local["address"], "limit": 4},
        "read_function_instructions": {"procedure": local["address"], "limit": 4, "split_operands": True},
        "procedure_callers": {"procedure": local["address"]},
        "procedure_callees": {"procedure": local["address"]},
        "procedure_references": {"procedure": local["address"], "limit": 5},
        "xrefs": {"address": target},
        "procedure_pseudo_code": {"procedure": local["address"]},
        "inspect_native_instruction": {"address": local["address"]},
        "inspect_native_data_type": {"address": target},
        "resolve_native_call_targets": {"procedure": local["address"]},
    }
    engine_facts = {
        "inspect_native_instruction": InstructionInspection,
        "inspect_native_data_type": DataInspection,
        "resolve_native_call_targets": CallTargets,
    }
    checked = []
    for tool, shape in {**RESULT_TYPES, **engine_facts}.items():
        if not set(opened.session.registry.tools[tool].requires_operations) <= declared:
            continue
        result = opened.call(tool, args.get(tool, {}))
        try:
            msgspec.convert(result, type=shape, strict=True, from_attributes=False)
        except msgspec.ValidationError as exc:
            raise AssertionError(f"{opened.provider_id} {tool}: {exc}") from None
        checked.append(tool)
    assert len(checked) >= 10, checked
    for operation, shape in OPERATION_TYPES.items():
        if operation in declared:
            answer = opened.session.execute(operation, {"limit": 5}, CallContext()).normalized
            try:
                msgspec.convert(answer, type=shape, strict=True, from_attributes=False)
            except msgspec.ValidationError as exc:
                raise AssertionError(f"{opened.provider_id} {operation}: {exc}") from None


def test_auto_selection_is_deterministic(rea_registry: Registry, native_fixtures: Any) -> None:
    fx = native_fixtures.get("elf-x64")
    chosen = []
    for _ in range(2):
        session = Session(rea_registry)
        try:
            out = result_of(session, "open_binary", {"path": fx.path, "provider_id": "auto"})
            chosen.append(out["analysis_provider_binding"]["provider"]["id"])
            assert out["analysis_provider_binding"]["selection_source"] == "auto"
        finally:
            session.close()
    usable = [
        p
        for p in rea_registry.providers.values()
        if p.availability().status == "available" and "elf" in p.descriptor.formats
    ]
    top = max(p.descriptor.auto_priority for p in usable)
    assert chosen[0] == chosen[1]
    assert rea_registry.providers[chosen[0]].descriptor.auto_priority == top


# -- shapes.c: stripped main, tail calls and .cold parts --------------------------------------------

SHAPE_CASES = [("native", fid) for fid in nf.SHAPE_FIXTURE_IDS]


@pytest.fixture(scope="module", params=SHAPE_CASES, ids=[f"{p}-{f}" for p, f in SHAPE_CASES])
def shaped(request: pytest.FixtureRequest, rea_registry: Registry, native_fixtures: Any) -> Iterator[Opened]:
    provider_id, fixture_id = request.param
    provider = rea_registry.providers.get(provider_id)
    if provider is None:
        pytest.skip(f"provider {provider_id} is not registered")
    fx = native_fixtures.get(fixture_id)
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": fx.path, "provider_id": provider_id})
        yield Opened(session, fx, provider_id)
    finally:
        session.close()


def user_of(o: Opened, text: str) -> str:
    """The start of the one procedure that references the string ``text`` (how a stripped build is read)."""
    hits = [
        s
        for s in o.call("search_strings", {"pattern": text.strip(), "case_sensitive": True})["strings"]
        if s["value"] == text
    ]
    assert hits, f"string {text!r} missing"
    users = {r["from_procedure"] for r in o.call("xrefs", {"address": hits[0]["address"]})["references"]}
    assert len(users) == 1, f"{text!r} is referenced from {users}"
    return users.pop()


def test_stripped_main_is_named_from_the_entry_point(shaped: Opened) -> None:
    shaped.need("procedure_address", "procedure_info", "list_procedures", "xrefs")
    main = user_of(shaped, nf.SHAPES_MAIN)
    found = shaped.call("procedure_address", {"procedure": "main"})
    assert found["address"] == main and found["name"] == "main"
    info = shaped.call("procedure_info", {"procedure": "main"})
    assert info["address"] == main
    source = "entry-heuristic" if shaped.fixture.stripped else "symbol"
    assert info["name_source"] == source
    listed = [p for p in all_procedures(shaped) if p["name"] == "main"]
    assert [(p["address"], p["name_source"]) for p in listed] == [(main, source)]


def test_tail_call_target_is_a_procedure_and_a_tail_callee(shaped: Opened) -> None:
    shaped.need("procedure_info", "procedure_callees", "procedure_callers", "xrefs")
    caller = user_of(shaped, nf.SHAPES_TAIL_CALLER)
    target = user_of(shaped, nf.SHAPES_TAIL_TARGET)
    assert shaped.call("procedure_info", {"procedure": target})["address"] == target
    callees = shaped.call("procedure_callees", {"procedure": caller})["callees"]
    assert [c["kind"] for c in callees if c["address"] == target] == ["tail"], callees
    callers = shaped.call("procedure_callers", {"procedure": target})["callers"]
    assert caller in {c["address"] for c in callers}
    main = shaped.call("procedure_callees", {"procedure": "main"})["callees"]
    assert any(c["address"] == caller and c["kind"] == "direct" for c in main)
    if not shaped.fixture.stripped:
        assert shaped.call("procedure_info", {"procedure": target})["name"] == "tail_only_target"
    # The call graph walks through the tail edge: the target's own callees (puts) are reached.
    graph = shaped.call("get_call_graph", {"address": caller, "depth": 2})
    assert any(e["from"] == target for e in graph["edges"]), graph["edges"]


def test_cold_part_is_linked_to_its_parent(shaped: Opened) -> None:
    shaped.need("procedure_info", "procedure_callees", "procedure_callers", "xrefs")
    part = user_of(shaped, nf.SHAPES_COLD_PART)
    info = shaped.call("procedure_info", {"procedure": part})
    assert info["part_of"] is not None, f"{info['name']} is not linked to a parent"
    parent = shaped.call("procedure_info", {"procedure": info["part_of"]["address"]})
    assert parent["part_of"] is None
    assert part in {p["address"] for p in parent["parts"]}
    assert info["name"] == parent["name"] + ".cold"
    if not shaped.fixture.stripped:
        assert parent["name"] == "checked_div"
    # Entering the part is not a call, and callers see the parent.
    callees = shaped.call("procedure_callees", {"procedure": parent["address"]})["callees"]
    assert part not in {c["address"] for c in callees}
    callers = shaped.call("procedure_callers", {"procedure": parent["address"]})["callers"]
    assert "main" in {c["name"] for c in callers}
    listed = {p["address"]: p for p in all_procedures(shaped)}
    assert listed[part]["part_of"] == parent["address"]
