"""Issue 42 item 7: the type library survives hostile declarations.

A huge or deeply chained typedef used to break the library for good (a recursion error on every later parse, the
wrong error class) and a bit-field of width -1 was an internal error. Each hostile declaration here is refused with
``invalid_request`` and a remediation, in the kernel and through ``declare_c_types``; after each one the library is
exactly what it was and a valid declaration still works.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rea import typelib
from rea.annotations import AnnotationStore
from rea.annotations import TypeEntry
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.typelib.conftest import OPTS_DECL

LP64 = typelib.ABIS["lp64"]
# Words of Python exceptions' messages, which a caller must never read.
PYTHON_WORDS = re.compile(r"Error\b|Traceback|recursion depth|object|NoneType|maximum|negative shift")


def _chain(start: int, stop: int) -> str:
    """Typedefs z<start+1> .. z<stop>, each an array of the one before: a chain of nested named types."""
    return "".join(f"typedef z{i} z{i + 1}[2];\n" for i in range(start, stop))


HOSTILE: dict[str, str] = {
    "a 1 MB typedef": "typedef struct { " + "int m; " * 150_000 + "} huge_t;",
    "more bytes than allowed in fewer characters": "/* " + "é" * 40_000 + " */ typedef int wide_t;",
    "10,000 array derivations": "typedef int deep_t" + "[2]" * 10_000 + ";",
    "10,000 pointer derivations": "typedef int " + "*" * 10_000 + "ptr_t;",
    "bit-field width -1": "struct neg { int x : -1; };",
    "bit-field wider than int": "struct wide { int x : 33; };",
    "bit-field wider than char": "struct narrow { char c : 9; };",
    "bit-field wider than _Bool": "struct flag { _Bool b : 2; };",
    "bit-field wider than long": "struct big { long l : 65; };",
    "named bit-field of width 0": "struct zero { int z : 0; };",
    "bit-field of a floating type": "struct fl { float f : 3; };",
    "brackets 100 deep": "struct s0 { " + "struct { " * 100 + "int x; " + "} a; " * 100 + "};",
    "structs by value 200 deep": "struct r0 { int a; };"
    + "".join(f"struct r{i + 1} {{ struct r{i} a; }};" for i in range(200)),
    "a struct of 2,049 members": "struct many { " + " ".join(f"int m{i};" for i in range(2049)) + " };",
    "an enum of 4,097 enumerators": "enum lots { " + ", ".join(f"E{i}" for i in range(4097)) + " };",
}
VALID = "struct fine { int a : 3; int : 0; unsigned b : 32; _Bool c : 1; long d : 64; char e; };"


def _refused(err: ReaError) -> None:
    assert err.code == "invalid_request", (err.code, err.message)
    assert err.remediation and not PYTHON_WORDS.search(err.message), err.message
    assert len(err.message) < 400, len(err.message)


def _declare(source: str, types: dict[str, TypeEntry]) -> dict[str, TypeEntry]:
    found = typelib.declare(source, types)
    typelib.Layout({**types, **found}, LP64)  # the whole library still parses
    return found


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_declaration_is_refused_and_changes_nothing(case: str) -> None:
    types = typelib.declare(OPTS_DECL, {})
    before = dict(types)
    with pytest.raises(ReaError) as info:
        _declare(HOSTILE[case], types)
    _refused(info.value)
    assert types == before
    found = _declare(VALID, types)
    fields = typelib.Layout({**types, **found}, LP64).of_name("struct fine").fields
    assert [(f.name, f.bit_size) for f in fields] == [("a", 3), ("b", 32), ("c", 1), ("d", 64), ("e", None)]


def test_a_chain_of_10000_nested_typedefs_is_refused_where_it_gets_too_deep() -> None:
    types = typelib.declare("typedef int z0;", {})
    refused: ReaError | None = None
    for start in range(0, 10_000, 2_000):  # in pieces: one call takes at most 64 KB
        try:
            types.update(_declare(_chain(start, start + 2_000), types))
        except ReaError as err:
            refused = err
            break
    assert refused is not None
    _refused(refused)
    assert "nest more than" in refused.message
    # The library kept what came before and still parses, lays out and takes new declarations.
    assert len(types) == 1
    types.update(_declare(_chain(0, typelib.MAX_TYPE_DEPTH - 1), types))
    layout = typelib.Layout(types, LP64)
    assert layout.of_name(f"z{typelib.MAX_TYPE_DEPTH - 1}").size == 4 << (typelib.MAX_TYPE_DEPTH - 1)
    with pytest.raises(ReaError) as info:
        _declare(_chain(typelib.MAX_TYPE_DEPTH - 1, typelib.MAX_TYPE_DEPTH + 1), types)
    _refused(info.value)
    _declare(VALID, types)


def test_a_library_stored_before_the_bounds_still_works() -> None:
    # A chain longer than any recursion limit, as a store written before the bounds may hold it.
    types = {"z0": TypeEntry(kind="typedef", c="typedef int z0;")}
    types.update({f"z{i + 1}": TypeEntry(kind="typedef", c=f"typedef z{i} z{i + 1}[2];") for i in range(10_000)})
    assert typelib.ordered(types)[:3] == ["z0", "z1", "z2"]
    found = _declare(VALID, types)
    layout = typelib.Layout({**types, **found}, LP64)
    assert layout.of_name("z3").size == 32
    with pytest.raises(ReaError) as info:
        layout.of_name("z10000")
    _refused(info.value)


def test_layout_is_linear_in_the_names_it_reaches() -> None:
    # Each type holds two of the one before: laid out naively that is 2**60 visits.
    source = "typedef struct { int a; int b; } q0;" + "".join(
        f"typedef struct {{ q{i} a; q{i} b; }} q{i + 1};" for i in range(60)
    )
    types = _declare(source, {})
    assert typelib.Layout(types, LP64).of_name("q60").size == 8 << 60


def _tool_error(session: Session, declarations: str) -> ReaError:
    with pytest.raises(ReaError) as info:
        call_tool(session, "declare_c_types", {"declarations": declarations})
    return info.value


def _library(session: Session) -> tuple[Any, Any]:
    listed = result_of(session, "list_types", {})
    return listed, session.annotations.load(session.require_target().sha256).revision


def test_declare_c_types_refuses_each_hostile_declaration_atomically(
    rea_registry: Registry, opts_program: str, tmp_path: Path
) -> None:
    session = Session(rea_registry, annotations=AnnotationStore(str(tmp_path / "annotations")))
    try:
        result_of(session, "open_binary", {"path": opts_program, "provider_id": "native"})
        result_of(session, "declare_c_types", {"declarations": OPTS_DECL})
        before = _library(session)
        for case, source in sorted(HOSTILE.items()):
            _refused(_tool_error(session, source))
            assert _library(session) == before, case
        declared = result_of(session, "declare_c_types", {"declarations": VALID})
        assert [d["name"] for d in declared["declared"]] == ["struct fine"]
        shown = result_of(session, "inspect_type", {"name": "struct fine"})
        assert [f.get("bit_size") for f in shown["fields"]] == [3, 32, 1, 64, None]
    finally:
        session.close()
