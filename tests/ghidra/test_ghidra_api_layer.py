"""The worker's Ghidra-API layer (extract, engine) against stub ``ghidra.*``/``java.*``/``pyghidra`` modules."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from rea.errors import ReaError
from rea.operations.answers import Answers
from rea.operations.answers import answer
from tests.ghidra import stub_ghidra


class Progress:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def progress(self, message: str) -> None:
        self.messages.append(message)


@pytest.fixture
def stubs() -> Iterator[dict[str, Any]]:
    with stub_ghidra.installed() as installed:
        yield installed


@pytest.fixture
def answers(stubs: dict[str, Any]) -> Answers:
    from rea_plugins.ghidra.extract import GhidraSource

    program = stub_ghidra.build_program()
    return Answers(GhidraSource(program, "prog", program.sha256), "ghidra")


def ask(a: Answers, op: str, **params: Any) -> Any:
    return answer(a, op, params, decompile_timeout_s=30)[0]


def test_document_and_sections(answers: Answers) -> None:
    doc = ask(answers, "list_documents")["documents"][0]
    assert doc == {
        "name": "prog",
        "format": "elf",
        "architecture": "x86_64",
        "sha256": "ab" * 32,
        "entry": "0x101040",
        "bits": 64,
        "endianness": "little",
    }
    segs = {s["name"]: s for s in ask(answers, "list_segments")["segments"]}
    # Blocks outside the default space (the ELF header) are not the program's memory.
    assert set(segs) == {".plt", ".text", ".rodata", ".got", ".bss"}
    assert segs[".text"] == {
        "name": ".text",
        "start": "0x101040",
        "end": "0x101100",
        "size": 0xC0,
        "permissions": "r-x",
        "file_offset": 0x1040,
        "file_size": 0xC0,
        "kind": "section",
    }
    assert segs[".bss"]["file_offset"] is None and segs[".bss"]["file_size"] == 0


def test_procedures_place_imports_at_their_stub_or_slot(answers: Answers) -> None:
    procs = {p["name"] + "@" + p["address"]: p for p in ask(answers, "list_procedures")["procedures"]}
    assert procs["puts@0x101030"]["kind"] == "import"  # a thunk of an external: its PLT stub
    assert procs["printf@0x103fe0"] == {
        "address": "0x103fe0",
        "name": "printf",
        "size": 8,
        "kind": "import",
        "end": "0x103fe8",
    }  # no stub: its slot
    assert procs["main@0x101040"] == {
        "address": "0x101040",
        "name": "main",
        "size": 0x1C,
        "kind": "local",
        "end": "0x10105c",
    }
    info = ask(answers, "procedure_info", procedure="main")
    assert info["section"] == ".text" and info["basic_block_count"] == 3 and info["instruction_count"] == 8
    assert info["signature"] == "int main(void)" and info["calling_convention"] == "__stdcall"
    greet = ask(answers, "procedure_info", procedure="greet")
    assert greet["calling_convention"] is None and greet["signature"] is None
    inside = ask(answers, "resolve_containing_procedure", address="0x101050")["procedure"]
    assert inside == {"address": "0x101040", "name": "main", "size": 0x1C, "end": "0x10105c"}
    assert ask(answers, "resolve_containing_procedure", address="0x101070")["procedure"] is None


def test_names_are_the_binarys_symbols(answers: Answers) -> None:
    names = {(n["name"], n["address"]): n for n in ask(answers, "list_names", limit=1000)["names"]}
    assert names["puts", "0x101030"] == {"address": "0x101030", "name": "puts", "kind": "import", "external": True}
    assert names["printf", "0x103fe0"]["kind"] == "import"
    assert names["main", "0x101040"]["kind"] == "export"
    assert names["greet", "0x101060"]["kind"] == "function"
    assert names["GREETING", "0x102000"]["kind"] == "data"
    assert names["note", "0x101070"]["kind"] == "label"
    assert not any(name == "libc.so.6" for name, _ in names)
    assert ask(answers, "address_name", address="0x102000")["name"] == "GREETING"


def test_strings_keep_their_encoding_and_lose_the_terminator(answers: Answers) -> None:
    strings = ask(answers, "list_strings")["strings"]
    assert strings == [
        {
            "address": "0x102000",
            "value": "hello rea",
            "encoding": "ascii",
            "byte_length": 9,
            "truncated": False,
            "section": ".rodata",
        },
        {
            "address": "0x102010",
            "value": "WIDE",
            "encoding": "utf-16le",
            "byte_length": 8,
            "truncated": False,
            "section": ".rodata",
        },
    ]
    assert ask(answers, "search_strings", pattern="^w", mode="regex")["total"] == 1


def test_instructions_blocks_and_edges(answers: Answers) -> None:
    asm = ask(answers, "procedure_assembly", procedure="main")
    first = asm["instructions"][1]
    assert first == {
        "address": "0x101041",
        "bytes": "e81a000000",
        "mnemonic": "call",
        "operands": "greet",
        "text": "call greet",
    }
    assert ask(answers, "procedure_assembly", procedure="main")["instructions"][4]["operands"] == "EAX, EAX"
    blocks = ask(answers, "procedure_blocks", procedure="main")
    assert [b["instruction_count"] for b in blocks["blocks"]] == [6, 1, 1]
    assert blocks["edges"] == [
        {"from": "0x101040", "to": "0x101058", "kind": "conditional"},
        {"from": "0x101040", "to": "0x101055", "kind": "fallthrough"},
        {"from": "0x101055", "to": "0x101058", "kind": "fallthrough"},
    ]
    page = ask(answers, "read_function_instructions", procedure="main", offset=6, limit=5)
    assert page["total"] == 8 and page["next_offset"] is None and len(page["instructions"]) == 2


def test_calls_through_stubs_slots_tables_and_unknown_targets(answers: Answers) -> None:
    callees = ask(answers, "procedure_callees", procedure="main")["callees"]
    assert callees == [
        {"address": "0x101060", "name": "greet", "kind": "direct", "call_sites": ["0x101041", "0x101058"]},
        {"address": "0x101030", "name": "puts", "kind": "import", "call_sites": ["0x101046"]},
        {"address": "0x103fe0", "name": "printf", "kind": "import", "call_sites": ["0x10104b"]},
    ]
    refs = ask(answers, "procedure_references", procedure="main")["references"]
    kinds = [(r["from"], r["to"], r["kind"]) for r in refs]
    assert ("0x10104b", "0x103fe0", "external") in kinds and ("0x10104b", "0x103fe0", "call") in kinds
    assert ("0x101055", "0x104000", "write") in kinds and ("0x101058", "0x101060", "jump") in kinds
    # A branch inside the procedure is flow, not a reference.
    assert not any(r["to"] == "0x101058" for r in refs)
    dispatch = ask(answers, "procedure_references", procedure="dispatch")["references"]
    assert [(r["to"], r["kind"]) for r in dispatch] == [
        ("0x101088", "computed"),
        ("0x10108c", "computed"),
        (None, "indirect"),
    ]
    assert ask(answers, "procedure_callees", procedure="dispatch")["callees"] == [
        {"address": None, "name": None, "kind": "indirect", "call_sites": ["0x10108c"]}
    ]
    # The stub's own jump through its slot is the external read only.
    stub = ask(answers, "procedure_references", procedure="0x101030")["references"]
    assert [(r["to"], r["kind"], r["to_name"]) for r in stub] == [("0x103fd8", "external", "puts")]


def test_callers_and_xrefs_read_incoming_references(answers: Answers) -> None:
    callers = ask(answers, "procedure_callers", procedure="greet")["callers"]
    assert callers == [{"address": "0x101040", "name": "main", "call_sites": ["0x101041", "0x101058"]}]
    printf = ask(answers, "procedure_callers", procedure="printf")["callers"]
    assert printf == [{"address": "0x101040", "name": "main", "call_sites": ["0x10104b"]}]
    xrefs = ask(answers, "xrefs", address="0x102000")
    assert xrefs == {
        "address": "0x102000",
        "references": [{"from": "0x101060", "from_procedure": "0x101060", "kind": "data", "to": "0x102000"}],
    }


def test_pseudo_code_and_its_failures(answers: Answers) -> None:
    code = ask(answers, "procedure_pseudo_code", procedure="main")
    assert code == {
        "address": "0x101040",
        "name": "main",
        "language": "c",
        "decompiler": "ghidra",
        "text": "int main(void)\n{\n  greet();\n  return 0;\n}\n",
    }
    with pytest.raises(ReaError) as slow:
        ask(answers, "procedure_pseudo_code", procedure="dispatch")
    assert slow.value.code == "provider_timeout"
    assert slow.value.details["setting"] == "REA_GHIDRA_DECOMPILE_TIMEOUT_MS"
    with pytest.raises(ReaError) as failed:
        ask(answers, "procedure_pseudo_code", procedure="greet")
    assert failed.value.code == "execution_failure" and failed.value.details["reason"] == "no_output"
    with pytest.raises(ReaError) as imported:
        ask(answers, "procedure_pseudo_code", procedure="printf")
    assert imported.value.code == "capability_unavailable"


def test_selectors_and_pages_are_validated(answers: Answers) -> None:
    with pytest.raises(ReaError) as err:
        ask(answers, "procedure_info", procedure="nope")
    assert err.value.code == "invalid_request" and err.value.details["issues"][0]["path"] == "procedure"
    with pytest.raises(ReaError) as err:
        ask(answers, "list_procedures", limit=0)
    assert err.value.details["issues"][0]["reason"] == "out_of_range"
    with pytest.raises(ReaError) as err:
        ask(answers, "xrefs", address="main+4")
    assert err.value.details["issues"][0]["reason"] == "invalid_format"
    assert ask(answers, "search_procedures", pattern="GRE")["procedures"][0]["name"] == "greet"


def test_engine_start_imports_into_a_temporary_private_project(stubs: dict[str, Any]) -> None:
    from rea_plugins.ghidra.engine import Engine

    program = stub_ghidra.build_program()
    stub_ghidra.StubProgramLoader.program = program
    engine, reporter = Engine(), Progress()
    source = engine.start(
        {
            "install_dir": "/opt/ghidra",
            "path": "/targets/prog",
            "name": "prog",
            "sha256": program.sha256,
            "max_heap_mb": 1024,
        },
        reporter,
    )  # type: ignore[arg-type]
    assert stub_ghidra.StubLauncher.install_dirs == ["/opt/ghidra"]
    assert "-Xmx1024m" in stub_ghidra.StubLauncher.vmargs
    assert f"-Djava.io.tmpdir={tempfile.gettempdir()}" in stub_ghidra.StubLauncher.vmargs
    ((folder, _name, temporary),) = stub_ghidra.StubProject.created
    assert temporary is True and folder.startswith(tempfile.gettempdir())
    assert stub_ghidra.StubProgramLoader.sources == ["/targets/prog"]
    assert stubs["analyzed"] == [program]
    assert any("auto-analysis" in m for m in reporter.messages)
    assert {p.name for p in source.inventory().procedures} >= {"main", "greet"}
    engine.close()
    assert program.released and stub_ghidra.StubProject.closed == 1


def test_engine_start_failures_are_typed_without_engine_text(stubs: dict[str, Any]) -> None:
    from rea_plugins.ghidra.engine import Engine

    program = stub_ghidra.build_program()
    stub_ghidra.StubProgramLoader.program = program
    params = {"install_dir": "/opt/ghidra", "path": "/t/p", "name": "p", "sha256": program.sha256}
    stub_ghidra.StubLauncher.fail = True
    with pytest.raises(ReaError) as jvm:
        Engine().start(params, Progress())  # type: ignore[arg-type]
    assert jvm.value.code == "provider_unavailable" and jvm.value.details["reason"] == "jvm_start_failed"
    assert "Java was not found" not in jvm.value.message
    stub_ghidra.StubLauncher.fail = False
    stub_ghidra.StubProgramLoader.fail = True
    with pytest.raises(ReaError) as load:
        Engine().start(params, Progress())  # type: ignore[arg-type]
    assert load.value.code == "unsupported_target" and "LoadException" not in load.value.message
    stub_ghidra.StubProgramLoader.fail = False
    with pytest.raises(ReaError) as changed:
        Engine().start({**params, "sha256": "cd" * 32}, Progress())  # type: ignore[arg-type]
    assert changed.value.code == "artifact_changed"


def test_the_whole_call_graph_is_every_procedures_callees(answers: Answers) -> None:
    """program_call_graph over the records (Ghidra's and Hopper's layer) says what procedure_callees says."""
    from collections import Counter

    graph = ask(answers, "program_call_graph", limit=5000)
    procs = ask(answers, "list_procedures", limit=1000)["procedures"]
    assert graph["procedures"] == len(procs) and graph["next_offset"] is None
    expected: Counter[tuple[str, str | None, str]] = Counter()
    for p in procs:
        for c in ask(answers, "procedure_callees", procedure=p["address"])["callees"]:
            expected[p["address"], c["address"], c["kind"]] += len(c["call_sites"])
    got = Counter({(e["caller"], e["callee"], e["kind"]): e["calls"] for e in graph["edges"]})
    assert got == expected and expected
    assert {e["caller"] for e in graph["edges"]} <= set(graph["names"])
