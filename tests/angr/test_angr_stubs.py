"""Imports through their stubs and call paths from main on angr (issue 48 items 2 and 3): the same answers as
native on the same fixtures (tests/native/stub_checks.py); a name finds the function, never its PLT stub."""

from __future__ import annotations

import importlib.util

import pytest

from rea.registry import Registry
from tests.native.stub_checks import check_on
from tests.native.stub_checks import check_own_stub
from tests.native.stub_checks import check_paths_from_main
from tests.native.stub_checks import check_printf_callers

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("angr") is None, reason="angr is not installed (pip install 'rea[angr]')"
)


@pytest.mark.parametrize("fixture_id", ["calls-gcc", "calls-clang"])
def test_printf_callers_and_paths_from_main(rea_registry: Registry, fixture_id: str) -> None:
    check_on(rea_registry, fixture_id, "angr", check_printf_callers, check_paths_from_main)


def test_a_library_s_own_stub_is_named_and_a_hop(rea_registry: Registry) -> None:
    check_on(rea_registry, "selfcall-so", "angr", check_own_stub)
