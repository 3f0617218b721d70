"""Cross-engine conformance on real code: every native-analysis provider against the symbolized build.

The programs are real code bases nobody here wrote, built in the session from pinned PyPI sdists with gcc -O2
(PIE) and stripped: brotli's command-line tool (about 240 functions, 375 direct call edges), zstd 1.5.7 behind
``zstdmini`` (``.cold`` parts, jump tables, tail calls) and cmark-gfm for arm64 (jump tables between blocks).
Ground truth comes from the symbolized build only: function starts and sizes from its symbol table, direct call
edges from its ``call rel32`` / ``bl`` instructions, read with LIEF and capstone, never from a provider under
test. Each provider reads the stripped build and must reach its row of ``THRESHOLDS``; a provider that is not
registered or not installed is skipped with the reason, one below its threshold fails. The figures are printed
as one table at the end of the run (docs/conformance.md keeps the latest).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from typing import NamedTuple

import capstone
import lief
import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.conformance.references_support import first_line
from tests.conformance.references_support import publish
from tests.conformance.references_support import require_pip_sdist
from tests.realcode import builds

REQUIREMENT = "brotli==1.1.0"
SDIST = "Brotli-1.1.0.tar.gz"
SDIST_SHA256 = "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724"
SOURCES = ("c/common/*.c", "c/dec/*.c", "c/enc/*.c", "c/tools/brotli.c")
CFLAGS = ("-O2",)
CACHE = Path(__file__).resolve().parents[1] / ".fixtures" / "cross-engine"


class Threshold(NamedTuple):
    f1: float  # function-start F1 against the symbol table
    recall: float  # direct call-edge recall, through procedure_callees and through procedure_callers
    sizes: float = 0.0  # share of the functions found whose size is the symbol's


# One row per program and provider id; a provider added later needs only its rows here.
THRESHOLDS: dict[str, dict[str, Threshold]] = {
    "brotli": {"native": Threshold(0.98, 0.98), "radare2": Threshold(0.98, 0.98), "angr": Threshold(0.95, 0.95)},
    "zstd": {
        "native": Threshold(0.98, 0.98, 0.99),
        "radare2": Threshold(0.98, 0.98, 0.99),
        "angr": Threshold(0.98, 0.98, 0.99),
    },
    "cmark-gfm-arm64": {
        "native": Threshold(0.98, 0.98, 0.99),
        "radare2": Threshold(0.98, 0.98, 0.99),
        "angr": Threshold(0.98, 0.98, 0.99),
    },
}
# gcc's split-off parts of a function (``f.cold``): an engine may list them as procedures of their own or
# fold them into their parent, and both are right, so they count neither for nor against a provider.
_PART = re.compile(r"\.cold(\.[0-9]+)?$")
_STARTS = ("local", "thunk")


class Build(NamedTuple):
    symbolized: Path
    stripped: Path
    compiler: str
    title: str


class Truth(NamedTuple):
    functions: dict[int, str]  # start -> symbol name, parts excluded
    parts: frozenset[int]
    edges: frozenset[tuple[int, int]]  # (caller start, callee start) of every direct call
    pie: bool
    sizes: dict[int, int]  # start -> symbol size, parts excluded


class Score(NamedTuple):
    provider: str
    reported: int
    precision: float
    recall: float
    f1: float
    callee_edges: int
    caller_edges: int
    seconds: float
    sizes_exact: float
    missed: list[str]
    extra: list[str]
    missed_by_callees: list[str]
    missed_by_callers: list[str]


def _sdist() -> Path:
    """The pinned brotli sdist, from the cache or PyPI (through pip), checked against its SHA-256."""
    return require_pip_sdist(REQUIREMENT, SDIST, SDIST_SHA256, cache=CACHE, needed="the cross-engine program")


def _brotli() -> Build:
    """gcc -O2 build of the brotli tool and its stripped copy, cached under a key of everything that shapes them."""
    gcc, strip = toolchains.require("gcc"), toolchains.require("strip")
    compiler = first_line([gcc, "--version"])
    recipe = repr((SDIST_SHA256, SOURCES, CFLAGS, compiler, first_line([strip, "--version"])))
    out = CACHE / f"brotli-{hashlib.sha256(recipe.encode()).hexdigest()[:20]}"
    build = Build(out / "brotli", out / "brotli.stripped", compiler, f"brotli 1.1.0 tool ({compiler}, -O2")
    if build.symbolized.exists() and build.stripped.exists():
        return build
    sdist = _sdist()
    staged = CACHE / f"{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="rea-cross-engine-src-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        root = Path(tmp) / SDIST.removesuffix(".tar.gz")
        files = sorted(str(p) for pattern in SOURCES for p in root.glob(pattern))
        for cmd in (
            [gcc, *CFLAGS, "-I", str(root / "c" / "include"), "-o", str(staged / "brotli"), *files, "-lm"],
            [strip, "-o", str(staged / "brotli.stripped"), str(staged / "brotli")],
        ):
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"building the brotli tool failed: {cmd[0]}\n{proc.stderr[-2000:]}"
    publish(staged, out)
    return build


def _realcode(build: builds.Build, title: str) -> Build:
    return Build(build.unstripped, build.binary, "gcc -O2", title)


PROGRAMS: dict[str, Callable[[], Build]] = {
    "brotli": _brotli,
    "zstd": lambda: _realcode(builds.zstd(), "zstd 1.5.7 behind zstdmini (x86-64, gcc -O2"),
    "cmark-gfm-arm64": lambda: _realcode(builds.cmark_gfm("arm64-elf"), "cmark-gfm 0.29.0.gfm.13 (arm64, gcc -O2"),
}


def _direct_call(binary: lief.ELF.Binary) -> tuple[capstone.Cs, Any]:
    """A decoder for the build's architecture and a reader of a direct call's target (None for other insns)."""
    if binary.header.machine_type == lief.ELF.ARCH.AARCH64:
        cs = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)

        def arm64(insn: Any) -> int | None:
            return int(insn.op_str.lstrip("#"), 16) if insn.mnemonic == "bl" else None

        return cs, arm64
    if binary.header.machine_type != lief.ELF.ARCH.X86_64:
        pytest.skip(f"the call-edge reader decodes x86-64 and arm64, not {binary.header.machine_type}")
    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)

    def x86(insn: Any) -> int | None:
        if insn.mnemonic == "call" and insn.bytes[0] == 0xE8:
            return int(insn.address + insn.size + int.from_bytes(insn.bytes[1:5], "little", signed=True))
        return None

    return cs, x86


def _truth(path: Path) -> Truth:
    """Function starts and direct call edges of the symbolized build (LIEF for symbols, capstone for calls)."""
    binary = lief.ELF.parse(str(path))
    assert binary is not None, f"LIEF could not read {path}"
    cs, call_target = _direct_call(binary)
    code = [
        (s.virtual_address, s.virtual_address + s.size)
        for s in binary.sections
        if s.has(lief.ELF.Section.FLAGS.EXECINSTR)
    ]
    named: dict[int, tuple[str, int]] = {}
    for sym in binary.symtab_symbols:
        if sym.type == lief.ELF.Symbol.TYPE.FUNC and sym.value and any(a <= sym.value < b for a, b in code):
            named.setdefault(sym.value, (str(sym.name), sym.size))
    parts = frozenset(a for a, (name, _) in named.items() if _PART.search(name))
    functions = {a: name for a, (name, _) in named.items() if a not in parts}
    edges = set()
    for start, (_, size) in named.items():
        if start in parts or not size:
            continue
        for insn in cs.disasm(bytes(binary.get_content_from_virtual_address(start, size)), start):
            target = call_target(insn)
            if target in functions:
                edges.add((start, target))
    sizes = {a: size for a, (_, size) in named.items() if a not in parts}
    return Truth(functions, parts, frozenset(edges), bool(binary.is_pie), sizes)


class _Report:
    """Collects each program's and provider's numbers and prints them as one table at the end of the run."""

    def __init__(self) -> None:
        self.programs: dict[str, str] = {}
        self.edges: dict[str, int] = {}
        self.scores: dict[tuple[str, str], Score] = {}

    def lines(self) -> list[str]:
        head = (
            f"{'program':<16} {'provider':<9} {'reported':>8} {'P':>6} {'R':>6} {'F1':>6} {'sizes':>6} "
            f"{'callees':>8} {'callers':>8} {'time':>7}"
        )
        rows = [
            f"{program:<16} {s.provider:<9} {s.reported:>8} {s.precision:>6.3f} {s.recall:>6.3f} {s.f1:>6.3f} "
            f"{s.sizes_exact:>6.3f} {s.callee_edges / self.edges[program]:>8.3f} "
            f"{s.caller_edges / self.edges[program]:>8.3f} {s.seconds:>6.1f}s"
            for (program, _), s in sorted(self.scores.items())
        ]
        return [*self.programs.values(), head, *rows]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.scores:
            terminalreporter.write_sep("-", "cross-engine conformance (function starts, sizes, direct call edges)")
            for line in self.lines():
                terminalreporter.write_line(line)


_REPORT = _Report()


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def program(request: pytest.FixtureRequest) -> tuple[str, Build, Truth]:
    """A built program and its ground truth; registers the summary table."""
    if not request.config.pluginmanager.is_registered(_REPORT):
        request.config.pluginmanager.register(_REPORT, "rea-cross-engine-report")
    name: str = request.param
    build = PROGRAMS[name]()
    truth = _truth(build.symbolized)
    # A truth this small would mean the build or the reader broke, not that providers are good.
    assert len(truth.functions) >= 200 and len(truth.edges) >= 300, (len(truth.functions), len(truth.edges))
    _REPORT.edges[name] = len(truth.edges)
    _REPORT.programs[name] = (
        f"{name}: {build.title}, {'PIE' if truth.pie else 'not PIE'}, stripped): "
        f"{len(truth.functions)} functions, {len(truth.edges)} direct call edges"
    )
    return name, build, truth


def _where(truth: Truth, addr: int) -> str:
    below = [a for a in truth.functions if a <= addr]
    if not below:
        return hex(addr)
    start = max(below)
    return f"{hex(addr)} ({truth.functions[start]}+{addr - start:#x})"


def _measure(registry: Registry, provider_id: str, build: Build, truth: Truth) -> Score:
    session = Session(registry)
    began = time.monotonic()
    try:
        result_of(session, "open_binary", {"path": str(build.stripped), "provider_id": provider_id})
        procedures: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
            procedures += page["procedures"]
            offset = page["next_offset"]
        starts = {int(p["address"], 16) for p in procedures if p["kind"] in _STARTS} - truth.parts
        by_callees: set[tuple[int, int]] = set()
        for caller in sorted({c for c, _ in truth.edges} & starts):
            callees = result_of(session, "procedure_callees", {"procedure": hex(caller)})["callees"]
            by_callees |= {(caller, int(c["address"], 16)) for c in callees if c["address"] is not None}
        by_callers: set[tuple[int, int]] = set()
        for callee in sorted({d for _, d in truth.edges} & starts):
            callers = result_of(session, "procedure_callers", {"procedure": hex(callee)})["callers"]
            by_callers |= {(int(c["address"], 16), callee) for c in callers}
    finally:
        session.close()
    seconds = time.monotonic() - began
    truth_starts = set(truth.functions)
    hits = len(starts & truth_starts)
    reported_sizes = {int(p["address"], 16): p.get("size") for p in procedures}
    sized = [a for a in starts & truth_starts if truth.sizes.get(a)]
    sizes_exact = sum(reported_sizes.get(a) == truth.sizes[a] for a in sized) / len(sized) if sized else 0.0
    precision = hits / len(starts) if starts else 0.0
    recall = hits / len(truth_starts)
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0

    def named(edges: set[tuple[int, int]] | frozenset[tuple[int, int]]) -> list[str]:
        return [f"{truth.functions[c]} -> {truth.functions[d]}" for c, d in sorted(edges)]

    return Score(
        provider=provider_id,
        reported=len(starts),
        precision=precision,
        recall=recall,
        f1=f1,
        callee_edges=len(truth.edges & by_callees),
        caller_edges=len(truth.edges & by_callers),
        seconds=seconds,
        sizes_exact=sizes_exact,
        missed=sorted(truth.functions[a] for a in truth_starts - starts),
        extra=[_where(truth, a) for a in sorted(starts - truth_starts)],
        missed_by_callees=named(truth.edges - by_callees),
        missed_by_callers=named(truth.edges - by_callers),
    )


@pytest.fixture(scope="module", params=["native", "radare2", "angr"])
def score(
    request: pytest.FixtureRequest, rea_registry: Registry, program: tuple[str, Build, Truth]
) -> Iterator[tuple[Score, Threshold]]:
    provider_id: str = request.param
    name, build, truth = program
    limit = THRESHOLDS[name].get(provider_id)
    if limit is None:
        pytest.skip(f"{provider_id} is not measured on {name} (no threshold row)")
    provider = rea_registry.providers.get(provider_id)
    if provider is None:
        pytest.skip(f"provider {provider_id} is not registered (its plugin is not installed)")
    availability = provider.availability()
    if availability.status != "available":
        pytest.skip(f"provider {provider_id} is not installed: {availability.reason}")
    folder = Path(build.stripped).parent
    before = sorted(p.name for p in folder.iterdir())
    measured = _measure(rea_registry, provider_id, build, truth)
    # Analysis never writes beside its target (angr's runtime database once did, on exactly this build).
    assert sorted(p.name for p in folder.iterdir()) == before, f"{provider_id} wrote beside its target"
    _REPORT.scores[(name, provider_id)] = measured
    print("\n" + "\n".join(_REPORT.lines()))
    yield measured, limit


def test_function_starts(score: tuple[Score, Threshold]) -> None:
    s, limit = score
    assert s.f1 >= limit.f1, (
        f"{s.provider}: function-start F1 {s.f1:.3f} (P {s.precision:.3f}, R {s.recall:.3f}) is below "
        f"{limit.f1}; missed {s.missed[:20]}; not functions {s.extra[:20]}"
    )


def test_function_sizes(score: tuple[Score, Threshold]) -> None:
    s, limit = score
    assert s.sizes_exact >= limit.sizes, (
        f"{s.provider}: {s.sizes_exact:.3f} of the functions found have the symbol's size, below {limit.sizes}"
    )


def test_direct_call_edges_through_callees(score: tuple[Score, Threshold], program: tuple[str, Build, Truth]) -> None:
    s, limit = score
    total = len(program[2].edges)
    assert s.callee_edges / total >= limit.recall, (
        f"{s.provider}: procedure_callees finds {s.callee_edges} of {total} direct call edges, below "
        f"{limit.recall}; missed {s.missed_by_callees[:20]}"
    )


def test_direct_call_edges_through_callers(score: tuple[Score, Threshold], program: tuple[str, Build, Truth]) -> None:
    s, limit = score
    total = len(program[2].edges)
    assert s.caller_edges / total >= limit.recall, (
        f"{s.provider}: procedure_callers finds {s.caller_edges} of {total} direct call edges, below "
        f"{limit.recall}; missed {s.missed_by_callers[:20]}"
    )
