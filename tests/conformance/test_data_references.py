"""References from data on a real C code base: every provider finds the pointer slots of address-taken functions.

The program is the Lua 5.4 interpreter (the C sources the pinned ``lupa`` sdist bundles: about 640 functions,
some 160 of them address-taken through ``R_X86_64_RELATIVE`` pointer slots such as the ``luaL_Reg`` tables),
built in the session with gcc -O3 (PIE) and stripped. Ground truth comes from the symbolized build only: its
function symbols and the relocations whose addend is a function start. For every address-taken function the
provider's ``xrefs`` must report a ``data`` reference from one of its slots (recall at least the row's
``lua_recall``); the figures (recall per function and per slot, precision of the data references reported,
seconds) print at the end of the run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from typing import NamedTuple

import lief
import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.conformance import references_support as rs

REQUIREMENT = "lupa==2.5"
SDIST = "lupa-2.5.tar.gz"
SDIST_SHA256 = "69c6a89f2b7b08a3040d7ed2a1eeccba37a31ddc92fa199339c53a2ae3c48c34"
LUA_DIR = "lupa-2.5/third-party/lua54"
# The interpreter: every core and library file but the amalgamation (onelua.c) and the test library.
EXCLUDED = ("onelua.c", "ltests.c")
CFLAGS = ("-O3",)


class Truth(NamedTuple):
    slots: dict[int, frozenset[int]]  # address-taken function -> its pointer slots
    functions: int


class Score(NamedTuple):
    provider: str
    functions: int  # functions with a data reference from one of their slots
    slots: int  # slots reported
    reported: int  # data references reported to these functions
    seconds: float
    missed: list[str]


def _build() -> tuple[Path, Path, str]:
    gcc = toolchains.require("gcc")
    compiler = rs.first_line([gcc, "--version"])
    recipe = repr((SDIST_SHA256, EXCLUDED, CFLAGS, compiler, rs.first_line([toolchains.require("strip"), "--version"])))
    out = rs.CACHE / f"lua54-{hashlib.sha256(recipe.encode()).hexdigest()[:20]}"
    symbolized, stripped = out / "lua", out / "lua.stripped"
    if symbolized.exists() and stripped.exists():
        return symbolized, stripped, compiler
    sdist = rs.require_pip_sdist(REQUIREMENT, SDIST, SDIST_SHA256)
    staged = rs.CACHE / f"{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="rea-lua-src-") as tmp:
        for pattern in (f"{LUA_DIR}/*.c", f"{LUA_DIR}/*.h"):
            rs.extract(sdist, pattern, Path(tmp))
        src = Path(tmp) / LUA_DIR
        files = sorted(str(p) for p in src.glob("*.c") if p.name not in EXCLUDED)
        assert len(files) >= 30, files
        for cmd in (
            [gcc, *CFLAGS, "-o", str(staged / "lua"), *files, "-lm"],
            [toolchains.require("strip"), "-o", str(staged / "lua.stripped"), str(staged / "lua")],
        ):
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"building Lua failed: {cmd[0]}\n{proc.stderr[-2000:]}"
    rs.publish(staged, out)
    return symbolized, stripped, compiler


def _truth(path: Path) -> Truth:
    binary = lief.ELF.parse(str(path))
    assert binary is not None
    functions = {int(s.value) for s in binary.symtab_symbols if s.type == lief.ELF.Symbol.TYPE.FUNC and s.value}
    slots: dict[int, set[int]] = {}
    for r in binary.dynamic_relocations:
        if str(r.type).endswith("_RELATIVE") and int(r.addend) in functions:
            slots.setdefault(int(r.addend), set()).add(int(r.address))
    return Truth({f: frozenset(s) for f, s in slots.items()}, len(functions))


class _Report:
    def __init__(self) -> None:
        self.program = ""
        self.total = (1, 1)
        self.scores: dict[str, Score] = {}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.scores:
            return
        functions, slots = self.total
        terminalreporter.write_sep("-", "references from data (Lua 5.4, address-taken functions)")
        terminalreporter.write_line(self.program)
        terminalreporter.write_line(f"{'provider':<10} {'functions':>10} {'slots':>8} {'precision':>10} {'time':>8}")
        for s in self.scores.values():
            precision = s.slots / s.reported if s.reported else 0.0
            terminalreporter.write_line(
                f"{s.provider:<10} {s.functions / functions:>10.3f} {s.slots / slots:>8.3f} "
                f"{precision:>10.3f} {s.seconds:>7.1f}s"
            )


_REPORT = _Report()


@pytest.fixture(scope="module")
def lua(request: pytest.FixtureRequest) -> tuple[Path, Truth]:
    if not request.config.pluginmanager.is_registered(_REPORT):
        request.config.pluginmanager.register(_REPORT, "rea-data-references-report")
    symbolized, stripped, compiler = _build()
    truth = _truth(symbolized)
    if not truth.slots:
        pytest.skip("the host gcc's relocations are not of a kind this reader knows (no *_RELATIVE to functions)")
    # A truth this small would mean the build or the reader broke.
    assert truth.functions >= 500 and len(truth.slots) >= 120, (truth.functions, len(truth.slots))
    _REPORT.total = (len(truth.slots), sum(len(s) for s in truth.slots.values()))
    _REPORT.program = (
        f"Lua 5.4 from {SDIST} ({compiler}, {' '.join(CFLAGS)}, PIE, stripped): {truth.functions} "
        f"functions, {len(truth.slots)} address-taken through {_REPORT.total[1]} relocated slots"
    )
    return stripped, truth


def _measure(registry: Registry, annotations: Path, provider_id: str, path: Path, truth: Truth) -> Score:
    sessions = rs.Sessions(registry, annotations)
    began = time.monotonic()
    try:
        session: Session = sessions.get(provider_id, path)
        found = slots = reported = 0
        missed = []
        for function, expected in sorted(truth.slots.items()):
            refs = result_of(session, "xrefs", {"address": hex(function)})["references"]
            data = {int(r["from"], 16) for r in refs if r["kind"] == "data"}
            reported += len(data)
            slots += len(data & expected)
            if data & expected:
                found += 1
            else:
                missed.append(hex(function))
    finally:
        sessions.close()
    return Score(provider_id, found, slots, reported, time.monotonic() - began, missed)


LUA_CASES = [
    pytest.param(
        pid,
        id=pid,
        marks=[pytest.mark.xfail(strict=True, reason=rs.NATIVE_PENDING)] if rs.LUA in rs.EXPECTED[pid].pending else [],
    )
    for pid in sorted(rs.EXPECTED)
]


@pytest.mark.parametrize("provider_id", LUA_CASES)
def test_address_taken_functions_have_data_references(
    provider_id: str, rea_registry: Registry, tmp_path: Path, lua: tuple[Path, Truth]
) -> None:
    path, truth = lua
    score = _measure(rea_registry, tmp_path / "annotations", provider_id, path, truth)
    _REPORT.scores[provider_id] = score
    total = len(truth.slots)
    recall = score.functions / total
    precision = score.slots / score.reported if score.reported else 0.0
    expected = rs.EXPECTED[provider_id].lua_recall
    assert recall >= expected, (
        f"{provider_id}: xrefs reports the data reference from a pointer slot for "
        f"{score.functions} of {total} address-taken functions ({recall:.3f} < {expected}); "
        f"missed {score.missed[:20]}"
    )
    assert precision >= 0.9, f"{provider_id}: only {precision:.3f} of the data references reported are relocated slots"


def test_truth_is_read_from_relocations_only(lua: tuple[Path, Truth]) -> None:
    """Every slot of the truth lies in a writable data section of the build (not code, not metadata)."""
    path, truth = lua
    binary = lief.ELF.parse(str(path))
    assert binary is not None
    sections = [
        (int(s.virtual_address), int(s.virtual_address + s.size), s.name)
        for s in binary.sections
        if s.has(lief.ELF.Section.FLAGS.WRITE)
    ]
    for slots in truth.slots.values():
        for slot in slots:
            assert any(lo <= slot < hi for lo, hi, _ in sections), hex(slot)
