"""radare2 on real code: cmark-gfm for arm64, whose jump tables radare2 once split into functions of their own.

Truth is the unstripped build's symbol table (nm): every function start and size, and no start inside another.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.engine_lifecycle import op
from tests.fixtures.native.native_fixtures import FixtureSet
from tests.radare2.r2_support import open_r2
from tests.realcode import builds


@pytest.fixture(scope="module")
def cmark(rea_registry: Registry) -> Iterator[tuple[builds.Build, Session]]:
    build = builds.cmark_gfm("arm64-elf")
    session = Session(rea_registry)
    open_r2(session, str(build.binary))
    try:
        yield build, session
    finally:
        session.close()


def test_jump_table_targets_are_blocks_and_sizes_are_the_functions(cmark: tuple[builds.Build, Session]) -> None:
    build, session = cmark
    truth = build.symbols()
    ranges = sorted((a, a + size) for a, size in truth.values() if size)
    procs = []
    offset: int | None = 0
    while offset is not None:
        page = op(session, "list_procedures", offset=offset, limit=1000)
        procs += page["procedures"]
        offset = page["next_offset"]
    local = {int(p["address"], 16): p for p in procs if p["kind"] == "local"}
    inside = [hex(a) for a in local if any(lo < a < hi for lo, hi in ranges)]
    assert inside == [], f"starts inside real functions: {inside[:10]}"
    start, size = truth["cmark_utf8proc_case_fold"]
    assert local[start]["size"] == size
    # The first of the file's four static S_render_node, with its jump tables: one procedure, nm's size.
    render, render_size = truth["S_render_node"]
    assert local[render]["size"] == render_size
    sized = [a for a in local if a in {s for s, _ in ranges}]
    agree = sum(local[a]["size"] == dict(ranges)[a] - a for a in sized)
    assert agree / len(sized) >= 0.99, (agree, len(sized))


def test_pe_imports_name_their_dll_as_the_file_spells_it(rea_registry: Registry) -> None:
    build = builds.cmark_gfm("x86_64-pe")
    truth = build.pe_imports()
    assert set(truth) == {"KERNEL32.dll", "msvcrt.dll"}
    session = Session(rea_registry)
    open_r2(session, str(build.binary))
    try:
        layout = op(session, "binary_layout")
        assert layout["linkage"]["needed"] == ["KERNEL32.dll", "msvcrt.dll"]
        listed: dict[str, set[str]] = {}
        for item in layout["imports"]:
            listed.setdefault(item["library"], set()).add(item["name"])
        assert listed == truth
    finally:
        session.close()


@pytest.mark.parametrize("fixture_id", ["macho-arm64", "macho-x64"])
def test_macho_imports_are_named_as_the_file_names_them(rea_registry: Registry, fixture_id: str) -> None:
    path = FixtureSet().get(fixture_id).path  # program.c, linked with ld64.lld against libSystem
    layouts = {}
    for provider in ("radare2", "native"):
        session = Session(rea_registry)
        try:
            if provider == "radare2":
                open_r2(session, path)
            else:
                result_of(session, "open_binary", {"path": path, "provider_id": "native"})
            layouts[provider] = op(session, "binary_layout")
        finally:
            session.close()
    radare2 = {i["name"]: i for i in layouts["radare2"]["imports"] if i["name"] != "dyld_stub_binder"}
    native = {i["name"]: i for i in layouts["native"]["imports"]}
    assert {"_printf", "_puts", "_strlen"} <= set(radare2)
    assert {n: (i["library"], i["slot"]) for n, i in radare2.items()} == {
        n: (i["library"], i["slot"]) for n, i in native.items() if n in radare2
    }
