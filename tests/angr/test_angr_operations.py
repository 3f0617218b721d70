"""Contract operations on angr's view of a program compiled now; expected facts come from its C source."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.angr.angr_support import LONG_RUN
from tests.angr.angr_support import SOURCE_FUNCTIONS
from tests.angr.angr_support import SOURCE_STRINGS
from tests.angr.angr_support import nm_addresses
from tests.angr.angr_support import open_angr
from tests.engine_lifecycle import op
from tests.engine_lifecycle import owned_alive
from tests.engine_lifecycle import worker_pid


def _addr(session: Session, name: str) -> str:
    return str(op(session, "procedure_address", procedure=name)["address"])


def _elf_entry(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(64)
    return int(struct.unpack_from("<Q", head, 24)[0])


def test_document_and_segments(angr_session: Session, angr_programs: dict[str, Path]) -> None:
    doc = op(angr_session, "list_documents")["documents"][0]
    assert (doc["format"], doc["architecture"], doc["bits"], doc["endianness"]) == ("elf", "x86_64", 64, "little")
    assert doc["entry"] == hex(_elf_entry(angr_programs["nopie"]))
    assert doc["sha256"] == angr_session.require_target().sha256
    regions = op(angr_session, "list_segments")["segments"]
    kinds = [r["kind"] for r in regions]
    assert kinds == sorted(kinds, key=lambda k: k != "segment"), "segments come before sections"
    text = next(r for r in regions if r["name"] == ".text")
    assert text["permissions"] == "r-x"
    assert int(text["end"], 16) - int(text["start"], 16) == text["size"]
    bss = next(r for r in regions if r["name"] == ".bss")
    assert bss["file_size"] == 0 and "w" in bss["permissions"]
    assert all(r["name"].startswith("LOAD") for r in regions if r["kind"] == "segment")


def test_procedures_match_the_source_and_the_symbol_table(
    angr_session: Session, angr_programs: dict[str, Path]
) -> None:
    symbols = nm_addresses(angr_programs["nopie"])
    page = op(angr_session, "list_procedures", limit=1000)
    procs = {p["name"]: p for p in page["procedures"]}
    for name in SOURCE_FUNCTIONS:
        assert procs[name]["address"] == hex(symbols[name])
        assert procs[name]["kind"] == "local"
        assert int(procs[name]["end"], 16) - int(procs[name]["address"], 16) == procs[name]["size"] > 0
    for name in ("puts", "printf", "strlen", "abort"):
        assert procs[name]["kind"] == "import"
    addresses = [int(p["address"], 16) for p in page["procedures"]]
    assert addresses == sorted(addresses) and page["total"] == len(addresses) and page["next_offset"] is None
    first = op(angr_session, "list_procedures", limit=2)
    second = op(angr_session, "list_procedures", offset=2, limit=2)
    assert first["procedures"] + second["procedures"] == page["procedures"][:4]
    assert (first["next_offset"], first["total"]) == (2, page["total"])
    found = op(angr_session, "search_procedures", pattern=r"^(add|mul)_numbers$", mode="regex")
    assert [p["name"] for p in found["procedures"]] == ["add_numbers", "mul_numbers"]
    assert op(angr_session, "search_procedures", pattern="SAY_")["procedures"][0]["name"] == "say_hello"


def test_selectors_and_addresses(angr_session: Session) -> None:
    main = _addr(angr_session, "main")
    assert op(angr_session, "procedure_address", procedure=main)["name"] == "main"
    assert op(angr_session, "address_name", address=main) == {"address": main, "name": "main"}
    inside = hex(int(main, 16) + 4)
    contained = op(angr_session, "resolve_containing_procedure", address=inside)
    assert contained["procedure"]["name"] == "main" and contained["address"] == inside
    assert op(angr_session, "resolve_containing_procedure", address="0x10")["procedure"] is None
    for bad in ("no_such_function", inside):
        with pytest.raises(ReaError) as info:
            op(angr_session, "procedure_info", procedure=bad)
        assert info.value.code == "invalid_request"
        assert info.value.details["issues"][0]["path"] == "procedure"
        assert info.value.details["issues"][0]["reason"] == "invalid_value"
    with pytest.raises(ReaError) as info:
        op(angr_session, "xrefs", address="not-an-address")
    assert info.value.code == "invalid_request"


def test_strings_from_the_source(angr_session: Session) -> None:
    page = op(angr_session, "list_strings", limit=1000)
    by_value = {s["value"]: s for s in page["strings"]}
    for literal in SOURCE_STRINGS:
        if len(literal) >= 4:
            item = by_value[literal]
            assert (item["encoding"], item["byte_length"], item["truncated"]) == ("ascii", len(literal), False)
            assert item["section"] == ".rodata"
    hits = op(angr_session, "search_strings", pattern="GREETING")["strings"]
    assert [s["value"] for s in hits] == ["rea-angr greeting"]
    hits = op(angr_session, "search_strings", pattern=r"^result %d", mode="regex", case_sensitive=True)["strings"]
    assert [s["value"] for s in hits] == ["result %d\n"]
    greeting = by_value["rea-angr greeting"]["address"]
    at = op(angr_session, "list_strings", address=greeting)["strings"]
    assert [s["value"] for s in at] == ["rea-angr greeting"]
    with pytest.raises(ReaError) as info:
        op(angr_session, "search_strings", pattern="([", mode="regex")
    assert info.value.details["issues"][0]["path"] == "pattern"


def test_names_from_the_loader(angr_session: Session, angr_programs: dict[str, Path]) -> None:
    symbols = nm_addresses(angr_programs["nopie"])
    names = op(angr_session, "list_names", limit=1000)["names"]
    entries = {(n["name"], n["kind"]): n for n in names}
    assert entries["main", "function"]["address"] == hex(symbols["main"])
    assert entries["table", "data"]["address"] == hex(symbols["table"])
    puts = entries["puts", "import"]
    assert puts["external"] is True and puts["address"] == _addr(angr_session, "puts")
    at_main = op(angr_session, "list_names", address=hex(symbols["main"]))["names"]
    assert [n["name"] for n in at_main] == ["main"]


def test_calls_follow_the_source(angr_session: Session) -> None:
    callees = op(angr_session, "procedure_callees", procedure="main")["callees"]
    by_name = {c["name"]: c for c in callees}
    for name in ("say_hello", "apply_op", "classify"):
        assert by_name[name]["kind"] == "direct" and by_name[name]["address"] == _addr(angr_session, name)
    for name in ("strlen", "printf", "abort"):
        assert by_name[name]["kind"] == "import"
    hello = op(angr_session, "procedure_callees", procedure="say_hello")["callees"]
    assert {c["name"] for c in hello} >= {"puts", "printf"} or {c["name"] for c in hello} >= {"puts"}
    # apply_op calls through a function-pointer table: an indirect call, never "direct".
    indirect = op(angr_session, "procedure_callees", procedure="apply_op")["callees"]
    assert indirect and all(c["kind"] == "indirect" for c in indirect)
    assert any(c["address"] is None for c in indirect), "the computed call keeps an explicit unknown target"
    assert {c["name"] for c in indirect} <= {"add_numbers", "mul_numbers", None}
    callers = op(angr_session, "procedure_callers", procedure="say_hello")
    assert [c["name"] for c in callers["callers"]] == ["main"]
    site = callers["callers"][0]["call_sites"][0]
    assert site in by_name["say_hello"]["call_sites"]
    insn = op(angr_session, "read_function_instructions", procedure="main", limit=1000, split_operands=True)[
        "instructions"
    ]
    assert next(i for i in insn if i["address"] == site)["mnemonic"] == "call"


def test_references_and_xrefs(angr_session: Session, angr_programs: dict[str, Path]) -> None:
    out = op(angr_session, "procedure_references", procedure="main", direction="outgoing", limit=1000)["references"]
    calls = {r["to_name"] for r in out if r["kind"] == "call"}
    assert {"say_hello", "apply_op", "classify"} <= calls
    assert all(r["from_procedure"] == _addr(angr_session, "main") for r in out)
    strings = {s["value"]: s["address"] for s in op(angr_session, "list_strings", limit=1000)["strings"]}
    assert strings["result %d\n"] in {r["to"] for r in out}
    # The function-pointer table holds add_numbers: a data reference from .data.
    incoming = op(angr_session, "procedure_references", procedure="add_numbers", direction="incoming")["references"]
    assert any(r["kind"] == "data" and r["to"] == _addr(angr_session, "add_numbers") for r in incoming)
    xrefs = op(angr_session, "xrefs", address=strings["rea-angr greeting"])
    assert xrefs["address"] == strings["rea-angr greeting"]
    assert _addr(angr_session, "say_hello") in {r["from_procedure"] for r in xrefs["references"]}
    counter = hex(nm_addresses(angr_programs["nopie"])["call_count"])
    stores = op(angr_session, "xrefs", address=counter)["references"]
    assert ("write", _addr(angr_session, "say_hello")) in {(r["kind"], r["from_procedure"]) for r in stores}
    to_hello = op(angr_session, "xrefs", address=_addr(angr_session, "say_hello"))["references"]
    assert [(r["kind"], r["from_procedure"]) for r in to_hello] == [("call", _addr(angr_session, "main"))]


def test_blocks_assembly_and_instruction_windows(angr_session: Session) -> None:
    info = op(angr_session, "procedure_info", procedure="classify")
    assert info["name"] == "classify" and info["section"] == ".text" and info["kind"] == "local"
    blocks = op(angr_session, "procedure_blocks", procedure="classify")
    assert len(blocks["blocks"]) == info["basic_block_count"]
    assert sum(b["instruction_count"] for b in blocks["blocks"]) == info["instruction_count"]
    # Six cases of the switch: one block dispatches to at least six targets.
    assert max(len(b["successors"]) for b in blocks["blocks"]) >= 6
    refs = op(angr_session, "procedure_references", procedure="classify", limit=1000)
    assert (refs["procedure"]["name"], refs["direction"]) == ("classify", "outgoing")
    table = [r for r in refs["references"] if r["kind"] == "computed"]
    assert len({r["to"] for r in table}) >= 6, "one resolved jump-table target per case"
    assert all(int(info["address"], 16) <= int(r["to"], 16) < int(info["end"], 16) for r in table)
    starts = {b["start"] for b in blocks["blocks"]}
    assert all(e["from"] in starts and e["to"] in starts for e in blocks["edges"])
    assert {e["kind"] for e in blocks["edges"]} <= {"fallthrough", "jump", "conditional"}
    asm = op(angr_session, "procedure_assembly", procedure="classify", split_operands=True)
    assert asm["instructions"][0]["address"] == info["address"] and not asm["truncated"]
    assert len(asm["instructions"]) == info["instruction_count"]
    first = asm["instructions"][0]
    assert first["text"].startswith(first["mnemonic"]) and bytes.fromhex(first["bytes"])
    short = op(angr_session, "procedure_assembly", procedure="classify", max_instructions=2)
    assert len(short["instructions"]) == 2 and short["truncated"]
    window = op(
        angr_session, "read_function_instructions", procedure="classify", offset=1, limit=3, split_operands=True
    )
    assert window["instructions"] == asm["instructions"][1:4] and window["total"] == len(asm["instructions"])


def test_pseudo_code_mentions_callees_and_strings(angr_session: Session) -> None:
    code = op(angr_session, "procedure_pseudo_code", procedure="say_hello")
    assert (code["name"], code["language"], code["decompiler"]) == ("say_hello", "c", "angr")
    assert "puts" in code["text"] and "rea-angr greeting" in code["text"]
    main = op(angr_session, "procedure_pseudo_code", procedure="main")["text"]
    assert "say_hello" in main and "classify" in main


def test_evidence_keeps_angr_form_as_raw(angr_session: Session) -> None:
    result = angr_session.execute("procedure_info", {"procedure": "main"}, CallContext())
    assert result.raw["name"] == "main" and "is_plt" in result.raw
    ev = angr_session.evidence("procedure_info", {"procedure": "main"}, result)
    assert ev.provider.id == "angr" and ev.normalized_result["name"] == "main"
    assert ev.raw_result == result.raw
    assert ev.analysis_profile is not None and ev.analysis_profile.parameters["cfg"]["analysis"] == "CFGFast"


def test_lineage_reports_the_owned_worker(angr_session: Session) -> None:
    pid = worker_pid(angr_session)
    assert pid is not None and owned_alive(pid)
    client: Any = angr_session._client
    observations = client.lineage()
    started = observations[0]
    assert (started["event"], started["status"], started["pid"]) == ("started", "verified", pid)
    assert started["ppid"] == os.getpid() and started["pgid"] == pid
    assert observations[-1]["event"] == "snapshot"


def test_pie_addresses_are_link_time(rea_registry: Registry, angr_programs: dict[str, Path]) -> None:
    symbols = nm_addresses(angr_programs["pie"])
    session = Session(rea_registry)
    open_angr(session, angr_programs["pie"])
    try:
        procs = {p["name"]: p for p in op(session, "list_procedures", limit=1000)["procedures"]}
        for name in SOURCE_FUNCTIONS:
            assert procs[name]["address"] == hex(symbols[name])
        assert all(not n.startswith("sub_") or int(n[4:], 16) == int(p["address"], 16) for n, p in procs.items())
        doc = op(session, "list_documents")["documents"][0]
        assert doc["entry"] == hex(_elf_entry(angr_programs["pie"]))
        callees = {c["name"]: c for c in op(session, "procedure_callees", procedure="main")["callees"]}
        assert callees["classify"]["address"] == hex(symbols["classify"])
        strings = {s["value"]: s for s in op(session, "list_strings", limit=1000)["strings"]}
        assert strings["rea-angr greeting"]["section"] == ".rodata"
        xrefs = op(session, "xrefs", address=strings["rea-angr greeting"]["address"])["references"]
        assert hex(symbols["say_hello"]) in {r["from_procedure"] for r in xrefs}
    finally:
        pid = worker_pid(session)
        assert session.close() == []
        assert pid is not None and not owned_alive(pid)


def test_workflow_tools_run_on_angr(angr_session: Session) -> None:
    if "binary_overview" not in angr_session.registry.tools:
        pytest.skip("the binary tool family is not registered")
    overview = result_of(angr_session, "binary_overview", {})
    assert overview["format"] == "elf" and overview["architecture"] == "x86_64"
    assert overview["counts"]["procedures"] == op(angr_session, "list_procedures", limit=1)["total"]
    dossier = result_of(angr_session, "analyze_function", {"procedure": "say_hello"})
    assert dossier["procedure"]["name"] == "say_hello"
    assert "rea-angr greeting" in json.dumps(dossier)
    trace = result_of(angr_session, "trace_feature", {"query": "rea-angr greeting"})
    assert "say_hello" in {p["name"] for p in trace["procedures"]}
    layout = result_of(angr_session, "inspect_binary_layout", {})
    assert layout["linkage"]["needed"] == ["libc.so.6"] and "puts" in {i["name"] for i in layout["imports"]}


def test_any_re2_pattern_runs_in_linear_time_and_the_worker_survives(angr_session: Session) -> None:
    pid = worker_pid(angr_session)
    # Nested quantifiers against forty a's and a bang: exponential for a backtracking engine, linear for RE2.
    assert op(angr_session, "search_strings", pattern="^(a+)+$", mode="regex")["strings"] == []
    with pytest.raises(ReaError) as info:
        op(angr_session, "search_strings", pattern=r"(a)\1", mode="regex")
    assert info.value.code == "invalid_request" and "backreference" in info.value.message
    assert worker_pid(angr_session) == pid, "the CFG-holding worker is kept"
    hits = op(angr_session, "search_strings", pattern="^a+!$", mode="regex")["strings"]
    assert [h["value"] for h in hits] == [LONG_RUN]
