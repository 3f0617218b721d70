"""``program_call_graph`` (issue 27 item 2): every call edge of the program from the one index, paged, each
procedure's edges exactly its ``procedure_callees``; kept in the analysis cache; call-target discovery at every
size, bounded by the index's instruction budget and deadline instead of a code-size threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import cast

import msgspec
import pytest

from rea import registry as registry_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.operations.shapes import ProgramCallGraph
from rea.session import Session
from rea.testing import result_of

FIXTURES = ("shapes-elf-x64", "shapes-elf-x64-nounwind", "shapes-elf-arm64", "elf-x64-so", "pe-x64-exe")


def _open(path: str) -> Session:
    session = Session(registry_mod.load())
    result_of(session, "open_binary", {"path": path, "provider_id": "native"})
    return session


def _graph(session: Session, limit: int = 5000) -> list[dict[str, Any]]:
    """Every page of the graph, each checked against the shape; the edges in page order."""
    edges: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = session.execute("program_call_graph", {"offset": offset, "limit": limit}, CallContext()).normalized
        msgspec.convert(page, ProgramCallGraph)
        for e in page["edges"]:
            assert e["caller"] in page["names"]
            e["name"] = page["names"].get(e["callee"]) if e["callee"] is not None else None
            e["name"] = e["name"] or e.get("callee_name")
        edges.extend(page["edges"])
        offset = page["next_offset"]
    return edges


def _agrees_with_callees(session: Session) -> int:
    """Each procedure's graph edges are its ``procedure_callees`` items; a split-off part's are its parent's."""
    edges = _graph(session)
    by_caller: dict[str, list[tuple[str | None, str | None, str, int]]] = {}
    for e in edges:
        by_caller.setdefault(e["caller"], []).append((e["callee"], e["name"], e["kind"], e["calls"]))
    procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    assert {p["address"] for p in procs if p["part_of"] is not None}.isdisjoint(by_caller)
    for p in procs:
        if p["part_of"] is not None:
            continue
        callees = result_of(session, "procedure_callees", {"procedure": p["address"]})["callees"]
        want = [(c["address"], c["name"], c["kind"], len(c["call_sites"])) for c in callees]
        assert by_caller.get(p["address"], []) == want, p
    return len(edges)


@pytest.mark.parametrize("fixture_id", FIXTURES)
def test_the_graph_is_every_procedures_callees(native_fixtures: Any, fixture_id: str) -> None:
    session = _open(native_fixtures.get(fixture_id).path)
    try:
        assert _agrees_with_callees(session) > 0
        whole = _graph(session)
        assert _graph(session, limit=7) == whole  # pages join into the whole, in order
        order = [(int(e["caller"], 16), e["callee"] is None, int(e["callee"] or "0", 16), e["kind"]) for e in whole]
        assert order == sorted(order)
    finally:
        session.close()


def test_a_real_program_with_register_calls_agrees(tmp_path: Path) -> None:
    session = _open("/bin/ls")
    try:
        edges = _graph(session)
        assert {e["kind"] for e in edges} >= {"direct", "import", "indirect"}
        assert _agrees_with_callees(session) == len(edges)
    finally:
        session.close()


def test_split_parts_call_through_their_parent(native_fixtures: Any) -> None:
    session = _open(native_fixtures.get("shapes-elf-x64").path)
    try:
        procs = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
        parts = [p for p in procs if p["part_of"] is not None]
        assert parts, "shapes.c has a .cold part"
        callers = {e["caller"] for e in _graph(session)}
        assert not callers & {p["address"] for p in parts}
    finally:
        session.close()


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 5001}, {"offset": -1}, {"limit": "10"}])
def test_a_bad_page_is_invalid_request(native_fixtures: Any, params: dict[str, Any]) -> None:
    session = _open(native_fixtures.get("elf-x64").path)
    try:
        with pytest.raises(ReaError) as err:
            session.execute("program_call_graph", params, CallContext())
        assert err.value.code == "invalid_request"
        page = session.execute("program_call_graph", {"offset": 10**6}, CallContext()).normalized
        assert page["edges"] == [] and page["next_offset"] is None and page["total"] > 0
        assert page["limit"] == 500 and page["procedures"] > 0
    finally:
        session.close()


def test_the_graph_is_kept_in_the_analysis_cache(
    native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import graph
    from rea_plugins.native import store

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "MEMO", store._Memo())
    path = native_fixtures.get("shapes-elf-x64").path
    first = _open(path)
    try:
        whole = _graph(first)
    finally:
        first.close()
    monkeypatch.setattr(store, "MEMO", store._Memo())  # a fresh process: only the cache's files remain

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the call graph was built again")

    monkeypatch.setattr(graph, "build", refuse)
    second = _open(path)
    try:
        assert _graph(second) == whole
    finally:
        second.close()


def test_discovery_has_no_size_threshold_and_the_budget_is_typed(native_fixtures: Any) -> None:
    from rea_plugins.native.extract import extract
    from rea_plugins.native.index import Limits
    from rea_plugins.native.index import compute_index
    from rea_plugins.native.model import WorkerRequest
    from rea_plugins.native.provider import NativeProvider

    assert "discovery_max_code_bytes" not in Limits.__struct_fields__
    path = native_fixtures.get("shapes-elf-x64-nounwind").path
    model = extract(WorkerRequest(path=path))
    content = Path(path).read_bytes()
    index = compute_index(model, content, Limits(), data=False)
    assert index.discovery and any(p.source == "call-target" for p in index.procs)
    with pytest.raises(ReaError) as err:
        compute_index(model, content, Limits(max_program_instructions=10), data=False)
    assert err.value.code == "resource_constraint"
    with pytest.raises(ReaError) as late:
        compute_index(model, content, Limits(index_deadline_s=-1.0, index_seconds_per_mib=0.0), data=False)
    assert late.value.code == "provider_timeout"
    profile = NativeProvider().analysis_profile(cast(Any, None))  # the profile reads no target field
    assert profile["call_target_discovery"] == "at every size"


@pytest.mark.parametrize("fixture_id", ["shapes-elf-x64", "elf-x64-so", "pe-x64-exe"])
def test_references_to_code_are_the_data_tables(native_fixtures: Any, fixture_id: str) -> None:
    """The register-call resolver asks whether data names a procedure start; the targeted sweep that answers
    it without the data reference table gives exactly the code addresses that table names."""
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest
    from rea_plugins.native.program import Limits
    from rea_plugins.native.program import Program

    for path in (native_fixtures.get(fixture_id).path, "/bin/ls"):
        program = Program(extract(WorkerRequest(path=path)), path, Limits())
        try:
            program.procedures()
            targeted = program.an.code_data_targets()
            assert targeted is not None
            program._data_refs(None)
            table = {d for d in program._tables[1].dst.tolist() if d >= 0 and program.code_region_at(d) is not None}
            assert targeted == table and table
        finally:
            program.close()
