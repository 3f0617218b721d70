"""A C program built static with glibc (gcc -static) and as a MinGW-w64 PE, each also stripped (-s), and how
many of the runtime's functions the native provider names in the stripped build, measured against the
unstripped build's symbols (tests/native/test_libsigs.py and benchmarks/flirt.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int checksum(const char *s) {
    int h = 0;
    while (*s) h = h * 31 + *s++;
    return h;
}

int main(int argc, char **argv) {
    int v[16];
    char buf[128];
    for (int i = 0; i < 16; i++) v[i] = rand() % 100;
    qsort(v, 16, sizeof v[0], cmp);
    snprintf(buf, sizeof buf, "%s:%d:%f", argc > 1 ? argv[1] : "none", v[0], sqrt((double)v[15]));
    char *copy = strdup(buf);
    printf("%s %d %zu\n", copy, checksum(copy), strlen(copy));
    free(copy);
    FILE *f = fopen("/nonexistent", "r");
    if (f) fclose(f);
    return 0;
}
"""


@dataclass
class Built:
    """One build: the unstripped program, its stripped twin and the program's own object (its own functions)."""

    full: Path
    stripped: Path
    own: Path


def build(compiler: str, out: Path, name: str, static: bool) -> Built:
    """The fixture built with ``compiler`` into ``out``: ``name``, ``name``-stripped (-s) and ``name``.o."""
    src = out / f"{name}.c"
    src.write_text(SOURCE)
    suffix = ".exe" if not static else ""
    flags = ["-O2", *(["-static"] if static else [])]
    full, stripped, own = out / f"{name}{suffix}", out / f"{name}-stripped{suffix}", out / f"{name}.o"
    for args in (
        [compiler, *flags, "-o", str(full), str(src), "-lm"],
        [compiler, *flags, "-s", "-o", str(stripped), str(src), "-lm"],
        [compiler, "-O2", "-c", "-o", str(own), str(src)],
    ):
        subprocess.run(args, check=True, capture_output=True, timeout=300)
    return Built(full, stripped, own)


def function_symbols(path: Path) -> dict[int, set[str]]:
    """Address -> names of the defined functions in an unstripped ELF or PE (COFF symbol table), or an object's
    (address 0 for each: only the names matter there)."""
    import lief

    lief.logging.disable()
    b: Any = lief.parse(str(path))
    kind = "elf" if isinstance(b, lief.ELF.Binary) else "pe" if isinstance(b, lief.PE.Binary) else "coff"
    symbols: list[Any] = list(b.symbols)  # ELF, PE or COFF symbols, each read through its own attributes
    out: dict[int, set[str]] = {}
    if kind == "elf":
        rel = b.header.file_type.name == "REL"
        for s in symbols:
            if s.type == lief.ELF.Symbol.TYPE.FUNC and s.shndx != 0 and (s.value or rel):
                out.setdefault(int(s.value), set()).add(str(s.name))
    elif kind == "pe":
        base = b.optional_header.imagebase
        sections = list(b.sections)
        for s in symbols:
            if s.complex_type == lief.COFF.Symbol.COMPLEX_TYPE.FUNCTION and 0 < s.section_idx <= len(sections):
                va = base + sections[s.section_idx - 1].virtual_address + s.value
                out.setdefault(va, set()).add(str(s.name))
    else:
        for s in symbols:
            if s.is_function and s.section_idx > 0:
                out.setdefault(0, set()).add(str(s.name))
    return out


@dataclass
class Measure:
    """The runtime's functions (not the program's own) and how the stripped build's procedures name them."""

    runtime: int = 0
    named: int = 0  # runtime functions named right, by any source (signature, import, heuristic)
    by_signature: int = 0  # procedures named by a signature
    right: int = 0  # of those, named as the unstripped build names that address
    wrong: list[tuple[str, str, str]] = field(default_factory=list)  # (address, given, truth)
    confidence: dict[str, int] = field(default_factory=dict)
    right_by_confidence: dict[str, int] = field(default_factory=dict)

    @property
    def recall(self) -> float:
        return self.named / self.runtime if self.runtime else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.by_signature if self.by_signature else 0.0


def _same(given: str, truth: set[str]) -> bool:
    """A name matches the truth at its address, a split-off part (``foo.cold``) included."""
    return given in truth


def measure(procedures: list[Any], library: dict[int, Any], built: Built) -> Measure:
    """Compare ``procedures`` (the stripped build's, as native lists them) with the unstripped build's symbols."""
    truth = function_symbols(built.full)
    own = set().union(*function_symbols(built.own).values())
    m = Measure()
    runtime = {a: names for a, names in truth.items() if not names & own}
    by_addr = {p.address: p for p in procedures}
    m.runtime = len(runtime)
    m.named = sum(1 for a, names in runtime.items() if a in by_addr and _same(by_addr[a].name, names))
    for p in procedures:
        if p.name_source != "signature":
            continue
        m.by_signature += 1
        confidence = library[p.address].confidence
        m.confidence[confidence] = m.confidence.get(confidence, 0) + 1
        if _same(p.name, truth.get(p.address, set())):
            m.right += 1
            m.right_by_confidence[confidence] = m.right_by_confidence.get(confidence, 0) + 1
        else:
            m.wrong.append((hex(p.address), p.name, ",".join(sorted(truth.get(p.address, {"-"})))))
    return m


def analyse(path: Path, ctx: Any = None) -> tuple[list[Any], dict[int, Any], Any]:
    """The native Program's procedures of ``path`` and its library matches (the program, to close)."""
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest
    from rea_plugins.native.program import Limits
    from rea_plugins.native.program import Program

    program = Program(extract(WorkerRequest(path=str(path))), str(path), Limits())
    procs = program.procedures(ctx)
    return procs, program.library or {}, program
