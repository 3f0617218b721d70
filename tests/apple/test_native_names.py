"""native names Objective-C implementations ``-[Class selector]`` from the class metadata (rea.operations.objc),
on a stripped binary whose symbol table no longer has them."""

from __future__ import annotations

import lief
import pytest

from rea import registry as registry_mod
from rea.operations import objc
from rea.session import Session
from rea.testing import result_of
from tests.apple import applefixtures as fx


def test_the_stripped_fixture_has_no_method_symbols(built: fx.Built) -> None:
    fat = lief.MachO.parse(str(built.stripped))
    assert not [s for s in fat.at(0).symbols if s.name.startswith(("-[", "+["))]
    names = objc.implementation_names(fat.at(0))
    assert set(names.values()) == {*fx.WIDGET_METHODS, fx.CATEGORY_METHOD, "-[RootObject init]", "+[RootObject alloc]"}


@pytest.fixture
def stripped(built: fx.Built) -> Session:
    session = Session(registry_mod.load())
    result_of(session, "open_binary", {"path": str(built.stripped), "provider_id": "native"})
    return session


def test_procedures_are_named_from_objc_metadata(stripped: Session, built: fx.Built) -> None:
    try:
        fat = lief.MachO.parse(str(built.ios))
        truth = {s.name: int(s.value) for s in fat.at(0).symbols if s.name.startswith(("-[", "+["))}
        listed = result_of(stripped, "list_procedures", {"limit": 200})
        names = {
            p["name"]: int(p["address"], 16) if isinstance(p["address"], str) else p["address"]
            for p in listed["procedures"]
        }
        for name, address in truth.items():
            assert names.get(name) == address, name
        info = result_of(stripped, "procedure_info", {"procedure": "-[Widget greet:]"})
        assert info["name"] == "-[Widget greet:]"
        from rea_plugins.native import decompile

        if decompile.engine().available:  # the decompiler's C carries the name as its function's
            text = result_of(stripped, "procedure_pseudo_code", {"procedure": fx.CATEGORY_METHOD})["text"]
            assert text.startswith(f"void {fx.CATEGORY_METHOD}(void)") and "_kit_version();" in text, text
    finally:
        stripped.close()
