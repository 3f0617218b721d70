"""Shared fixtures for the Evidence tests: a gcc-built target and records describing its functions."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import lief

from rea import evidence as ev_mod
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.target import identify
from tests import toolchains

# The C source is the oracle: these are the functions the fixture defines.
C_SOURCE = r"""
#include <stdio.h>
#include <string.h>
int parse_header(const char *s) { return (int)strlen(s) * 3; }
int checksum(const unsigned char *p, int n) { int c = 0; for (int i = 0; i < n; i++) c += p[i]; return c; }
static int helper_unused(int x) { return x * 7; }
int main(int argc, char **argv) {
    printf("rea fixture %d\n", parse_header(argc > 1 ? argv[1] : "abc") + helper_unused(argc));
    return checksum((const unsigned char *)"xyz", 3);
}
"""
SOURCE_FUNCTIONS = ("parse_header", "checksum", "helper_unused", "main")

PROVIDER = ProviderIdentity(id="fixture-static", name="Fixture static reader", version="1.0.0")
OTHER_PROVIDER = ProviderIdentity(id="fixture-other", name="Other reader", version="2.1.0")


def compile_fixture(tmp: Path, name: str = "prog", extra: str = "") -> Path:
    """Compile the fixture C source with gcc (skips when gcc is missing)."""
    gcc = toolchains.require("gcc")
    src = tmp / f"{name}.c"
    src.write_text(C_SOURCE + extra)
    out = tmp / name
    subprocess.run([gcc, "-O0", "-g0", "-fno-inline", "-o", str(out), str(src)], check=True, capture_output=True)
    return out


def subject_of(path: Path) -> Subject:
    t = identify(str(path))
    return Subject(
        name=t.name,
        local_path=t.resolved_path,
        digest=ev_mod.Digest(sha256=t.sha256),
        size=t.size,
        format=t.format,
        architecture=t.architecture,
    )


def functions_of(path: Path) -> dict[str, dict[str, Any]]:
    """Defined functions of a binary as procedure_info-like rows (LIEF reads the symbol table)."""
    binary = lief.parse(str(path))
    assert binary is not None
    out: dict[str, dict[str, Any]] = {}
    for sym in binary.symbols:
        if sym.type == lief.ELF.Symbol.TYPE.FUNC and sym.value and sym.name in SOURCE_FUNCTIONS:
            out[sym.name] = {
                "address": hex(sym.value),
                "name": sym.name,
                "size": sym.size,
                "end": hex(sym.value + sym.size),
                "kind": "local",
                "section": ".text",
            }
    return out


def procedure_records(path: Path, provider: ProviderIdentity = PROVIDER) -> list[Evidence]:
    """One procedure_info record per source function, plus a layout record and a list record."""
    subject = subject_of(path)
    profile = ev_mod.make_profile(provider, {"loader": "auto", "fixture": True})
    funcs = functions_of(path)
    records = [
        ev_mod.build(
            operation="procedure_info",
            provider=provider,
            subject=subject,
            analysis_profile=profile,
            parameters={"procedure": name},
            normalized_result=row,
            locations=[{"kind": "address", "address": row["address"]}],
        )
        for name, row in sorted(funcs.items())
    ]
    records.append(
        ev_mod.build(
            operation="list_procedures",
            provider=provider,
            subject=subject,
            analysis_profile=profile,
            parameters={"offset": 0, "limit": 100},
            normalized_result={
                "procedures": sorted(funcs.values(), key=lambda r: r["address"]),
                "offset": 0,
                "limit": 100,
                "total": len(funcs),
                "next_offset": None,
            },
        )
    )
    return records


def simple_record(n: int, payload: Any = None, provider: ProviderIdentity = PROVIDER) -> Evidence:
    """A small subject-less record; ``n`` makes it distinct."""
    return ev_mod.build(
        operation="fixture_note",
        provider=provider,
        subject=None,
        analysis_profile=None,
        parameters={"n": n},
        normalized_result={"n": n, "payload": payload},
    )
