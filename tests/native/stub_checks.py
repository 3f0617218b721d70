"""Checks of imports seen through their stubs and of call paths on PIEs (issue 48 items 2 and 3), shared by the
native, radare2 and angr tests: every provider must give the same answers on the same fixtures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.fixtures.native import issue48_fixtures as fx


def opened(registry: Registry, fixture_id: str, provider: str) -> Session:
    session = Session(registry)
    result_of(session, "open_binary", {"path": fx.build(fixture_id), "provider_id": provider})
    return session


def check_on(registry: Registry, fixture_id: str, provider: str, *checks: Callable[[Session], None]) -> None:
    """Opens ``fixture_id`` on ``provider`` and runs each check on that one session."""
    session = opened(registry, fixture_id, provider)
    try:
        for check in checks:
            check(session)
    finally:
        session.close()


def _code_sections(session: Session) -> list[tuple[int, int]]:
    segments = result_of(session, "list_segments", {})["segments"]
    return [
        (int(s["start"], 16), int(s["end"], 16))
        for s in segments
        if s["kind"] == "section" and "x" in (s.get("permissions") or "")
    ]


def _text(session: Session, address: str) -> str:
    owner = result_of(session, "resolve_containing_procedure", {"address": address})["procedure"]
    rows = result_of(session, "read_function_instructions", {"procedure": owner["address"], "limit": 1000})
    return next(r["text"] for r in rows["instructions"] if r["address"] == address)


def check_printf_callers(session: Session) -> None:
    """printf's stub is named after the import, and its callers are the program's real call sites."""
    stub = result_of(session, "procedure_address", {"procedure": "printf"})
    assert stub["name"] == "printf"
    info = result_of(session, "procedure_info", {"procedure": stub["address"]})
    assert info["kind"] == "import"
    callers = result_of(session, "procedure_callers", {"procedure": "printf"})["callers"]
    assert {c["name"] for c in callers} == fx.PRINTF_CALLERS
    for c in callers:
        assert c.get("kind") != "thunk" and c["call_sites"], c
        for site in c["call_sites"]:
            assert _text(session, site).startswith(("call", "jmp", "bl", "b ")), site
    xrefs = result_of(session, "xrefs", {"address": stub["address"]})["references"]
    sites = {s for c in callers for s in c["call_sites"]}
    assert sites <= {r["from"] for r in xrefs}


def check_own_stub(session: Session) -> None:
    """A library's call to its own export: the stub is ``lib_helper@plt``, a name finds the function, and the
    function's callers, call paths both ways, go through the stub as a hop."""
    procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    stubs = [p for p in procs if p["name"] == "lib_helper@plt"]
    assert len(stubs) == 1 and stubs[0]["kind"] == "thunk", [(p["name"], p["kind"]) for p in procs]
    function = result_of(session, "procedure_address", {"procedure": "lib_helper"})
    assert function["name"] == "lib_helper" and function["address"] != stubs[0]["address"]
    assert result_of(session, "procedure_info", {"procedure": "lib_helper"})["kind"] == "local"
    callers = result_of(session, "procedure_callers", {"procedure": "lib_helper"})["callers"]
    by_name = {c["name"]: c for c in callers}
    assert by_name["lib_helper@plt"]["kind"] == "thunk"
    assert by_name["lib_entry"]["via_thunk"] == stubs[0]["address"]
    assert len(by_name["lib_entry"]["call_sites"]) == 2
    chain = ["lib_entry", "lib_helper@plt", "lib_helper"]
    forward = result_of(session, "trace_call_path", {"start": "lib_entry", "goal": "lib_helper"})
    assert forward["reached"] and [[n["name"] for n in p["nodes"]] for p in forward["paths"]] == [chain]
    backward = result_of(
        session, "trace_call_path", {"start": "lib_helper", "goal": "lib_entry", "direction": "backward"}
    )
    assert backward["reached"] and [[n["name"] for n in p["nodes"]] for p in backward["paths"]] == [chain]
    # get_call_graph both ways: the stub is a node between the function and its caller, never a leaf.
    up = result_of(session, "get_call_graph", {"address": "lib_helper", "direction": "backward", "depth": 3})
    down = result_of(session, "get_call_graph", {"address": "lib_entry", "depth": 3})
    stub, entry, helper = stubs[0]["address"], by_name["lib_entry"]["address"], function["address"]
    for graph in (up, down):
        hops = {(e["from"], e["to"]) for e in graph["edges"]}
        assert {(entry, stub), (stub, helper)} <= hops, graph["edges"]


def check_paths_from_main(session: Session) -> None:
    """trace_call_path with default arguments from main on a PIE: every callee reached, no path into a GOT slot."""
    body: dict[str, Any] = result_of(session, "trace_call_path", {"start": "main"})
    reached = {n["name"] for p in body["paths"] for n in p["nodes"]}
    assert reached >= fx.CALLS_FROM_MAIN, reached
    code = _code_sections(session)
    for p in body["paths"]:
        for node in p["nodes"]:
            address = int(node["address"], 16)
            assert any(lo <= address < hi for lo, hi in code), (node, p)
    goal = result_of(session, "trace_call_path", {"start": "main", "goal": "printf"})
    assert goal["reached"] and [n["name"] for n in goal["paths"][0]["nodes"]] == ["main", "printf"]
