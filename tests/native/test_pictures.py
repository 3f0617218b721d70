"""get_call_graph and trace_call_path draw their graphs as Mermaid or DOT on request (rea.render)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of
from tests import toolchains


def test_call_graph_structured_by_default_and_drawn_on_request(native: Session) -> None:
    plain = result_of(native, "get_call_graph", {"address": "main", "depth": 2})
    assert "picture" not in plain
    out = result_of(native, "get_call_graph", {"address": "main", "depth": 2, "format": "mermaid"})
    picture = out["picture"]
    assert picture["format"] == "mermaid" and picture["text"].startswith("flowchart LR\n")
    # Every procedure of the structured graph is drawn, with its name, and the root emphasised.
    assert picture["nodes"] == len(out["nodes"]) == picture["nodes_total"]
    for name in ("main", "greet", "compute_checksum", "puts"):
        assert f'["{name}"]' in picture["text"]
    assert '(["main"])' in picture["text"]
    assert picture["text"].count("-->") == picture["edges"] > 0
    dot = result_of(native, "get_call_graph", {"address": "main", "depth": 2, "format": "dot"})["picture"]
    assert dot["text"].startswith('digraph "call graph of main" {') and dot["text"].rstrip().endswith("}")


def test_whole_program_graph_refuses_a_picture(native: Session) -> None:
    with pytest.raises(ReaError) as err:
        result_of(native, "get_call_graph", {"format": "dot"})
    assert err.value.code == "invalid_request" and "address" in (err.value.remediation or "")


def test_call_path_picture_follows_the_path(native: Session) -> None:
    out = result_of(native, "trace_call_path", {"start": "main", "goal": "puts", "format": "mermaid"})
    assert out["reached"] is True
    text = out["picture"]["text"]
    assert '(["main"])' in text and '(["puts"])' in text  # both ends emphasised
    hops = {(h["from"], h["to"]) for p in out["paths"] for h in p["hops"]}
    assert out["picture"]["edges"] == len(hops)


def test_dot_text_renders_with_graphviz(native: Session, tmp_path: Any) -> None:
    dot = toolchains.require("dot")
    text = result_of(native, "get_call_graph", {"address": "main", "format": "dot"})["picture"]["text"]
    svg = subprocess.run([dot, "-Tsvg"], input=text.encode(), capture_output=True, check=True).stdout
    assert svg.lstrip().startswith(b"<?xml") and b"compute_checksum" in svg
