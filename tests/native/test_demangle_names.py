"""Demangled names (issue 48 item 8): C++ and Rust symbols are shown demangled in every named result, the symbol
kept as ``mangled_name``; a demangled name selects its procedure as the symbol does."""

from __future__ import annotations

from pathlib import Path

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.binary.core.demangle import demangle
from tests.fixtures.native import issue48_fixtures as fx


def test_the_demangler_reads_itanium_msvc_and_rust() -> None:
    assert demangle("_ZN9rea_names7Counter3addEi") == "rea_names::Counter::add(int)"
    assert demangle("__ZN9rea_names7Counter3addEi") == "rea_names::Counter::add(int)"  # Mach-O's extra underscore
    assert demangle("?foo@@YAXXZ") == "void __cdecl foo(void)"
    assert demangle("_ZN4core3fmt5write17h0123456789abcdefE") == "core::fmt::write::h0123456789abcdef"
    assert demangle("_RNvCs1234_7mycrate3foo") == "mycrate::foo"
    assert demangle("_ZN9rea_names7Counter3addEi@plt") == "rea_names::Counter::add(int)@plt"
    for plain in ("printf", "main", "sub_1040", "_start", "?", "_Zjunk"):
        assert demangle(plain) is None, plain


def _providers() -> list[str]:
    from rea_plugins.radare2.options import library_dir

    return ["native", *(["radare2"] if library_dir() is not None else [])]


@pytest.fixture(params=_providers())
def names(request: pytest.FixtureRequest, rea_registry: Registry) -> Session:
    session = Session(rea_registry)
    result_of(session, "open_binary", {"path": fx.build("names-clang"), "provider_id": request.param})
    request.addfinalizer(session.close)
    return session


def test_procedures_are_listed_demangled_with_their_symbol(names: Session) -> None:
    procs = result_of(names, "list_procedures", {"limit": 1000})["procedures"]
    shown = {p["mangled_name"]: p["name"] for p in procs if p.get("mangled_name")}
    assert shown == fx.CXX_NAMES
    plain = next(p for p in procs if p["name"] == "main")
    assert "mangled_name" not in plain


def test_a_demangled_name_or_the_symbol_selects_the_procedure(names: Session) -> None:
    for mangled, demangled in fx.CXX_NAMES.items():
        by_symbol = result_of(names, "procedure_address", {"procedure": mangled})
        by_name = result_of(names, "procedure_address", {"procedure": demangled})
        assert by_symbol["address"] == by_name["address"]
        assert (by_name["name"], by_name["mangled_name"]) == (demangled, mangled)
        info = result_of(names, "procedure_info", {"procedure": demangled})
        assert (info["name"], info["mangled_name"]) == (demangled, mangled)


def test_callees_callers_and_instructions_show_demangled_names(names: Session) -> None:
    callees = result_of(names, "procedure_callees", {"procedure": "main"})["callees"]
    assert {c["mangled_name"]: c["name"] for c in callees if c.get("mangled_name")} == fx.CXX_NAMES
    callers = result_of(names, "procedure_callers", {"procedure": "rea_names::Counter::add(int)"})
    assert [c["name"] for c in callers["callers"]] == ["main"]
    assert callers["procedure"]["name"] == "rea_names::Counter::add(int)"
    rows = result_of(names, "read_function_instructions", {"procedure": "main", "limit": 1000})["instructions"]
    calls = " ".join(r.get("symbolized") or "" for r in rows)
    assert "rea_names::Counter::operator+=(int)" in calls and "_ZN9rea_names" not in calls


def test_a_user_name_keeps_the_demangled_name_and_the_symbol(
    rea_registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path))  # this test's names stay its own
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": fx.build("names-clang"), "provider_id": "native"})
        address = result_of(session, "procedure_address", {"procedure": "rea_names::Counter::add(int)"})["address"]
        call_tool(session, "set_address_name", {"address": address, "name": "counter_add"})
        info = result_of(session, "procedure_address", {"procedure": "counter_add"})
        assert info["name"] == "counter_add"
        assert info["original_name"] == "rea_names::Counter::add(int)"
        assert info["mangled_name"] == "_ZN9rea_names7Counter3addEi"
    finally:
        session.close()
