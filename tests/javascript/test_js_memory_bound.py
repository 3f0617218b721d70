"""One 16 MiB line of JavaScript (issue 24 item 7): past rea's parse bound it is not parsed (a syntax tree that large
took the server to 1.8 GiB); its strings come from a scan of its text and the module says why."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

from rea_plugins.javascript import facts
from rea_plugins.javascript import syntax
from tests.mcp.harness import server_env

SCRIPT = """
import json, resource, sys
from rea.registry import default_registry
from rea.session import Session
from rea.testing import result_of
session = Session(default_registry())
result = result_of(session, "analyze_javascript_application", {"input_path": sys.argv[1], "detail": "complete"})
session.close()
big = next(m for m in result["modules"] if m["path"] == "big.js")
print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                  "diagnostics": [d["message"] for d in big["diagnostics"]], "parse": big["parse"],
                  "strings": [s["value"] for s in big["strings"]["items"]]}))
"""


def test_a_huge_line_is_scanned_not_parsed_within_the_memory_bound(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    numbers = ",".join(str(i) for i in range(2_200_000))
    (app / "big.js").write_text(f'var labels = ["needle label"]; var a = [{numbers}]; console.log("done");\n')
    assert (app / "big.js").stat().st_size > 16_000_000
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(app)], capture_output=True, text=True, timeout=300, env=server_env()
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert any("not parsed" in d for d in report["diagnostics"]), report["diagnostics"]
    assert {"needle label", "done"} <= set(report["strings"])
    assert report["parse"] == "error"  # not parsed: the module's facts are partial, as for a syntax error
    # Its memory is a benchmark's figure (benchmarks/javascript.py --parse-bound prints it), not an assertion here.


# Top-level functions (kept as declarations for shapes) whose bodies are mostly nodes without a fact (arithmetic), a
# module-level IIFE and closures: the nodes a walk could keep past its end.
_TERMS = " + ".join(f"(a * {k} - b / {k + 1})" for k in range(24))
_WALKED = (
    "\n".join(
        f"function f{i}(a, b) {{ const c = {_TERMS}; if (c) {{ return g(c, 'v{i}', () => a); }} return null; }}"
        for i in range(400)
    )
    + "\n(function () { var local = 1; return function inner() { return local + f1(2, 3); }; })();\n"
)


def test_a_finished_walk_holds_none_of_the_nodes_it_walked() -> None:
    """A tree-sitter node caches the children it was asked for: a walked node kept past the walk (the root, a
    declaration kept for shapes) would keep every node reached under it, as much memory as the tree itself."""
    data = _WALKED.encode()
    tree = syntax.parser_for("javascript").parse(data)
    walker = facts._Walker("walked.js", data, None)
    tracemalloc.start()
    try:
        parsed = syntax.parser_for("javascript").parse(data)
        tree_bytes = tracemalloc.get_traced_memory()[0]
        del parsed
        before = tracemalloc.get_traced_memory()[0]
        walker.run(tree)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(walker.fns) > 400 and "f1" in walker.toplevel
    # What remains is the walk's facts, a fraction of the tree: its nodes would be more than the tree.
    assert kept < tree_bytes / 4, (kept, tree_bytes)


def test_a_shared_line_number_is_always_its_own_value() -> None:
    """Records share line numbers through one table that concurrent analyses fill and empty: a number read from it is
    the same object for the same line, and its own value even where another thread left the table misplaced."""
    syntax.release_lines()
    try:
        # Two int objects of one value (a literal would be one constant): the table gives back one of them.
        first = syntax.shared_line(int("1000"))
        assert syntax.shared_line(int("1000")) is first
        syntax._LINES.extend(range(5))  # as two threads extending at once could leave it
        assert [syntax.shared_line(n) for n in (1000, 1003, 2000, 1 << 20)] == [1000, 1003, 2000, 1 << 20]
    finally:
        syntax.release_lines()
