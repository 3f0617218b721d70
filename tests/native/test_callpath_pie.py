"""trace_call_path with default arguments from main on gcc and clang PIEs (issue 48 item 3): the GOT slots of weak
undefined symbols (``__gmon_start__``) are no code, so no path walks into one."""

from __future__ import annotations

from pathlib import Path

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.native.stub_checks import check_on
from tests.native.stub_checks import check_paths_from_main


@pytest.mark.parametrize("fixture_id", ["calls-gcc", "calls-clang"])
def test_paths_from_main_on_a_pie(rea_registry: Registry, fixture_id: str) -> None:
    check_on(rea_registry, fixture_id, "native", check_paths_from_main)


def test_paths_from_main_of_the_hosts_stripped_ls(rea_registry: Registry) -> None:
    # Debian's /bin/ls is a stripped gcc PIE whose walk from main reached __gmon_start__'s GOT slot (0x23fb8 in
    # coreutils 9.1) as a callee and failed as "no procedure named or starting at"; such a node is a leaf.
    ls = Path("/bin/ls").resolve()
    if not ls.is_file():
        pytest.skip("no /bin/ls on this host")
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": str(ls), "provider_id": "native"})
        body = result_of(session, "trace_call_path", {"start": "main", "goal": "setlocale"})
        assert body["reached"] and body["paths"][0]["nodes"][-1]["name"] == "setlocale"
        whole = result_of(session, "trace_call_path", {"start": "main", "max_depth": 2})
        assert whole["paths"]
    finally:
        session.close()
