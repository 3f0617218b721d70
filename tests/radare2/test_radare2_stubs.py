"""Imports through their stubs and call paths from main on radare2 (issue 48 items 2 and 3): the same answers as
native on the same fixtures (tests/native/stub_checks.py), the library's own stub named ``lib_helper@plt``."""

from __future__ import annotations

import pytest

from rea.registry import Registry
from rea_plugins.radare2.options import library_dir
from tests.native.stub_checks import check_on
from tests.native.stub_checks import check_own_stub
from tests.native.stub_checks import check_paths_from_main
from tests.native.stub_checks import check_printf_callers

pytestmark = pytest.mark.skipif(library_dir() is None, reason="radare2 is not installed (pip install 'rea[radare2]')")


@pytest.mark.parametrize("fixture_id", ["calls-gcc", "calls-clang"])
def test_printf_callers_and_paths_from_main(rea_registry: Registry, fixture_id: str) -> None:
    check_on(rea_registry, fixture_id, "radare2", check_printf_callers, check_paths_from_main)


def test_a_library_s_own_stub_is_named_and_a_hop(rea_registry: Registry) -> None:
    check_on(rea_registry, "selfcall-so", "radare2", check_own_stub)
