"""The native provider on real code (zstd 1.5.7, cmark-gfm as PE): facts an agent got wrong, against the
unstripped build's truth (objdump, readelf, nm) and the source.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.realcode import builds


def _open(registry: Registry, build: builds.Build) -> Session:
    session = Session(registry)
    result_of(session, "open_binary", {"path": str(build.binary), "provider_id": "native"})
    return session


@pytest.fixture(scope="module")
def zstd(rea_registry: Registry) -> Iterator[tuple[builds.Build, Session]]:
    build = builds.zstd()
    session = _open(rea_registry, build)
    try:
        yield build, session
    finally:
        session.close()


@pytest.fixture(scope="module")
def pe(rea_registry: Registry) -> Iterator[tuple[builds.Build, Session]]:
    build = builds.cmark_gfm("x86_64-pe")
    session = _open(rea_registry, build)
    try:
        yield build, session
    finally:
        session.close()


def _procedures(session: Session) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
        out += page["procedures"]
        offset = page["next_offset"]
    return out


def test_data_imports_are_named_slots_not_procedures(zstd: tuple[builds.Build, Session]) -> None:
    build, session = zstd
    objdump = toolchains.require("objdump")
    relocs = subprocess.run([objdump, "-R", str(build.binary)], check=True, capture_output=True, text=True).stdout
    dynsyms = subprocess.run([objdump, "-T", str(build.binary)], check=True, capture_output=True, text=True).stdout
    # Truth: undefined dynamic symbols that are not functions (no "F" flag) and reached through a GLOB_DAT slot.
    untyped = {line.split()[-1] for line in dynsyms.splitlines() if "*UND*" in line and " DF " not in line}
    glob_dat = {
        m.group(2): int(m.group(1), 16)
        for m in re.finditer(r"^([0-9a-f]+) R_X86_64_GLOB_DAT\s+(\S+?)(?:@\S+)?$", relocs, re.M)
    }
    data = {name: slot for name, slot in glob_dat.items() if name in untyped}
    assert {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable"} <= set(data)
    names = {p["name"] for p in _procedures(session)}
    assert not set(data) & names, "data imports listed as procedures"
    assert "free" in names and "__libc_start_main" in names  # code imports stay procedures
    api = result_of(session, "inspect_native_api", {"max_operations": 0})
    listed = {i["name"]: i for lib in api["libraries"] for i in lib["imports"]}
    for name, slot in data.items():
        assert listed[name]["kind"] == "data" and int(listed[name]["slot"], 16) == slot, listed[name]
        assert listed[name]["address"] is None
    assert "kind" not in listed["free"]


def test_copied_library_variables_are_data_imports(zstd: tuple[builds.Build, Session]) -> None:
    build, session = zstd
    objdump = toolchains.require("objdump")
    relocs = subprocess.run([objdump, "-R", str(build.binary)], check=True, capture_output=True, text=True).stdout
    # Truth: the executable copies libc's stdout and stderr into its .bss (R_X86_64_COPY); they are libc's data.
    copied = {
        m.group(2): int(m.group(1), 16)
        for m in re.finditer(r"^([0-9a-f]+) R_X86_64_COPY\s+(\S+?)(?:@\S+)?$", relocs, re.M)
    }
    assert {"stdout", "stderr"} <= set(copied)
    api = result_of(session, "inspect_native_api", {"max_operations": 0})
    listed = {i["name"]: i for lib in api["libraries"] for i in lib["imports"]}
    for name, slot in copied.items():
        assert listed[name]["kind"] == "data" and int(listed[name]["slot"], 16) == slot, listed[name]
        assert listed[name]["purpose"] == "console-io"
        names = result_of(session, "list_names", {"address": hex(slot)})["names"]
        assert [(n["name"], n["kind"], n["external"]) for n in names] == [(name, "import", True)]
    assert not set(copied) & {p["name"] for p in _procedures(session)}


_INTEL = ("-M", "intel", "--no-show-raw-insn")


def _register_call_sites(text: str) -> list[int]:
    """The addresses of the calls through a register in objdump's Intel-syntax ``text``."""
    return [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+call\s+r[a-z0-9]+\s*$", text, re.M)]


def test_a_register_call_loaded_with_either_of_two_functions_resolves_to_both(
    zstd: tuple[builds.Build, Session],
) -> None:
    build, session = zstd
    symbols = build.symbols()
    literals = symbols["ZSTD_compressLiterals"][0]
    one, four = symbols["HUF_compress1X_repeat"][0], symbols["HUF_compress4X_repeat"][0]
    # Truth from the unstripped build: ZSTD_compressLiterals's one register call, and the two functions the
    # source chooses between (`singleStream ? HUF_compress1X_repeat : HUF_compress4X_repeat`).
    text = build.disassembly(literals, symbols["ZSTD_compressLiterals"][1], *_INTEL)
    sites = _register_call_sites(text)
    assert len(sites) == 1
    targets = result_of(session, "resolve_native_call_targets", {"procedure": hex(literals), "address": hex(sites[0])})
    site = targets["call_sites"][0]
    assert site["status"] == "resolved" and site["kind"] == "indirect"
    assert {int(t["address"], 16) for t in site["targets"]} == {one, four}
    assert {t["provenance"] for t in site["targets"]} == {"register-load"}
    callees = result_of(session, "procedure_callees", {"procedure": hex(literals)})["callees"]
    assert {int(c["address"], 16) for c in callees if c["kind"] == "indirect" and c["address"]} == {one, four}
    assert not [c for c in callees if c["address"] is None], "the resolved site is still an unknown callee"
    for target in (one, four):
        callers = result_of(session, "procedure_callers", {"procedure": hex(target)})["callers"]
        assert [hex(sites[0])] in [c["call_sites"] for c in callers if int(c["address"], 16) == literals]


def test_a_register_call_through_a_select_spilled_to_the_stack_resolves_to_both(
    zstd: tuple[builds.Build, Session],
) -> None:
    build, session = zstd
    # Truth from the source: COVER_ctx_init passes `ctx->d <= 8 ? &COVER_cmp8 : &COVER_cmp` to COVER_groupBy,
    # inlined, which calls `cmp(ctx, ptr, grpEnd)`; gcc selects with a cmov and keeps the pointer in a spill slot.
    source = (build.source / "zstd.c").read_text()
    assert "(ctx->d <= 8 ? &COVER_cmp8 : &COVER_cmp), &COVER_group);" in source
    assert "cmp(ctx, ptr, grpEnd)" in source
    symbols = build.symbols()
    start, size = symbols["COVER_ctx_init"]
    text = build.disassembly(start, size, *_INTEL)
    sites = _register_call_sites(text)
    assert len(sites) == 1 and re.search(r"\scmov\w+\s", text)
    found = result_of(session, "resolve_native_call_targets", {"procedure": hex(start), "address": hex(sites[0])})
    site = found["call_sites"][0]
    assert site["status"] == "resolved"
    assert {(int(t["address"], 16), t["provenance"]) for t in site["targets"]} == {
        (symbols["COVER_cmp8"][0], "register-select"),
        (symbols["COVER_cmp"][0], "register-select"),
    }


def test_an_import_is_reached_through_its_thunk(pe: tuple[builds.Build, Session]) -> None:
    build, session = pe
    objdump = toolchains.require("objdump")
    text = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(build.unstripped)], check=True, capture_output=True, text=True
    ).stdout
    main = build.symbols()["main"][0]
    # Truth: the thunk is `jmp *__imp_fopen`, and main calls the thunk.
    thunk = int(re.search(r"^([0-9a-f]+) <fopen>:", text, re.M).group(1), 16)  # type: ignore[union-attr]
    calls = {int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+call\s+[0-9a-f]+ <fopen>$", text, re.M)}
    assert calls
    found = result_of(session, "find_xrefs_to_name", {"name": "fopen"})["matches"]
    refs = [r for m in found for r in m["references"]]
    assert [r for r in refs if r["kind"] == "thunk"] == [
        {"from": hex(thunk), "from_procedure": hex(thunk), "kind": "thunk", "to": found[0]["address"]}
    ]
    through = {int(r["from"], 16): r for r in refs if r.get("via_thunk") == hex(thunk)}
    assert set(through) == calls and all(int(r["from_procedure"], 16) == main for r in through.values())
    callers = result_of(session, "procedure_callers", {"procedure": "fopen"})["callers"]
    assert [int(c["address"], 16) for c in callers] == [main]
    # The import itself (its IAT slot): the thunk once, as a thunk, then the code calling the thunk, via it.
    slot = found[0]["address"]
    callers = result_of(session, "procedure_callers", {"procedure": slot})["callers"]
    assert [c for c in callers if c.get("kind") == "thunk"] == [
        {"address": hex(thunk), "name": "fopen", "call_sites": [hex(thunk)], "kind": "thunk"}
    ]
    via = [c for c in callers if c.get("via_thunk") == hex(thunk)]
    assert [int(c["address"], 16) for c in via] == [main]
    assert {int(s, 16) for s in via[0]["call_sites"]} == calls
    assert len(callers) == 2


def test_the_c_runtime_variables_a_pe_imports_are_data(pe: tuple[builds.Build, Session]) -> None:
    build, session = pe
    gcc = toolchains.require("x86_64-w64-mingw32-gcc")
    nm = toolchains.require("nm")
    library = subprocess.run(
        [gcc, "-print-file-name=libmsvcrt.a"], check=True, capture_output=True, text=True
    ).stdout.strip()
    members = subprocess.run([nm, library], capture_output=True, text=True).stdout
    # Truth: MinGW's import library gives msvcrt's DATA exports an __imp_ pointer and no code stub.
    pointers = set(re.findall(r" I __imp_(\S+)$", members, re.M))
    stubs = set(re.findall(r" T (\S+)$", members, re.M))
    slots = {
        m.group(2): int(m.group(1), 16)
        for m in re.finditer(
            r"^([0-9a-f]+) I __imp_(\S+)$",
            subprocess.run([nm, str(build.unstripped)], check=True, capture_output=True, text=True).stdout,
            re.M,
        )
    }
    data = {name: slot for name, slot in slots.items() if name in pointers - stubs}
    assert {"_fmode", "_commode", "__initenv", "_acmdln"} <= set(data)
    api = result_of(session, "inspect_native_api", {"max_operations": 0})
    listed = {i["name"]: i for lib in api["libraries"] for i in lib["imports"]}
    for name, slot in data.items():
        assert listed[name]["kind"] == "data" and int(listed[name]["slot"], 16) == slot, listed[name]
    names = {p["name"] for p in _procedures(session)}
    assert not set(data) & names
    assert {"_setmode", "_fileno", "__getmainargs"} <= names  # functions stay procedures


def test_msvcrt_descriptor_functions_are_file_io(pe: tuple[builds.Build, Session]) -> None:
    _, session = pe
    api = result_of(session, "inspect_native_api", {"max_operations": 0})
    purposes = {i["name"]: i["purpose"] for lib in api["libraries"] for i in lib["imports"]}
    assert purposes["_setmode"] == purposes["_fileno"] == purposes["fopen"] == "file-io"


@pytest.mark.parametrize("kind", ["x86_64-elf", "x86_64-pe"])
def test_a_function_pointer_passed_in_by_the_only_caller_resolves_there(rea_registry: Registry, kind: str) -> None:
    build = builds.cmark_gfm(kind)  # type: ignore[arg-type]
    symbols = build.symbols()
    # Truth from the source: registry.c calls `reg_fn(plugin)`, and core-extensions.c's one call passes
    # `cmark_register_plugin(core_extensions_registration)`.
    source = build.source / "third_party" / "cmark"
    assert "reg_fn(plugin)" in (source / "src" / "registry.c").read_text()
    assert (
        "cmark_register_plugin(core_extensions_registration);"
        in (source / "extensions" / "core-extensions.c").read_text()
    )
    start, size = symbols["cmark_register_plugin"]
    target = symbols["core_extensions_registration"][0]
    objdump = toolchains.require("objdump")
    text = subprocess.run(
        [objdump, "-d", "-M", "intel", "--no-show-raw-insn", str(build.unstripped)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    body = subprocess.run(
        [
            objdump,
            "-d",
            "-M",
            "intel",
            "--no-show-raw-insn",
            f"--start-address={start}",
            f"--stop-address={start + (size or 0x80)}",
            str(build.unstripped),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    sites = [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+call\s+r[a-z0-9]+\s*$", body, re.M)]
    assert len(sites) == 1
    # ... and the unstripped build has exactly one direct call of cmark_register_plugin.
    callers = re.findall(r"call\s+[0-9a-f]+ <cmark_register_plugin>", text)
    assert len(callers) == 1
    session = _open(rea_registry, build)
    try:
        found = result_of(session, "resolve_native_call_targets", {"procedure": hex(start), "address": hex(sites[0])})
        site = found["call_sites"][0]
        assert site["status"] == "resolved"
        assert [(int(t["address"], 16), t["provenance"]) for t in site["targets"]] == [(target, "caller-argument")]
        callees = result_of(session, "procedure_callees", {"procedure": hex(start)})["callees"]
        assert target in {int(c["address"], 16) for c in callees if c["address"]}
        back = result_of(session, "procedure_callers", {"procedure": hex(target)})["callers"]
        assert [hex(sites[0])] in [c["call_sites"] for c in back if int(c["address"], 16) == start]
        graph = result_of(session, "get_call_graph", {"address": hex(start), "direction": "forward", "depth": 1})
        assert {"from": hex(start), "to": hex(target), "call_sites": [hex(sites[0])], "kind": "indirect"} in graph[
            "edges"
        ]
        assert graph["unresolved_call_sites"] == 0
    finally:
        session.close()
