"""angr's call graph on a stripped gcc -O2 program big enough to make angr spill functions to disk.

Past a size-dependent number of functions (images of 256 KiB and up) angr keeps only the most recently
used functions in memory and loses their call-site tables on the way to disk: ``procedure_callees`` was
empty for nearly every function of real programs while the toy fixture worked. Expected facts come from
the generated source and the symbolized build's symbol table.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rea.operations.unwind import fde_ranges
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.angr.angr_support import nm_addresses
from tests.angr.angr_support import open_angr
from tests.engine_lifecycle import op

LEAVES = 700


def _source() -> str:
    lines = [
        "#include <stdio.h>",
        # Bulk read-only data: angr spills functions only for images of 256 KiB or more.
        "const unsigned char blob[300000] = {1};",
    ]
    lines += [f"__attribute__((noinline)) int leaf{i}(int x) {{ return x * {i + 3} + {i}; }}" for i in range(LEAVES)]
    lines += [
        # helper_mul is reached only by the tail jump at the end of scale.
        "__attribute__((noinline)) int helper_mul(int a, int b) { return a * b * 7 + (a >> 3); }",
        "__attribute__((noinline)) int scale(int a, int b) { if (a > 100) return a; return helper_mul(a + 1, b); }",
        "int main(int argc, char **argv) {",
        "  int t = 0;",
        *[f"  t += leaf{i}(argc + t);" for i in range(LEAVES)],
        "  t += scale(argc, t);",
        '  printf("%d %d\\n", t, blob[argc]);',
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory, angr_programs: dict[str, Path]) -> dict[str, Path]:
    """The program built with gcc -O2 (PIE), and its stripped copy."""
    gcc, strip = toolchains.require("gcc"), toolchains.require("strip")
    out = tmp_path_factory.mktemp("angr-many")
    src = out / "many.c"
    src.write_text(_source())
    sym, stripped = out / "many", out / "many.stripped"
    subprocess.run([gcc, "-O2", "-o", str(sym), str(src)], check=True, capture_output=True, timeout=300)
    subprocess.run([strip, "-o", str(stripped), str(sym)], check=True, capture_output=True, timeout=60)
    assert stripped.stat().st_size >= 256 * 1024
    return {"symbolized": sym, "stripped": stripped}


@pytest.fixture(scope="module")
def many_session(rea_registry: Registry, many: dict[str, Path]) -> Iterator[Session]:
    session = Session(rea_registry)
    open_angr(session, many["stripped"])
    try:
        yield session
    finally:
        result_of(session, "close_binary", {})


def test_callees_of_main_list_every_direct_call(many_session: Session, many: dict[str, Path]) -> None:
    symbols = nm_addresses(many["symbolized"])
    callees = op(many_session, "procedure_callees", procedure=hex(symbols["main"]))["callees"]
    direct = {int(c["address"], 16) for c in callees if c["kind"] == "direct"}
    expected = {symbols[f"leaf{i}"] for i in range(LEAVES)} | {symbols["scale"]}
    assert expected <= direct, sorted(hex(a) for a in expected - direct)[:20]
    assert all(len(c["call_sites"]) == 1 for c in callees if c["kind"] == "direct")


def test_callers_name_main(many_session: Session, many: dict[str, Path]) -> None:
    symbols = nm_addresses(many["symbolized"])
    main = hex(symbols["main"])
    for i in range(0, LEAVES, 35):
        callers = op(many_session, "procedure_callers", procedure=hex(symbols[f"leaf{i}"]))["callers"]
        assert [c["address"] for c in callers] == [main], (i, callers)


def test_a_function_reached_only_by_a_tail_jump_is_a_procedure(many_session: Session, many: dict[str, Path]) -> None:
    symbols = nm_addresses(many["symbolized"])
    procs = op(many_session, "list_procedures", limit=1000, offset=0)["procedures"]
    assert hex(symbols["helper_mul"]) in {p["address"] for p in procs if p["kind"] == "local"}
    info = op(many_session, "procedure_info", procedure=hex(symbols["scale"]))
    assert not int(info["address"], 16) <= symbols["helper_mul"] < int(info["end"], 16), info
    callees = op(many_session, "procedure_callees", procedure=hex(symbols["scale"]))["callees"]
    assert hex(symbols["helper_mul"]) in {c["address"] for c in callees}


def test_fde_reader_agrees_with_pyelftools(many: dict[str, Path], angr_programs: dict[str, Path]) -> None:
    from elftools.dwarf.callframe import FDE  # pyelftools comes with angr (cle reads ELF with it)
    from elftools.elf.elffile import ELFFile

    for path in (many["stripped"], angr_programs["pie"], angr_programs["nopie"]):
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            section = elf.get_section_by_name(".eh_frame")
            assert section is not None, path
            ours = fde_ranges(section.data(), section["sh_addr"], elf.elfclass // 8, elf.little_endian)
            theirs = [
                (e.header["initial_location"], e.header["initial_location"] + e.header["address_range"])
                for e in elf.get_dwarf_info().EH_CFI_entries()
                if isinstance(e, FDE)
            ]
        assert sorted(ours) == sorted(theirs) and len(ours) > 5, path


def test_fde_reader_keeps_what_it_read_from_a_damaged_section() -> None:
    assert fde_ranges(b"", 0x1000, 8, True) == []
    assert fde_ranges(b"\xff" * 64, 0x1000, 8, True) == []
    assert fde_ranges(b"\x10\x00\x00\x00" + b"\x00" * 3, 0x1000, 8, True) == []
