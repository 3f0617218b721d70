"""Hostile inputs for the specialist inspectors: truncated cores, fuzzed Go function tables and build information
inside a real ELF, damaged WebAssembly sections. Each answers, or fails with a typed error, never a traceback or
a parser's text."""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.crash import crashfixtures
from tests.kernel.test_golang import buildinfo
from tests.kernel.test_golang import pclntab_118
from tests.robustness import runner
from tests.wasm import wasmfixtures

PARSER_WORDS = ("Traceback", "IndexError", "KeyError", "struct.error", "GoFormatError", "WasmParseError", "lief")
CODES = {"unsupported_target", "invalid_request", "resource_constraint", "target_unsupported"}


def _answers(session: Session, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    return runner.answer_or_refusal(session, tool, args, CODES, PARSER_WORDS)


# -- cores --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("crash-hostile")
    program = crashfixtures.build(toolchains.require("gcc"), out)
    core = crashfixtures.kernel_core(program, out) or crashfixtures.debugger_core(
        toolchains.require("gdb"), program, out
    )
    return {"program": program, "core": core}


def test_truncated_cores(crash: dict[str, Path], session: Session, tmp_path: Path) -> None:
    data = crash["core"].read_bytes()
    cuts = [0, 4, 20, 63, 64, 200, 1000, 4096, len(data) // 3, len(data) // 2, len(data) - 1]
    answered = 0
    for n, cut in enumerate(cuts):
        path = tmp_path / f"core.{n}"
        path.write_bytes(data[:cut])
        for extra in ({}, {"executable_path": str(crash["program"])}):
            if _answers(session, "inspect_recorded_crash", {"path": str(path), **extra}) is not None:
                answered += 1
    # A core cut after its notes still answers (threads, signal) with what its memory holds.
    assert answered >= 2


def test_scrambled_core_notes(crash: dict[str, Path], session: Session, tmp_path: Path) -> None:
    data = bytearray(crash["core"].read_bytes())
    rng = random.Random(52)
    # The program headers and the notes live in the first pages: damage them there.
    for n in range(12):
        mutant = bytearray(data)
        for _ in range(8):
            at = rng.randrange(64, min(len(mutant), 16384))
            mutant[at] = rng.randrange(256)
        path = tmp_path / f"scrambled.{n}"
        path.write_bytes(bytes(mutant))
        _answers(session, "inspect_recorded_crash", {"path": str(path), "executable_path": str(crash["program"])})


# -- Go tables inside a real ELF ----------------------------------------------------------------------------------

CARRIER = r"""
__attribute__((used)) const unsigned char go_tables[16384] = {1};
int main(void) { return go_tables[0]; }
"""


@pytest.fixture(scope="module")
def carrier(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    """A C program whose .rodata holds a 16 KiB array: where the test writes Go tables (found by magic, as in a
    PE), and the array's file offset."""
    out = tmp_path_factory.mktemp("go-hostile")
    (out / "carrier.c").write_text(CARRIER)
    subprocess.run(
        [toolchains.require("gcc"), "-O0", "-o", str(out / "carrier"), str(out / "carrier.c")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    data = (out / "carrier").read_bytes()
    marker = data.find(b"\x01" + b"\0" * 64)
    assert marker > 0
    return data, marker - marker % 16


def test_fuzzed_go_tables(carrier: tuple[bytes, int], session: Session, tmp_path: Path) -> None:
    data, at = carrier
    info = buildinfo("go1.21.0", "path\texample.com/x\nmod\texample.com/x\t(devel)\t\n")
    table = pclntab_118([("main.main", 0x401000), ("main.f", 0x401040), ("runtime.g", 0x401080)], 0x401000, 0x4010C0)
    tables = info + b"\0" * (-len(info) % 16) + table
    intact = data[:at] + tables + data[at + len(tables) :]
    path = tmp_path / "intact"
    path.write_bytes(intact)
    whole = call_tool(session, "inspect_go_binary", {"path": str(path)}).evidence
    assert whole is not None
    result = whole.normalized_result
    assert result.build is not None and result.build.path == "example.com/x"
    assert result.function_table is not None and result.function_table.function_count == 3
    rng = random.Random(52)
    for n in range(60):
        mutant = bytearray(intact)
        start = at + len(info) + (-len(info) % 16)
        for _ in range(rng.randrange(1, 6)):
            mutant[start + rng.randrange(len(table))] = rng.randrange(256)
        if n % 5 == 0:  # a damaged build information header or length too
            mutant[at + 32 + rng.randrange(8)] = rng.randrange(256)
        path = tmp_path / f"go.{n}"
        path.write_bytes(bytes(mutant))
        _answers(session, "inspect_go_binary", {"path": str(path)})
    # A huge function count claims more than the section holds: refused, not allocated.
    bloated = bytearray(intact)
    struct.pack_into("<Q", bloated, at + len(info) + (-len(info) % 16) + 8, 1 << 40)
    path = tmp_path / "bloated"
    path.write_bytes(bytes(bloated))
    _answers(session, "inspect_go_binary", {"path": str(path)})


# -- WebAssembly sections -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    tools = toolchains.require_all(("clang", "wasm-ld"))
    return wasmfixtures.build(tools["clang"], tools["wasm-ld"], tmp_path_factory.mktemp("wasm-hostile")).read_bytes()


def _leb(value: int) -> bytes:
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def test_bad_wasm_sections(module: bytes, session: Session, tmp_path: Path) -> None:
    header = b"\0asm\x01\0\0\0"
    crafted = [
        header + b"\x01" + _leb(0xFFFFFFFF) + b"\x01",  # a type section claiming 4 GiB
        header + b"\x0a" + _leb(5) + _leb(1000000) + b"\0",  # a million function bodies in 5 bytes
        header + b"\x00" + _leb(3) + _leb(200) + b"ab",  # a custom section whose name runs past it
        header + b"\x02" + _leb(4) + b"\x01\x03env\x09",  # an import whose name is cut
        header + b"\x05" + _leb(2) + b"\x01\x07",  # memory limits with an unknown flag
        b"\0asm\x0d\0\x01\0",  # a component layer with nothing after it
        header + bytes(range(256)) * 4,
    ]
    for cut in range(0, len(module), max(1, len(module) // 40)):
        crafted.append(module[:cut])
    rng = random.Random(52)
    for _ in range(40):
        mutant = bytearray(module)
        for _ in range(rng.randrange(1, 4)):
            mutant[rng.randrange(8, len(mutant))] = rng.randrange(256)
        crafted.append(bytes(mutant))
    for n, data in enumerate(crafted):
        path = tmp_path / f"m{n}.wasm"
        path.write_bytes(data)
        _answers(session, "inspect_wasm_artifact", {"path": str(path), "function": 1})
        _answers(session, "inspect_wasm_artifact", {"path": str(path)})
        # The wasm provider behind open_binary decodes the same bytes: it opens, or refuses with a typed error.
        try:
            call_tool(session, "open_binary", {"path": str(path)})
        except ReaError as exc:
            assert exc.code in CODES, (exc.code, exc.message)
            continue
        listed = call_tool(session, "list_procedures", {}).evidence
        assert listed is not None
        for proc in msgspec.to_builtins(listed.normalized_result)["procedures"][:3]:
            _answers(session, "procedure_callers", {"procedure": proc["address"]})
            _answers(session, "read_function_instructions", {"procedure": proc["address"]})
