"""Evidence whose result is a Struct: read one level at a time, and every view equals its builtins twin's."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.evidence import as_object
from rea.presentation import present
from rea.session import Session
from rea.testing import call_tool

from .support import PROVIDER


class Shape(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    kind: str
    members: list[str] = []
    note: str | None = None


class Row(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename={"row_name": "name"}):
    node_id: str
    row_name: str
    line: int
    shape: Shape | None = None
    flags: list[str] = []


class Pair(msgspec.Struct, frozen=True, array_like=True):
    start: int
    end: int


class Tagged(msgspec.Struct, frozen=True, tag="tagged"):
    value: int


class Graph(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    schema_version: int
    procedure: dict[str, Any]
    modules: list[Row]
    spans: list[Pair]
    counts: dict[str, int]
    tagged: Tagged
    text: str
    empty: list[Row] = []


def _graph() -> Graph:
    rows = [
        Row(
            node_id=f"n{i}",
            row_name="dup" if i in (3, 4) else f"m{i}",
            line=i,
            shape=Shape(kind="fn") if i % 2 else None,
        )
        for i in range(40)
    ]
    return Graph(
        schema_version=1,
        procedure={"address": "0x10", "name": "main"},
        modules=rows,
        spans=[Pair(1, 2), Pair(3, 4)],
        counts={"modules": 40},
        tagged=Tagged(value=7),
        text="x" * 600,
    )


@pytest.mark.parametrize(
    "value",
    [
        Shape(kind="k"),
        Shape(kind="k", members=["a"], note="n"),
        Row(node_id="a", row_name="b", line=0, shape=Shape(kind="s", members=[])),
        Pair(1, 2),
        Tagged(value=1),
        _graph(),
        {"plain": 1},
        [1, 2],
    ],
)
def test_as_object_is_the_encoded_object_one_level_deep(value: Any) -> None:
    assert msgspec.json.encode(as_object(value)) == msgspec.json.encode(value)
    assert msgspec.to_builtins(as_object(value)) == msgspec.to_builtins(value)


def _record(result: Any) -> Evidence:
    return ev_mod.build(
        operation="analyze_javascript_application",
        provider=PROVIDER,
        subject=None,
        analysis_profile=ev_mod.make_profile(PROVIDER, {"fixture": True}),
        parameters={},
        normalized_result=result,
    )


VIEWS: list[dict[str, Any]] = [
    {"kind": "summary"},
    {"kind": "page", "section": "modules", "offset": 5, "limit": 7},
    {"kind": "page", "section": "spans"},
    {"kind": "page", "section": "text", "limit": 10},
    {"kind": "item", "section": "modules", "key": "m7"},
    {"kind": "item", "section": "modules", "node_id": "n9"},
    {"kind": "item", "section": "modules", "index": 3},
    {"kind": "item", "section": "counts", "key": "modules"},
    {"kind": "item", "section": "tagged", "key": "value"},
    {"kind": "facet", "facet": "procedure"},
    {"kind": "facet", "facet": "callers"},
]


def _views(session: Session, ev: Evidence) -> list[Evidence]:
    """Every view of ``ev`` held alone in the session's ledger (a record and its twin share one id)."""
    session.ledger.clear()
    session.ledger.record(ev)
    out = []
    for view in VIEWS:
        got = call_tool(
            session, "inspect_analysis_view", {"source": ev_mod.retained_reference(ev.evidence_id), "view": view}
        )
        assert got.evidence is not None
        out.append(got.evidence)
    return out


def test_views_of_a_struct_result_equal_those_of_its_builtins_twin(rea_session: Session) -> None:
    graph = _graph()
    struct_ev, twin = _record(graph), _record(msgspec.to_builtins(graph))
    assert struct_ev.evidence_id == twin.evidence_id
    assert ev_mod.encode(struct_ev) == ev_mod.encode(twin)
    assert struct_ev.normalized_result is graph
    of_struct, of_twin = _views(rea_session, struct_ev), _views(rea_session, twin)
    for view, a, b in zip(VIEWS, of_struct, of_twin, strict=True):
        assert a.evidence_id == b.evidence_id, view
        assert ev_mod.encode(a) == ev_mod.encode(b), view
    summary = of_struct[0].normalized_result["summary"]
    assert {s["name"]: s["count"] for s in summary["sections"]} == {"modules": 40, "spans": 2}
    assert summary["procedure"] == {"address": "0x10", "name": "main"}
    assert of_struct[1].normalized_result["items"][0] == msgspec.to_builtins(graph.modules[5])


def test_an_ambiguous_key_in_struct_rows_names_the_matching_rows(rea_session: Session) -> None:
    ev = _record(_graph())
    rea_session.ledger.record(ev)
    view = {"kind": "item", "section": "modules", "key": "dup"}
    with pytest.raises(ReaError) as caught:
        call_tool(
            rea_session, "inspect_analysis_view", {"source": ev_mod.retained_reference(ev.evidence_id), "view": view}
        )
    assert caught.value.details["matching_indexes"] == [3, 4]
    assert caught.value.details["matching_node_ids"] == ["n3", "n4"]


def test_compact_presentation_of_a_struct_record_converts_nothing_below_it() -> None:
    graph = _graph()
    struct_ev, twin = _record(graph), _record(msgspec.to_builtins(graph))
    compact = present(struct_ev, "compact")
    assert compact["normalized_result"] is graph
    assert msgspec.json.encode(compact) == msgspec.json.encode(present(ev_mod.to_builtins(twin), "compact"))
    assert present(struct_ev, "complete") is struct_ev


def test_a_spilled_struct_record_comes_back_as_the_same_record(rea_session: Session) -> None:
    ev = _record(_graph())
    rea_session.ledger.record(ev)
    assert rea_session.ledger.spill(ev.evidence_id)
    back = rea_session.ledger.get(ev.evidence_id)
    assert back is not None and isinstance(back.normalized_result, dict)
    assert ev_mod.validate(back).evidence_id == ev.evidence_id
    assert ev_mod.encode(back) == ev_mod.encode(ev)
