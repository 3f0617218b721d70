"""AArch64 switch tables on native (issue 48 item 5): gcc's and clang's ldrb/adr/add/br tables give their edges.

switch.c's ``route`` has 12 cases, each its own code. On native each build's ``br`` has 12 computed targets, every
one an instruction objdump lists inside ``route``, and the same targets angr's CFG finds where angr runs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rea.registry import load
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.fixtures.native.diff_search_fixtures import SWITCH_CASES
from tests.fixtures.native.diff_search_fixtures import switch_build


def route_instructions(path: Path) -> set[int]:
    """The addresses objdump lists in ``route`` (not a tool under test)."""
    objdump = toolchains.require("aarch64-linux-gnu-objdump")
    text = subprocess.run([objdump, "-d", str(path)], check=True, capture_output=True, text=True).stdout
    body = text.split("<route>:\n", 1)[1].split("\n\n", 1)[0]
    return {int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):", body, re.M)}


def computed_targets(path: Path, provider: str) -> set[int]:
    session = Session(load())
    try:
        result_of(session, "open_binary", {"path": str(path), "provider_id": provider})
        refs = result_of(session, "procedure_references", {"procedure": "route", "limit": 1000})["references"]
        return {int(r["to"], 16) for r in refs if r["kind"] == "computed" and r.get("to")}
    finally:
        session.close()


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_the_switch_edges_are_found_on_native(compiler: str) -> None:
    path = switch_build(compiler)
    targets = computed_targets(path, "native")
    assert len(targets) == SWITCH_CASES, sorted(map(hex, targets))
    assert targets <= route_instructions(path)
    session = Session(load())
    try:
        result_of(session, "open_binary", {"path": str(path), "provider_id": "native"})
        blocks = result_of(session, "analyze_function", {"procedure": "route"})["basic_blocks"]
    finally:
        session.close()
    # Each case starts a block of its own.
    starts = {int(b["start"], 16) for b in blocks}
    assert targets <= starts


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_native_and_angr_agree_on_the_switch(compiler: str) -> None:
    registry = load()
    angr = registry.providers.get("angr")
    if angr is None or angr.availability().status != "available":
        pytest.skip("the angr provider is not available here (pip install 'rea-reverse[angr]')")
    path = switch_build(compiler)
    assert computed_targets(path, "native") == computed_targets(path, "angr")
