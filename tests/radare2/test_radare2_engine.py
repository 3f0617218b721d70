"""The worker's engine layer in this process: reads past radare2's sandbox block limit, unwind-table starts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rea.operations import unwind
from rea_plugins.radare2.engine import MAX_COMMAND_BLOCK
from rea_plugins.radare2.engine import Core
from rea_plugins.radare2.options import library_dir
from rea_plugins.radare2.program import Program
from tests import toolchains
from tests.radare2.conftest import require_radare2

FUNCTIONS = 2000


@pytest.fixture(scope="module")
def many_functions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 functions (an .eh_frame well over radare2's 32 KiB sandbox block) and a 100 KB constant blob."""
    require_radare2()
    gcc = toolchains.require("gcc")
    out = tmp_path_factory.mktemp("r2-many")
    lines = ["const unsigned char blob[100000] = {" + ",".join(str(i % 251) for i in range(0, 100000, 97)) + "};"]
    lines += [f"__attribute__((noinline)) int f{i}(int x) {{ return x * {i} + (x >> 3); }}" for i in range(FUNCTIONS)]
    lines.append(
        "int main(int c, char **v) { (void)v; int t = 0; "
        + " ".join(f"t += f{i}(c);" for i in range(FUNCTIONS))
        + " return t + blob[c]; }"
    )
    (out / "many.c").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [gcc, "-O1", "-o", str(out / "many"), str(out / "many.c")], check=True, capture_output=True, timeout=300
    )
    return out / "many"


@pytest.fixture(scope="module")
def program(many_functions: Path) -> Program:
    """The program loaded in this process (one radare2 core per process, as in the worker)."""
    libdir = library_dir()
    assert libdir is not None
    return Program(Core(libdir), str(many_functions), many_functions.name, "", "elf")


def test_reads_larger_than_the_sandbox_block_are_whole(many_functions: Path, program: Program) -> None:
    rodata = next(r for r in program.sections if r.name == ".rodata")
    assert rodata.size > 3 * MAX_COMMAND_BLOCK
    expected = many_functions.read_bytes()[rodata.file_offset : rodata.file_offset + rodata.size]
    assert program.core.read(rodata.start, rodata.size) == expected


def test_unwind_starts_are_every_fde(many_functions: Path, program: Program) -> None:
    objdump = toolchains.require("objdump")
    listing = subprocess.run(
        [objdump, "--dwarf=frames", str(many_functions)], check=True, capture_output=True, text=True
    ).stdout
    fdes = {int(a, 16) for a in re.findall(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.", listing)}
    assert len(fdes) > FUNCTIONS
    eh_frame = next(r for r in program.sections if r.name == ".eh_frame")
    assert eh_frame.size > MAX_COMMAND_BLOCK
    ranges = unwind.fde_ranges(program.core.read(eh_frame.start, eh_frame.size), eh_frame.start, 8)
    assert {start for start, _ in ranges} == fdes
    assert fdes <= set(program._seeds())
