"""trace_call_path with default arguments from main on gcc and clang PIEs (issue 48 item 3): the GOT slots of weak
undefined symbols (``__gmon_start__``) are no code, so no path walks into one."""

from __future__ import annotations

import pytest

from rea.registry import Registry
from tests.native.stub_checks import check_paths_from_main, opened


@pytest.mark.parametrize("fixture_id", ["calls-gcc", "calls-clang"])
def test_paths_from_main_on_a_pie(rea_registry: Registry, fixture_id: str) -> None:
    session = opened(rea_registry, fixture_id, "native")
    try:
        check_paths_from_main(session)
    finally:
        session.close()
