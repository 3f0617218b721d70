"""rea.render: the one graph picture renderer (Mermaid, DOT), its bounds and its escaping."""

from __future__ import annotations

import subprocess

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.render import Edge
from rea.render import Graph
from rea.render import Node
from rea.render import attach
from rea.render import picture
from tests import toolchains


def _chain(n: int) -> Graph:
    return Graph(
        nodes=[Node(id=str(i), label=f"f{i}", emphasis=i == 0) for i in range(n)],
        edges=[Edge(source=str(i), target=str(i + 1)) for i in range(n - 1)],
    )


def test_a_small_graph_is_drawn_whole() -> None:
    out = picture(_chain(3), "mermaid")
    assert out.text == 'flowchart LR\n  n0(["f0"])\n  n1["f1"]\n  n2["f2"]\n  n0 --> n1\n  n1 --> n2\n'
    assert (out.nodes, out.edges, out.nodes_total, out.edges_total, out.truncated, out.cut) == (3, 2, 3, 2, False, None)


def test_the_cut_keeps_the_first_nodes_and_says_so() -> None:
    out = picture(_chain(10), "dot", max_nodes=4, max_edges=2)
    assert (out.nodes, out.edges, out.nodes_total, out.edges_total) == (4, 2, 10, 9)
    assert out.truncated and out.cut is not None and "first 4 of 10 nodes" in out.cut
    assert '[label="f3"]' in out.text and "f4" not in out.text
    assert out.text.count("->") == 2


def test_duplicates_count_once_and_unlisted_ends_are_drawn_by_id() -> None:
    graph = Graph(
        nodes=[Node(id="a", label="a")],
        edges=[Edge(source="a", target="b"), Edge(source="a", target="b"), Edge(source="a", target="b", label="tail")],
    )
    out = picture(graph, "mermaid")
    assert out.nodes == 2 and out.edges == 2 and '["b"]' in out.text and '-->|"tail"|' in out.text


def test_attach_adds_a_picture_only_when_asked() -> None:
    body = {"x": 1}
    assert attach(body, {}, lambda: _chain(2)) is body
    assert attach(body, {"format": "structured"}, lambda: _chain(2)) is body
    drawn = attach(body, {"format": "dot"}, lambda: _chain(2))
    assert drawn["picture"]["format"] == "dot" and drawn["x"] == 1


LABELS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


@given(st.lists(LABELS, min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_labels_cannot_break_out_of_mermaid(labels: list[str]) -> None:
    graph = Graph(nodes=[Node(id=str(i), label=x) for i, x in enumerate(labels)], edges=[])
    text = picture(graph, "mermaid").text
    # One line per node after the header, every label inside its quotes (no quote, bar or newline inside).
    lines = text.splitlines()
    assert len(lines) == 1 + len(labels)
    for line in lines[1:]:
        inner = line.split('["', 1)[1].rsplit('"]', 1)[0]
        assert '"' not in inner and "|" not in inner


def test_hostile_labels_still_make_valid_dot() -> None:
    dot = toolchains.require("dot")
    labels = ['a"b', "back\\slash", "new\nline", "}", "<html>", "#1;", "x" * 200]
    graph = Graph(
        nodes=[Node(id=str(i), label=x) for i, x in enumerate(labels)],
        edges=[Edge(source="0", target=str(i), label=labels[i]) for i in range(1, len(labels))],
        title='t"itle',
    )
    out = subprocess.run([dot, "-Tsvg"], input=picture(graph, "dot").text.encode(), capture_output=True, check=False)
    assert out.returncode == 0, out.stderr
    assert b"back\\slash" in out.stdout
