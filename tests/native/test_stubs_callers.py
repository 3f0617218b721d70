"""Imports through their stubs on native (issue 48 item 2): a PIE's printf callers are its real call sites, and a
library's own PLT stub (``lib_helper@plt``) is a hop between the function and its callers, never an end."""

from __future__ import annotations

import pytest

from rea.registry import Registry
from tests.native.stub_checks import check_on
from tests.native.stub_checks import check_own_stub
from tests.native.stub_checks import check_printf_callers


@pytest.mark.parametrize("fixture_id", ["calls-gcc", "calls-clang"])
def test_printf_callers_are_the_real_call_sites(rea_registry: Registry, fixture_id: str) -> None:
    check_on(rea_registry, fixture_id, "native", check_printf_callers)


def test_a_library_s_own_stub_is_a_hop(rea_registry: Registry) -> None:
    check_on(rea_registry, "selfcall-so", "native", check_own_stub)
