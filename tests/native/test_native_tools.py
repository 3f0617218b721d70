"""The binary tool family over the native provider: schemas, workflows, navigation and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

import tests.fixtures.native.native_fixtures as nf
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.native.decompile import engine

DECOMPILER = engine().available


def binary_tools(registry: Registry) -> list[Any]:
    return [t for t in registry.tools.values() if t.family == "binary"]


def test_every_schema_is_closed_described_and_exemplified(rea_registry: Registry) -> None:
    tools = binary_tools(rea_registry)
    assert len(tools) >= 30
    for tool in tools:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
        jsonschema.Draft202012Validator.check_schema(schema)
        for name, prop in schema["properties"].items():
            assert prop.get("description") and prop.get("examples"), f"{tool.name}.{name}"
        assert tool.examples, tool.name
        assert len({repr(e) for e in tool.examples}) == len(tool.examples), f"{tool.name}: duplicate examples"
        for example in tool.examples:
            jsonschema.validate(example, schema)


def test_unknown_argument_is_rejected(native: Session) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(native, "list_procedures", {"bogus": 1})
    assert err.value.code == "invalid_request"
    assert err.value.details["issues"][0]["reason"] == "unknown_argument"


def test_overview_reports_counts_imports_and_strings(native: Session) -> None:
    out = result_of(native, "binary_overview", {})
    assert out["format"] == "elf" and out["architecture"] == "x86_64"
    assert out["counts"]["procedures"] >= len(nf.PROGRAM_FUNCTIONS)
    assert set(nf.PROGRAM_IMPORTS) <= set(out["notable_imports"])
    assert "REA_FIXTURE_GREETING" in {s["value"] for s in out["notable_strings"]}


def test_analyze_function_dossier(native: Session) -> None:
    out = result_of(native, "analyze_function", {"procedure": "greet"})
    assert out["procedure"]["name"] == "greet"
    assert out["basic_blocks"] and out["assembly"]["instructions"]
    assert "puts" in {c["name"] for c in out["callees"]}
    assert "main" in {c["name"] for c in out["callers"]}
    assert "REA_FIXTURE_GREETING" in {s["value"] for s in out["referenced_strings"]}
    # native's decompiler (flatline) where it runs; else its typed unavailability with the install command.
    if DECOMPILER:
        assert out["pseudocode"]["status"] == "ok" and 'puts("REA_FIXTURE_GREETING")' in out["pseudocode"]["text"]
    else:
        assert out["pseudocode"]["status"] != "ok" and "scripts/install" in str(out["pseudocode"])


def test_jump_table_targets_are_computed_references(native: Session) -> None:
    refs = result_of(native, "procedure_references", {"procedure": nf.JUMP_TABLE_FUNCTION, "limit": 1000})
    computed = {r["to"] for r in refs["references"] if r["kind"] == "computed" and r["to"] is not None}
    assert len(computed) >= 6
    blocks = result_of(native, "analyze_function", {"procedure": nf.JUMP_TABLE_FUNCTION})["basic_blocks"]
    assert len(blocks) >= nf.JUMP_TABLE_CASES


def test_pseudocode_is_offered(native: Session) -> None:
    # native decompiles (tests/native/test_decompile.py); where flatline cannot run it says so, typed.
    assert native.supports("procedure_pseudo_code")


def test_call_graph_is_bounded(native: Session) -> None:
    out = result_of(native, "get_call_graph", {"address": "main", "depth": 2})
    names = {n["name"] for n in out["nodes"]}
    assert {"main", "greet", "compute_checksum", "puts"} <= names
    small = result_of(native, "get_call_graph", {"address": "main", "max_nodes": 2})
    assert len(small["nodes"]) == 2 and small["truncated"] is True
    back = result_of(native, "get_call_graph", {"address": "greet", "direction": "backward"})
    assert "main" in {n["name"] for n in back["nodes"]}


def test_find_xrefs_to_name_and_trace_feature(native: Session) -> None:
    out = result_of(native, "find_xrefs_to_name", {"name": "puts"})
    froms = {r["from_procedure"] for m in out["matches"] for r in m["references"]}
    greet = result_of(native, "procedure_address", {"procedure": "greet"})["address"]
    assert greet in froms
    traced = result_of(native, "trace_feature", {"query": "FIXTURE_GREETING"})
    assert greet in {p["address"] for p in traced["procedures"]}
    assert any([n["name"] for n in path] == ["main", "greet"] for path in traced["call_paths"])
    with pytest.raises(ReaError) as err:
        call_tool(native, "find_xrefs_to_name", {"name": "no_such_name_here"})
    assert err.value.code == "invalid_request"


def test_batch_decompile_answers_each_item(native: Session) -> None:
    out = result_of(native, "batch_decompile", {"addresses": ["main", "greet", "no_such_procedure"]})
    assert [i["procedure"] for i in out["items"]] == ["main", "greet", "no_such_procedure"]  # in request order
    assert out["items"][2]["status"] == "error" and out["items"][2]["error"]["code"] == "invalid_request"
    if DECOMPILER:
        assert out["ok"] == 2 and "greet(" in out["items"][0]["result"]["text"]
    else:
        assert out["items"][0]["error"]["code"] == "provider_unavailable"


def test_compare_functions_inline_and_retained(native: Session) -> None:
    a = call_tool(native, "analyze_function", {"procedure": "op_add"}).evidence
    b = call_tool(native, "analyze_function", {"procedure": "compute_checksum"}).evidence
    assert a is not None and b is not None
    same = result_of(
        native,
        "compare_functions",
        {
            "left": {"kind": "retained-evidence", "evidence_id": a.evidence_id},
            "right": {"kind": "retained-evidence", "evidence_id": a.evidence_id},
        },
    )
    # A dossier compared with itself is unchanged; facets neither side has (pseudocode without the decompiler) are
    # absent.
    assert same["status"] == "unchanged"
    absent = {f["facet"] for f in same["facets"] if f["status"] == "absent"}
    assert absent == (set() if DECOMPILER else {"pseudocode_digest"})
    import msgspec

    diff = call_tool(
        native,
        "compare_functions",
        {"left": msgspec.to_builtins(a), "right": {"kind": "retained-evidence", "evidence_id": b.evidence_id}},
    ).evidence
    assert diff is not None and diff.normalized_result["status"] == "changed"
    assert set(diff.evidence_links) == {a.evidence_id, b.evidence_id}
    layout = call_tool(native, "inspect_binary_layout", {}).evidence
    assert layout is not None
    with pytest.raises(ReaError) as err:
        call_tool(
            native,
            "compare_functions",
            {
                "left": {"kind": "retained-evidence", "evidence_id": layout.evidence_id},
                "right": {"kind": "retained-evidence", "evidence_id": a.evidence_id},
            },
        )
    assert err.value.code == "invalid_request"


def test_layout_summary_retains_the_complete_record(native: Session) -> None:
    out = call_tool(native, "inspect_binary_layout", {"detail": "summary"}).evidence
    assert out is not None
    parent = out.normalized_result["parent_evidence_id"]
    assert out.evidence_links == [parent]
    complete = native.ledger.get(parent)
    assert complete is not None and complete.normalized_result["sections"]
    assert out.operation == "inspect_analysis_view"
    mit = out.normalized_result["summary"]["fields"]["mitigations"]
    assert mit["nx"] is True and mit["pie"] is True and mit["relro"] in ("partial", "full")
    assert "libc.so.6" in complete.normalized_result["linkage"]["needed"]


def test_navigation_starts_at_entry(native: Session) -> None:
    doc = result_of(native, "current_document", {})["document"]
    addr = result_of(native, "current_address", {})["address"]
    assert addr == doc["entry"]
    proc = result_of(native, "current_procedure", {})["procedure"]
    assert proc is not None and proc["address"] == addr
    ctx = result_of(native, "get_navigation_context", {})
    assert ctx["mode"] == "current_selection" and ctx["address"] == addr
    explicit = result_of(native, "get_navigation_context", {"document": doc["name"]})
    assert explicit["mode"] == "explicit_document"
    greet = result_of(native, "procedure_address", {"procedure": "greet"})["address"]
    facets = result_of(native, "inspect_address_context", {"address": greet})["facets"]
    assert facets["name"] == {"status": "ok", "value": "greet"}
    assert facets["procedure"]["value"]["name"] == "greet"
    # rea's annotation store answers these for every provider (nothing is annotated here).
    assert facets["comment"] == facets["bookmark"] == {"status": "ok", "value": None}
    with pytest.raises(ReaError) as err:
        call_tool(native, "current_address", {"document": "not-open"})
    assert err.value.code == "invalid_request"


def test_read_function_instructions_pages(native: Session) -> None:
    whole = result_of(native, "procedure_assembly", {"procedure": "main"})["instructions"]
    first = result_of(native, "read_function_instructions", {"procedure": "main", "limit": 5})
    second = result_of(native, "read_function_instructions", {"procedure": "main", "offset": 5, "limit": 5})
    assert first["instructions"] + second["instructions"] == whole[:10]
    assert first["next_offset"] == 5 and first["total"] == len(whole)


def test_addresses_outside_any_procedure(native: Session) -> None:
    out = result_of(native, "resolve_containing_procedure", {"address": "0xfffffff0"})
    assert out["procedure"] is None
    assert result_of(native, "address_name", {"address": "0xfffffff0"})["name"] is None
    with pytest.raises(ReaError) as err:
        call_tool(native, "procedure_info", {"procedure": "0xfffffff0"})
    assert err.value.code == "invalid_request"


def test_fat_macho_records_the_slice(rea_registry: Registry, native_fixtures: Any) -> None:
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": native_fixtures.get("macho-fat").path, "provider_id": "native"})
        ev = call_tool(session, "list_documents", {}).evidence
        assert ev is not None
        doc = ev.normalized_result["documents"][0]
        assert doc["slices"] == ["x86_64", "arm64"] and doc["slice"] in doc["slices"]
        assert any("universal binary" in lim for lim in ev.limitations)
        assert ev.analysis_profile is not None
        assert "universal_slice_preference" in ev.analysis_profile.parameters
    finally:
        session.close()


def test_bad_inputs_get_typed_errors(rea_registry: Registry, native_fixtures: Any, tmp_path: Any) -> None:
    session = Session(rea_registry)
    with open(native_fixtures.get("elf-x64").path, "rb") as fh:
        elf = fh.read()
    cases = {"truncated": elf[:64], "header-only": elf[:20], "garbage": b"\x7fELF" + os.urandom(300)}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        try:
            result_of(session, "open_binary", {"path": str(path), "provider_id": "native"})
            result_of(session, "binary_overview", {})
        except ReaError as exc:
            assert exc.code in ("unsupported_target", "execution_failure", "resource_constraint"), (name, exc)
    text = tmp_path / "notes.txt"
    text.write_text("not a binary")
    for path in (str(text), str(tmp_path)):
        with pytest.raises(ReaError) as err:
            result_of(session, "open_binary", {"path": path, "provider_id": "native"})
        assert err.value.code == "unsupported_target"
    session.close()


def test_inventory_limit_fails_explicitly(
    rea_registry: Registry, native_fixtures: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native.program import Limits

    provider = rea_registry.providers["native"]
    monkeypatch.setattr(provider, "limits", lambda: Limits(max_procedures=3))
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
        with pytest.raises(ReaError) as err:
            result_of(session, "list_procedures", {})
        assert err.value.code == "resource_constraint"
    finally:
        session.close()


def test_descriptor_operations_match_and_import_is_cheap() -> None:
    from rea_plugins.native import operations
    from rea_plugins.native import provider

    # The one declaration is what dispatch serves: every declared operation has its handler (pseudo code is the
    # client's own: rea_plugins.native.pseudo, over the decompile workers).
    served = [op for op in provider.OPERATIONS if op not in provider.DECOMPILE_OPERATIONS]
    assert all(callable(getattr(operations.Operations, op, None)) for op in served)
    assert "procedure_pseudo_code" in provider.OPERATIONS
    code = "import sys, rea_plugins.native; print('lief' in sys.modules, 'capstone' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_parse_worker_survives_a_crash(rea_registry: Registry, native_fixtures: Any) -> None:
    provider: Any = rea_registry.providers["native"]
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
        pid = provider.worker().pid
        assert pid is not None
        os.kill(pid, 9)
        provider.worker().proc.wait_exit(10)
        result_of(session, "open_binary", {"path": native_fixtures.get("pe-x64-exe").path, "provider_id": "native"})
        assert result_of(session, "list_documents", {})["documents"][0]["format"] == "pe"
    finally:
        session.close()


def test_index_deadline_is_a_provider_timeout(
    rea_registry: Registry, native_fixtures: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native.program import Limits

    provider = rea_registry.providers["native"]
    monkeypatch.setattr(provider, "limits", lambda: Limits(index_deadline_s=-1.0))
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
        with pytest.raises(ReaError) as err:
            result_of(session, "procedure_callers", {"procedure": "greet"})
        assert err.value.code == "provider_timeout"
    finally:
        session.close()


def test_cancellation_records_nothing(native: Session) -> None:
    from rea.context import CallContext
    from rea.context import CancelSignal

    signal = CancelSignal()
    messages: list[str] = []

    def sink(_: float, _total: float | None, message: str) -> None:
        messages.append(message)
        signal.cancel()

    before = len(native.ledger)
    with pytest.raises(ReaError) as err:
        call_tool(native, "binary_overview", {}, CallContext(signal, sink))
    assert err.value.code == "cancelled"
    assert messages and len(native.ledger) == before


def test_search_modes_and_refused_patterns(native: Session) -> None:
    literal = result_of(native, "search_procedures", {"pattern": "CHECKSUM"})
    assert "compute_checksum" in {p["name"] for p in literal["procedures"]}
    exact = result_of(native, "search_procedures", {"pattern": "CHECKSUM", "case_sensitive": True})
    assert exact["total"] == 0
    rx = result_of(native, "search_procedures", {"pattern": "^op_(add|sub)$", "mode": "regex"})
    assert {p["name"] for p in rx["procedures"]} == {"op_add", "op_sub"}
    # RE2 runs nested quantifiers in linear time; only what it cannot express (or cannot parse) is refused.
    assert result_of(native, "search_strings", {"pattern": "(a+)+$", "mode": "regex"})["total"] >= 0
    for bad, construct in (("(x)\\1", "backreference"), ("(?<=x)y", "lookbehind"), ("[", "not a valid")):
        with pytest.raises(ReaError) as err:
            call_tool(native, "search_strings", {"pattern": bad, "mode": "regex"})
        assert err.value.code == "invalid_request" and err.value.details["issues"][0]["path"] == "pattern"
        assert construct in err.value.message
