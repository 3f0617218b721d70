"""angr on real code (issue 23): zstd behind ``zstdmini`` (x86-64 PIE, gcc -O2) and cmark-gfm's MinGW PE.

angr maps a PIE 0x400000 above its link-time base; everything rea shows is at link time, and angr's own
generated names are selectors. gcc's ``.cold`` parts jump back into their parents, so sizes come from the
unwind table. Imports, needed libraries and segments come from the file's own tables, as on every provider.
Truth is the unstripped build (nm, readelf, objdump) and the file's headers.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.angr.angr_support import open_angr
from tests.engine_lifecycle import op
from tests.engine_lifecycle import owned_alive
from tests.engine_lifecycle import worker_pid
from tests.fixtures.native.native_fixtures import FixtureSet
from tests.realcode import builds

_PART = re.compile(r"\.cold(\.[0-9]+)?$")
_SUB = re.compile(r"\bsub_([0-9a-f]+)\b")


def _close(session: Session) -> None:
    pid = worker_pid(session)
    closed = result_of(session, "close_binary", {})
    assert closed["cleanup"] == "complete" and closed["closed"] is True
    assert pid is None or not owned_alive(pid)


def _require_angr() -> None:
    if importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")


@pytest.fixture(scope="module")
def zstd() -> builds.Build:
    _require_angr()
    return builds.zstd()


@pytest.fixture(scope="module")
def zstd_session(rea_registry: Registry, zstd: builds.Build) -> Iterator[Session]:
    """One angr session (one worker, one CFG) on the stripped zstdmini, shared by the module."""
    session = Session(rea_registry)
    open_angr(session, zstd.binary)
    try:
        yield session
    finally:
        _close(session)


@pytest.fixture(scope="module")
def procedures(zstd_session: Session) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = op(zstd_session, "list_procedures", offset=offset, limit=1000)
        out += page["procedures"]
        offset = page["next_offset"]
    return out


def test_pseudo_code_names_and_addresses_are_link_time(zstd_session: Session, zstd: builds.Build) -> None:
    symbols = zstd.symbols()
    starts = {a for a, _ in symbols.values()}
    address, _ = symbols["ZSTD_decompressStream"]
    result = zstd_session.execute("procedure_pseudo_code", {"procedure": hex(address)}, CallContext())
    text, name = result.normalized["text"], result.normalized["name"]
    delta = int(result.raw["address_delta"], 16)
    assert delta > 0, "angr maps this PIE above its link-time base"
    assert name == f"sub_{address:x}" and name in text
    called = {int(h, 16) for h in _SUB.findall(text)}
    # ZSTD_decompressStream calls ZSTD_decompressContinue_part_0 and others: each a function start of the build.
    assert len(called) >= 5 and called <= starts, sorted(hex(c) for c in called - starts)
    image_end = max(a + s for a, s in symbols.values())
    literals = {int(h, 16) for h in re.findall(r"\b0x([0-9a-f]+)\b", text)}
    assert not [hex(v) for v in literals if delta <= v < delta + image_end], "an address in angr's mapping"
    assert any(f"angr mapped this position-independent image {hex(delta)}" in lim for lim in result.limitations)


def test_generated_names_select_the_procedure(zstd_session: Session, zstd: builds.Build) -> None:
    address, size = zstd.symbols()["ZSTD_compressStream2"]
    raw = zstd_session.execute("procedure_info", {"procedure": hex(address)}, CallContext()).raw
    delta = int(raw["addr"], 16) - address
    assert delta > 0
    for selector in (f"sub_{address + delta:x}", f"sub_{address:x}", hex(address)):
        info = result_of(zstd_session, "procedure_info", {"procedure": selector})
        assert (info["address"], info["size"]) == (hex(address), size), selector
    with pytest.raises(ReaError) as caught:
        result_of(zstd_session, "procedure_info", {"procedure": f"sub_{address + 1:x}"})
    assert caught.value.code == "invalid_request"


def test_instruction_text_uses_link_time_targets(
    zstd_session: Session, zstd: builds.Build, procedures: list[dict[str, Any]]
) -> None:
    symbols = zstd.symbols()
    # Function starts of the build, and the import stubs (PLT entries have no symbol).
    starts = {a for a, _ in symbols.values()} | {int(p["address"], 16) for p in procedures if p["kind"] == "import"}
    address, _ = symbols["ZSTD_decompressStream"]
    sites = op(zstd_session, "resolve_native_call_targets", procedure=hex(address))["call_sites"]
    direct = [s for s in sites if s["kind"] == "direct"]
    assert len(direct) >= 5
    for site in direct:
        mnemonic, target = site["instruction"].split()
        assert (mnemonic == "call" or mnemonic.startswith("j")) and target == site["targets"][0]["address"]
        assert int(target, 16) in starts, site
    rows = zstd_session.execute(
        "read_function_instructions", {"procedure": hex(address), "limit": 1000}, CallContext()
    ).normalized["instructions"]
    calls = [r for r in rows if r["mnemonic"] == "call" and r["operands"].startswith("0x")]
    assert calls and all(int(r["operands"], 16) in starts for r in calls)
    insn = zstd_session.execute(
        "inspect_native_instruction", {"address": calls[0]["address"]}, CallContext()
    ).normalized
    assert insn["operand_details"][0]["value"] == int(calls[0]["operands"], 16)


def test_cold_parts_take_their_size_from_the_unwind_table(procedures: list[dict[str, Any]], zstd: builds.Build) -> None:
    symbols = zstd.symbols()
    by_address = {int(p["address"], 16): p for p in procedures}
    # Two 9-byte parts that jump back into their parents once measured 575 KB; the third (``mov %r14,0x20;
    # ud2``, a null-store trap) was no angr function at all.
    parts = {name: extent for name, extent in symbols.items() if _PART.search(name)}
    assert len(parts) == 3 and [name for name, (a, _) in parts.items() if a not in by_address] == []
    for name, (address, size) in parts.items():
        assert by_address[address]["size"] == size, (name, by_address[address])
    sized = [(a, s) for a, s in symbols.values() if s and a in by_address]
    agree = sum(1 for a, s in sized if by_address[a]["size"] == s)
    assert len(sized) >= 600 and agree == len(sized), [
        (hex(a), s, by_address[a]["size"]) for a, s in sized if by_address[a]["size"] != s
    ][:10]


def test_cold_parts_own_only_their_code(zstd_session: Session, zstd: builds.Build) -> None:
    for name in ("ZSTD_decompressStream.cold", "ZSTD_decompressContinue.part.0.cold"):
        address, size = zstd.symbols()[name]
        out = zstd.disassembly(address, size)
        truth = re.findall(r"^[ \t]+([0-9a-f]+):[ \t]+(?:[0-9a-f]{2} )+[ \t]*([a-z]\S*)", out, re.MULTILINE)
        assert truth and not any(m.startswith("call") for _, m in truth)
        rows = zstd_session.execute(
            "read_function_instructions", {"procedure": hex(address)}, CallContext()
        ).normalized["instructions"]
        assert [int(r["address"], 16) for r in rows] == [int(a, 16) for a, _ in truth], name
        # Its jump back into the parent is neither a call nor a tail call: the parent's calls are not its own.
        assert op(zstd_session, "procedure_callees", procedure=hex(address))["callees"] == [], name


def test_starts_are_function_starts(procedures: list[dict[str, Any]], zstd: builds.Build) -> None:
    symbols = zstd.symbols()
    truth = {a for a, _ in symbols.values()}
    extents = sorted((a, a + s) for a, s in symbols.values() if s)
    starts = {int(p["address"], 16) for p in procedures if p["kind"] in ("local", "thunk")}
    inside = [hex(s) for s in starts for a, e in extents if a < s < e]
    assert inside == [], "a start inside another function's extent"
    # crt's functions (no FDE, after padding) and a two-instruction function angr takes for alignment.
    for name in (
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "ZSTD_compressBegin_usingCDict_advanced",
    ):
        assert symbols[name][0] in starts, name
    hits = len(starts & truth)
    precision, recall = hits / len(starts), hits / len(truth)
    assert precision >= 0.99 and recall >= 0.99, (precision, recall, sorted(hex(a) for a in truth - starts)[:10])


def test_segments_are_the_program_headers(zstd_session: Session, zstd: builds.Build) -> None:
    objdump = toolchains.require("objdump")
    out = subprocess.run([objdump, "-p", str(zstd.unstripped)], check=True, capture_output=True, text=True).stdout
    # objdump lists every program header in order: a LOAD is named after its index, as readelf numbers it.
    header = r"^\s+(\S+) off\s+0x[0-9a-f]+ vaddr (0x[0-9a-f]+) .*\n\s+filesz 0x[0-9a-f]+ memsz (0x[0-9a-f]+)"
    headers = re.findall(header, out, re.MULTILINE)
    loads = [
        (f"LOAD{i}", int(vaddr, 16), int(memsz, 16)) for i, (kind, vaddr, memsz) in enumerate(headers) if kind == "LOAD"
    ]
    assert len(loads) == 4
    segments = [s for s in op(zstd_session, "list_segments")["segments"] if s["kind"] == "segment"]
    assert [(s["name"], int(s["start"], 16), s["size"]) for s in segments] == loads
    layout = op(zstd_session, "binary_layout")
    assert layout["linkage"]["needed"] == ["libc.so.6"]
    assert [(s["name"], s["start"]) for s in layout["segments"]] == [(n, hex(a)) for n, a, _ in loads]


def test_elf_imports_and_needed_libraries(zstd_session: Session, zstd: builds.Build) -> None:
    objdump = toolchains.require("objdump")
    out = subprocess.run([objdump, "-T", str(zstd.binary)], check=True, capture_output=True, text=True).stdout
    # Undefined dynamic symbols: what the program imports (the version suffix is objdump's column, not the name).
    undefined = {line.split()[-1] for line in out.splitlines() if "*UND*" in line}
    api = result_of(zstd_session, "inspect_native_api", {"max_operations": 0})
    assert api["needed"] == ["libc.so.6"] and len(undefined) >= 20
    assert {i["name"] for lib in api["libraries"] for i in lib["imports"]} == undefined
    assert [lib["library"] for lib in api["libraries"]] == ["libc.so.6"]


@pytest.fixture(scope="module")
def pe(rea_registry: Registry) -> Iterator[tuple[builds.Build, Session]]:
    _require_angr()
    build = builds.cmark_gfm("x86_64-pe")
    session = Session(rea_registry)
    open_angr(session, build.binary)
    try:
        yield build, session
    finally:
        _close(session)


def test_pe_imports_and_libraries_come_from_the_import_directory(pe: tuple[builds.Build, Session]) -> None:
    build, session = pe
    truth = build.pe_imports()
    assert set(truth) == {"KERNEL32.dll", "msvcrt.dll"} and sum(map(len, truth.values())) >= 40
    api = result_of(session, "inspect_native_api", {"max_operations": 0})
    assert api["needed"] == ["KERNEL32.dll", "msvcrt.dll"]
    listed = {lib["library"]: {i["name"] for i in lib["imports"]} for lib in api["libraries"]}
    assert listed == truth
    slots = {i["name"]: i["slot"] for i in op(session, "binary_layout")["imports"]}
    assert all(slot is not None for slot in slots.values())


def test_pe_sections_are_the_section_table(pe: tuple[builds.Build, Session]) -> None:
    build, session = pe
    objdump = toolchains.require("objdump")
    out = subprocess.run([objdump, "-hw", str(build.binary)], check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s+\S+\s+[0-9a-f]{8}", line)]
    truth = [(r[1], int(r[3], 16)) for r in rows]
    regions = op(session, "list_segments")["segments"]
    assert [r["kind"] for r in regions] == ["section"] * len(regions)
    assert [(r["name"], int(r["start"], 16)) for r in regions] == truth


@pytest.mark.parametrize("fixture_id", ["macho-arm64", "macho-x64"])
def test_macho_tables_agree_with_the_load_commands(rea_registry: Registry, fixture_id: str) -> None:
    _require_angr()
    path = FixtureSet().get(fixture_id).path  # program.c, linked with ld64.lld against libSystem
    tables: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    for provider in ("angr", "native"):
        if provider not in rea_registry.providers:
            continue
        session = Session(rea_registry)
        try:
            result_of(session, "open_binary", {"path": path, "provider_id": provider})
            tables[provider] = (op(session, "list_segments")["segments"], op(session, "binary_layout"))
        finally:
            session.close()
    segments, layout = tables["angr"]
    assert [s["name"] for s in segments if s["kind"] == "segment"][:2] == ["__PAGEZERO", "__TEXT"]
    text = next(s for s in segments if s["name"] == "__TEXT,__text")
    assert text["permissions"] == "r-x"
    assert layout["linkage"]["needed"] == ["/usr/lib/libSystem.B.dylib"]
    assert layout["linkage"]["interpreter"] == "/usr/lib/dyld"
    imports = {i["name"]: i for i in layout["imports"]}
    for name in ("_puts", "_printf", "_strlen"):
        assert imports[name]["library"] == "/usr/lib/libSystem.B.dylib" and imports[name]["slot"], name
    assert layout["mitigations"]["pie"] is True and layout["mitigations"]["nx"] is True
    if "native" in tables:
        native_segments, native_layout = tables["native"]
        assert segments == native_segments
        assert layout["linkage"] == native_layout["linkage"] and layout["sections"] == native_layout["sections"]
        assert {(i["name"], i["library"], i["slot"]) for i in layout["imports"]} == {
            (i["name"], i["library"], i["slot"]) for i in native_layout["imports"]
        }
