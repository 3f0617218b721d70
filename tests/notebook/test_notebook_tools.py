"""The notebook tools over the native provider, on the compiled program.c fixture (in process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

import tests.fixtures.native.native_fixtures as nf
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.notebook.conftest import open_session

WRITES = (
    "set_comment",
    "set_inline_comment",
    "set_address_name",
    "set_addresses_names",
    "set_bookmark",
    "unset_bookmark",
    "annotate_native_function",
)


def _error(session: Session, tool: str, args: dict[str, Any]) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, tool, args)
    err = info.value
    assert "Traceback" not in err.message and "Error:" not in err.message
    return err


def _address(session: Session, name: str) -> str:
    return str(result_of(session, "procedure_address", {"procedure": name})["address"])


def test_write_tools_declare_their_effects(rea_registry: Registry) -> None:
    for name in WRITES:
        hints = rea_registry.tools[name].effects.annotations()
        assert hints["destructiveHint"] is True and hints["readOnlyHint"] is False, name
        assert rea_registry.tools[name].effects.mutates_target is False, name
    for name in ("comment", "inline_comment", "list_bookmarks", "read_bytes", "trace_call_path"):
        assert rea_registry.tools[name].effects.annotations()["destructiveHint"] is False, name


def test_a_user_name_shows_everywhere_and_changes_evidence_identity(native: Session) -> None:
    target = _address(native, "compute_checksum")
    before = call_tool(native, "procedure_info", {"procedure": "compute_checksum"}).evidence
    assert before is not None and "annotation_revision" not in before.parameters
    out = result_of(native, "set_address_name", {"address": target, "name": "checksum_string"})
    assert out["value"] == "checksum_string" and out["previous"] is None and out["annotation_revision"]

    listed = {p["address"]: p for p in result_of(native, "list_procedures", {"limit": 1000})["procedures"]}
    assert listed[target]["name"] == "checksum_string" and listed[target]["name_source"] == "user"
    assert listed[target]["original_name"] == "compute_checksum"
    info = call_tool(native, "procedure_info", {"procedure": "checksum_string"}).evidence
    assert info is not None and info.normalized_result["address"] == target
    assert info.parameters["annotation_revision"] == out["annotation_revision"]
    callers = result_of(native, "procedure_callers", {"procedure": "strlen"})["callers"]
    assert "checksum_string" in [c["name"] for c in callers]
    callees = result_of(native, "procedure_callees", {"procedure": "main"})["callees"]
    assert "checksum_string" in [c["name"] for c in callees] and "compute_checksum" not in [c["name"] for c in callees]
    refs = result_of(native, "procedure_references", {"procedure": "main"})["references"]
    assert any(r["to"] == target and r["to_name"] == "checksum_string" for r in refs)
    for pattern in ("checksum_str", "compute_checksum"):
        hits = result_of(native, "search_procedures", {"pattern": pattern})
        assert [p["address"] for p in hits["procedures"]] == [target] and hits["total"] == 1
    names = result_of(native, "list_names", {"address": target})["names"]
    assert names and {n["name"] for n in names} == {"checksum_string"}
    graph = result_of(native, "get_call_graph", {"address": "main", "depth": 1})
    assert "checksum_string" in [n["name"] for n in graph["nodes"]]
    dossier = call_tool(native, "analyze_function", {"procedure": "main", "include_assembly": False}).evidence
    assert dossier is not None and dossier.parameters["annotation_revision"] == out["annotation_revision"]
    # The result as a client reads it (its rows may be records in memory).
    assert msgspec.to_builtins(dossier.normalized_result)["user_names"] == [
        {"address": target, "name": "checksum_string", "original_name": "compute_checksum"}
    ]

    cleared = result_of(native, "set_address_name", {"address": target, "name": ""})
    assert cleared["previous"] == "checksum_string" and cleared["annotation_revision"] is None
    again = call_tool(native, "procedure_info", {"procedure": "compute_checksum"}).evidence
    assert again is not None and again.evidence_id == before.evidence_id


def test_comments_bookmarks_and_function_annotations(native: Session) -> None:
    main = _address(native, "main")
    second = result_of(native, "read_function_instructions", {"procedure": "main", "limit": 2})["instructions"][1]
    result_of(native, "set_comment", {"address": main, "comment": "program entry"})
    result_of(native, "set_inline_comment", {"address": second["address"], "comment": "argc kept"})
    result_of(native, "set_bookmark", {"address": main, "name": "start here"})
    note = result_of(
        native,
        "annotate_native_function",
        {"procedure": "main", "signature": "int main(int argc, char **argv)", "notes": "sums four results"},
    )
    assert note["procedure"]["address"] == main and set(note["fields"]) == {"signature", "notes"}

    assert result_of(native, "comment", {"address": main})["comment"] == "program entry"
    result_of(native, "goto_address", {"address": second["address"]})
    assert result_of(native, "inline_comment", {})["inline_comment"] == "argc kept"
    marks = result_of(native, "list_bookmarks", {})["bookmarks"]
    assert marks == [{"address": main, "name": "start here", "procedure": {"address": main, "name": "main"}}]
    info = result_of(native, "procedure_info", {"procedure": "main"})
    assert info["signature"] == "int main(int argc, char **argv)" and info["signature_source"] == "user"
    assert info["notes"] == "sums four results" and info["comment"] == "program entry"
    asm = result_of(native, "procedure_assembly", {"procedure": "main"})["instructions"]
    assert asm[0]["comment"] == "program entry" and asm[1]["inline_comment"] == "argc kept"
    context = result_of(native, "inspect_address_context", {"address": main})
    facets = context["facets"]
    assert facets["comment"] == {"status": "ok", "value": "program entry"}
    assert facets["bookmark"] == {"status": "ok", "value": {"name": "start here"}}
    assert facets["function"]["value"]["notes"] == "sums four results" and context["sources"]["comment"] == "rea"
    dossier = call_tool(native, "analyze_function", {"procedure": "main"}).evidence
    assert dossier is not None
    kinds = {(c["address"], c["kind"]) for c in msgspec.to_builtins(dossier.normalized_result)["comments"]}
    assert {
        (main, "comment"),
        (second["address"], "inline_comment"),
        (main, "bookmark"),
        (main, "signature"),
        (main, "notes"),
    } <= kinds
    view = result_of(
        native,
        "inspect_analysis_view",
        {
            "source": {"kind": "retained-evidence", "evidence_id": dossier.evidence_id},
            "view": {"kind": "native", "facet": "comments"},
        },
    )
    assert view["status"] == "available" and view["total"] == len(dossier.normalized_result["comments"])

    removed = result_of(native, "unset_bookmark", {"address": main})
    assert removed["previous"] == "start here" and result_of(native, "list_bookmarks", {})["bookmarks"] == []


def test_bad_addresses_and_names_are_canonical_invalid_requests(native: Session) -> None:
    main = _address(native, "main")
    err = _error(native, "set_address_name", {"address": main, "name": "2fast"})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "name"
    assert err.details["issues"][0]["reason"] == "invalid_value"
    err = _error(native, "set_address_name", {"address": "0xdeadbeef000", "name": "far_away"})
    assert err.code == "invalid_request" and err.details["issues"][0]["path"] == "address"
    err = _error(native, "set_comment", {"address": "main", "comment": "x"})
    assert err.code == "invalid_request" and err.details["issues"][0]["reason"] == "invalid_format"
    err = _error(native, "set_address_name", {"address": _address(native, "greet"), "name": "main"})
    assert err.code == "invalid_request" and "0x" in err.message
    greet, dispatch = _address(native, "greet"), _address(native, "dispatch")
    err = _error(native, "set_addresses_names", {"names": {greet: "twin", dispatch: "twin"}})
    assert err.code == "invalid_request"
    err = _error(native, "set_addresses_names", {"names": {greet: "hello", dispatch: "not valid"}})
    assert err.details["issues"][0]["path"] == f"names/{dispatch}"
    assert result_of(native, "procedure_info", {"procedure": greet})["name"] == "greet"  # all or nothing
    done = result_of(native, "set_addresses_names", {"names": {greet: "hello", dispatch: "route"}})
    assert done["changed_count"] == 2
    err = _error(native, "set_address_name", {"address": _address(native, "wide_len"), "name": "hello"})
    assert "already names" in err.message
    err = _error(native, "read_bytes", {"address": main, "length": 4097})
    assert err.details["issues"][0]["reason"] == "out_of_range"
    first = result_of(native, "read_function_instructions", {"procedure": "main", "limit": 1})["instructions"][0]
    if len(first["bytes"]) > 2:
        inside = hex(int(first["address"], 16) + 1)
        err = _error(native, "inspect_native_instruction", {"address": inside})
        assert err.code == "invalid_request" and first["address"] in err.message
    err = _error(native, "annotate_native_function", {"procedure": "main"})
    assert err.details["issues"][0]["reason"] == "missing_argument"
    err = _error(native, "annotate_native_function", {"procedure": "puts", "notes": "an import"})
    assert err.details["issues"][0]["path"] == "procedure"
    assert "is an import procedure" in err.message


def test_the_cursor_steps_through_instructions_and_procedures(
    native: Session, rea_registry: Registry, store_dir: Path, elf: str
) -> None:
    entry = result_of(native, "current_address", {})["address"]
    main = _address(native, "main")
    instructions = [
        i["address"] for i in result_of(native, "procedure_assembly", {"procedure": "main"})["instructions"]
    ]
    assert result_of(native, "goto_address", {"address": main})["previous_address"] == entry
    step = result_of(native, "next_address", {})
    assert step["address"] == instructions[1] and step["unit"] == "instruction" and step["moved"] is True
    assert result_of(native, "prev_address", {})["address"] == main
    procedures = [p["address"] for p in result_of(native, "list_procedures", {"limit": 1000})["procedures"]]
    after = procedures[procedures.index(main) + 1]
    jump = result_of(native, "next_address", {"address": instructions[-1]})
    assert jump["address"] == after and jump["unit"] == "procedure"
    assert result_of(native, "current_procedure", {})["procedure"]["address"] == after
    back = result_of(native, "prev_address", {"address": main})
    before = procedures[procedures.index(main) - 1]
    assert back["unit"] == "procedure" and back["procedure"]["address"] == before
    assert result_of(native, "get_navigation_context", {})["address"] == back["address"]
    err = _error(native, "goto_address", {"address": "0xfffffffff0"})
    assert err.code == "invalid_request"
    # Each session (each MCP connection) has its own cursor.
    other = open_session(rea_registry, store_dir, elf)
    try:
        assert result_of(other, "current_address", {})["address"] == entry
    finally:
        other.close()


def test_load_image_and_bytes_without_an_engine(native: Session, elf: str) -> None:
    main = _address(native, "main")
    asm = result_of(native, "procedure_assembly", {"procedure": "main", "max_instructions": 4})["instructions"]
    code = "".join(i["bytes"] for i in asm)
    read = result_of(native, "read_bytes", {"address": main, "length": len(code) // 2})
    assert read["hex"] == code and read["zero_filled"] == 0 and read["truncated"] is False
    where = result_of(native, "address_to_file_offset", {"address": main})
    assert where["backed_by_file"] is True and where["section"] == ".text"
    with open(elf, "rb") as fh:
        fh.seek(where["file_offset"])
        assert fh.read(len(code) // 2).hex() == code
    segments = result_of(native, "list_segments", {})["segments"]
    bss = next(s for s in segments if s["name"] == ".bss")
    assert result_of(native, "address_to_file_offset", {"address": bss["start"]})["file_offset"] is None
    zero = result_of(native, "read_bytes", {"address": bss["start"], "length": 4096})
    assert zero["zero_filled"] == zero["bytes_read"] > 0 and set(zero["hex"]) == {"0"} and zero["truncated"]
    image = result_of(native, "inspect_native_load_image", {})
    assert image["entry"]["executable"] is True and image["units"] == "segments"
    assert "libc.so.6" in image["linkage"]["needed"] and image["writable_and_executable"] == []
    assert any(".text" in s["sections"] for s in image["segments"])


def test_engine_facts_answer_what_the_common_operations_establish(native: Session) -> None:
    main = _address(native, "main")
    inspected = result_of(native, "inspect_native_instruction", {"address": main})
    assert inspected["semantics"]["status"] == "unavailable" and inspected["semantics"]["reason"]
    assert inspected["instruction"]["address"] == main and inspected["procedure"]["name"] == "main"
    table = result_of(native, "resolve_native_call_targets", {"procedure": nf.JUMP_TABLE_FUNCTION})
    jumps = [s for s in table["call_sites"] if s["kind"] == "computed-jump"]
    assert len(jumps) == 1 and len(jumps[0]["targets"]) == nf.JUMP_TABLE_CASES
    assert {t["provenance"] for t in jumps[0]["targets"]} == {"jump-table"}
    sites = result_of(native, "resolve_native_call_targets", {"procedure": "main"})
    # `ops[argc & 1](argc, 3)`: a call through a two-entry table with a masked index, resolved from the code.
    indirect = [s for s in sites["call_sites"] if s["kind"] == "indirect"]
    assert len(indirect) == 1 and indirect[0]["status"] == "resolved" and sites["unresolved_count"] == 0
    assert [t["name"] for t in indirect[0]["targets"]] == ["op_add", "op_sub"]
    assert {t["provenance"] for t in indirect[0]["targets"]} == {"pointer-table"}
    one = result_of(native, "resolve_native_call_targets", {"procedure": "main", "address": indirect[0]["address"]})
    assert [s["address"] for s in one["call_sites"]] == [indirect[0]["address"]]
    greeting = result_of(native, "search_strings", {"pattern": "REA_FIXTURE_GREETING"})["strings"][0]
    datum = result_of(native, "inspect_native_data_type", {"address": greeting["address"]})
    assert datum["type"]["kind"] == "string" and datum["value"] == "REA_FIXTURE_GREETING"


def test_call_paths_and_the_api_surface(native: Session) -> None:
    forward = result_of(native, "trace_call_path", {"start": "main", "goal": "strlen"})
    assert forward["reached"] is True
    assert [n["name"] for n in forward["paths"][0]["nodes"]] == ["main", "compute_checksum", "strlen"]
    assert forward["paths"][0]["hops"][0]["call_sites"]
    backward = result_of(native, "trace_call_path", {"start": "strlen", "goal": "main", "direction": "backward"})
    assert [n["name"] for n in backward["paths"][0]["nodes"]] == ["main", "compute_checksum", "strlen"]
    assert result_of(native, "trace_call_path", {"start": "greet", "goal": "main"})["reached"] is False
    tree = result_of(native, "trace_call_path", {"start": "main", "max_depth": 1})
    assert {p["nodes"][-1]["name"] for p in tree["paths"]} >= {"greet", "compute_checksum", "dispatch", "printf"}

    api = result_of(native, "inspect_native_api", {})
    libc = next(lib for lib in api["libraries"] if lib["library"] == "libc.so.6")
    by_name = {i["name"]: i for i in libc["imports"]}
    assert set(nf.PROGRAM_IMPORTS) <= set(by_name)
    assert by_name["strlen"]["purpose"] == "string" and by_name["puts"]["purpose"] == "console-io"
    assert {c["name"] for c in by_name["puts"]["callers"]} == {"greet", "dispatch"}
    purposes = {p["purpose"]: p["imports"] for p in api["purposes"]}
    assert {"puts", "printf"} <= set(purposes["console-io"]) and "strlen" in purposes["string"]
    scoped = result_of(native, "inspect_native_api", {"procedure": "compute_checksum"})
    assert [i["name"] for lib in scoped["libraries"] for i in lib["imports"]] == ["strlen"]


def test_the_api_surface_of_a_pe_names_its_dll(rea_registry: Registry, store_dir: Path, native_fixtures: Any) -> None:
    session = open_session(rea_registry, store_dir, native_fixtures.get("pe-x64-exe").path)
    try:
        api = result_of(session, "inspect_native_api", {"max_operations": 0})
    finally:
        session.close()
    crt = next(lib for lib in api["libraries"] if lib["library"] == "msvcrt.dll")
    assert set(nf.PROGRAM_IMPORTS) <= {i["name"] for i in crt["imports"]}
    assert all(i["library_source"] == "binary" for i in crt["imports"])


def test_annotations_travel_in_evidence_bundles(rea_registry: Registry, tmp_path: Path, elf: str) -> None:
    first_store, second_store, path = tmp_path / "a", tmp_path / "b", tmp_path / "bundle.json"
    session = open_session(rea_registry, first_store, elf)
    try:
        greet = _address(session, "greet")
        result_of(session, "set_address_name", {"address": greet, "name": "say_hello"})
        result_of(session, "set_comment", {"address": greet, "comment": "prints the banner"})
        result_of(session, "analyze_function", {"procedure": "main", "include_assembly": False})
        exported = result_of(session, "export_evidence_bundle", {"path": str(path)})
        assert exported["annotated_targets"] == [result_of(session, "list_documents", {})["documents"][0]["sha256"]]
    finally:
        session.close()
    fresh = open_session(rea_registry, second_store, elf)
    try:
        assert result_of(fresh, "procedure_info", {"procedure": greet})["name"] == "greet"
        imported = result_of(fresh, "import_evidence_bundle", {"path": str(path)})
        assert imported["annotations"][0]["added_fields"] == 2 and imported["annotations"][0]["conflict_count"] == 0
        info = result_of(fresh, "procedure_info", {"procedure": "say_hello"})
        assert info["address"] == greet and info["comment"] == "prints the banner"
        summary = result_of(fresh, "get_evidence_bundle", {"detail": "summary"})
        assert summary["annotations"][0]["address_count"] == 1
        again = result_of(fresh, "import_evidence_bundle", {"path": str(path)})
        assert again["annotations"][0]["added_fields"] == 0
    finally:
        fresh.close()
