"""Graph pictures: one small graph shape, drawn as Mermaid or Graphviz DOT text, bounded.

A graph tool (a call graph, a call path, an application graph, a comparison) builds a ``Graph`` from its
result and calls ``picture``; the ``Picture`` it returns is a field of the tool's own result, so the
structured answer stays the default and a picture is only drawn on request (the tool's ``format`` argument,
``FORMAT_PROPERTY``). Text, not an image: an agent pastes Mermaid into Markdown, a person runs DOT through
Graphviz (``rea ... --render out.svg`` does, when ``dot`` is installed).

The cut is stated, never silent: the first ``max_nodes`` nodes in the order the tool gives them (its own
order: nearest the root first, the main module first), then the first ``max_edges`` edges whose ends are both
drawn. ``Picture.cut`` says so whenever anything was left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Mapping
from typing import Literal

import msgspec

from rea.records import JSONObject

Format = Literal["mermaid", "dot"]
FORMATS: tuple[str, ...] = ("structured", "mermaid", "dot")

# A picture larger than this is not one a person reads; the structured result keeps every node anyway.
MAX_NODES = 80
MAX_EDGES = 160
MAX_LABEL = 48

# The input-schema property a graph tool declares: a JSON Schema fragment.
FORMAT_PROPERTY: JSONObject = {
    "type": "string",
    "enum": list(FORMATS),
    "default": "structured",
    "description": "structured (default), or also a picture: mermaid or dot text.",
    "examples": ["mermaid"],
}


class Node(msgspec.Struct, frozen=True, kw_only=True):
    """One node: a stable id (unique in the graph), its label, and whether to draw it emphasised (a root)."""

    id: str
    label: str
    emphasis: bool = False


class Edge(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    target: str
    label: str | None = None


class Graph(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool hands the renderer: nodes in the tool's order of importance, then edges."""

    nodes: list[Node]
    edges: list[Edge]
    title: str = ""
    # Left to right reads well for call chains; top-down for wide trees (an application's modules).
    direction: Literal["LR", "TB"] = "LR"


class Picture(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A graph drawn as text: Mermaid (paste into Markdown) or DOT (Graphviz), with what the bound left out."""

    format: Format
    text: str
    nodes: int
    edges: int
    nodes_total: int
    edges_total: int
    truncated: bool = False
    cut: str | None = None


def requested(args: Mapping[str, object]) -> Format | None:
    """The picture format a tool call asked for (its ``format`` argument), or None for the structured default."""
    value = args.get("format", "structured")
    return value if value in ("mermaid", "dot") else None


def _label(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _mermaid_text(text: str) -> str:
    # Mermaid's entity codes inside a quoted label: '#' first, since the others introduce it.
    out = _label(text).replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    return out.replace("|", "#124;")


def _dot_text(text: str) -> str:
    return _label(text).replace("\\", "\\\\").replace('"', '\\"')


_TITLE_UNSAFE = re.compile(r"[^A-Za-z0-9_ .:/-]")


def picture(graph: Graph, fmt: Format, *, max_nodes: int = MAX_NODES, max_edges: int = MAX_EDGES) -> Picture:
    """Draw ``graph`` in ``fmt`` within the bounds; duplicate nodes and edges (same ends and label) count once."""
    seen: dict[str, Node] = {}
    for node in graph.nodes:
        seen.setdefault(node.id, node)
    # An edge may name an end the tool did not list as a node (a callee past its bound): it is drawn by id.
    for edge in graph.edges:
        for end in (edge.source, edge.target):
            if end not in seen:
                seen[end] = Node(id=end, label=end)
    nodes_all = list(seen.values())
    edges_all = list(dict.fromkeys((e.source, e.target, e.label) for e in graph.edges))
    drawn = nodes_all[:max_nodes]
    ids = {n.id: f"n{i}" for i, n in enumerate(drawn)}
    between = [e for e in edges_all if e[0] in ids and e[1] in ids]
    edges = between[:max_edges]
    truncated = len(drawn) < len(nodes_all) or len(edges) < len(edges_all)
    cut = None
    if truncated:
        cut = (
            f"drawn: the first {len(drawn)} of {len(nodes_all)} nodes in the result's order and "
            f"{len(edges)} of {len(edges_all)} edges (those between drawn nodes, first {max_edges}); "
            "the structured result has them all"
        )
    if fmt == "mermaid":
        lines = [f"flowchart {graph.direction}"]
        for node in drawn:
            text = _mermaid_text(node.label)
            lines.append(f'  {ids[node.id]}(["{text}"])' if node.emphasis else f'  {ids[node.id]}["{text}"]')
        for source, target, label in edges:
            arrow = f'-->|"{_mermaid_text(label)}"|' if label else "-->"
            lines.append(f"  {ids[source]} {arrow} {ids[target]}")
    else:
        title = _TITLE_UNSAFE.sub("_", graph.title or "rea")
        lines = [f'digraph "{title}" {{', f"  rankdir={graph.direction};", '  node [shape=box, fontname="monospace"];']
        for node in drawn:
            extra = ", penwidth=2, style=rounded" if node.emphasis else ""
            lines.append(f'  {ids[node.id]} [label="{_dot_text(node.label)}"{extra}];')
        for source, target, label in edges:
            attrs = f' [label="{_dot_text(label)}"]' if label else ""
            lines.append(f"  {ids[source]} -> {ids[target]}{attrs};")
        lines.append("}")
    return Picture(
        format=fmt,
        text="\n".join(lines) + "\n",
        nodes=len(drawn),
        edges=len(edges),
        nodes_total=len(nodes_all),
        edges_total=len(edges_all),
        truncated=truncated,
        cut=cut,
    )


def attach(body: JSONObject, args: Mapping[str, object], graph: Callable[[], Graph]) -> JSONObject:
    """``body`` with a ``picture`` field when the call asked for one (``graph`` is built only then)."""
    fmt = requested(args)
    if fmt is None:
        return body
    return {**body, "picture": msgspec.to_builtins(picture(graph(), fmt))}
