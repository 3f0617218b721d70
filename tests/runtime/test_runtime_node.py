"""The V8 inspector tools against real Node programs under --inspect on loopback, and the join with the static graph
analyze_javascript_application builds of the same program."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.runtime.nodeapp import CRASHING
from tests.runtime.nodeapp import LATE_PLUGIN
from tests.runtime.nodeapp import Inspected


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _observe(
    session: Session, program: Inspected, root: Path, observation_ms: int = 800, detail: str = "complete"
) -> tuple[str, dict]:
    listing = result_of(session, "list_javascript_runtime_targets", {"inspector_endpoint": program.endpoint})
    assert listing["total"] == 1
    target = listing["targets"][0]
    out = call_tool(
        session,
        "observe_javascript_runtime",
        {
            "inspector_endpoint": program.endpoint,
            "target_id": target["target_id"],
            "runtime_kind": "node",
            "allowed_file_roots": [str(root)],
            "observation_ms": observation_ms,
            "detail": detail,
        },
    )
    assert out.evidence is not None
    return out.evidence.evidence_id, msgspec.to_builtins(out.evidence.normalized_result)


def test_lists_the_node_target_within_file_roots(
    rea_session: Session, node_app: Path, node_path: str, inspected: list[Inspected], tmp_path: Path
) -> None:
    program = Inspected(node_path, node_app / "main.js")
    inspected.append(program)
    listing = result_of(
        rea_session,
        "list_javascript_runtime_targets",
        {"inspector_endpoint": program.endpoint, "allowed_file_roots": [str(node_app)]},
    )
    assert listing["runtime"]["product"].startswith("node.js/")
    assert listing["total"] == 1 and listing["next_offset"] is None
    (target,) = listing["targets"]
    assert target["type"] == "node"
    assert target["url"] == (node_app / "main.js").resolve().as_uri()
    assert target["file_path"] == str((node_app / "main.js").resolve())
    # Another root leaves it out, counted.
    elsewhere = result_of(
        rea_session,
        "list_javascript_runtime_targets",
        {"inspector_endpoint": program.endpoint, "allowed_file_roots": [str(tmp_path)]},
    )
    assert elsewhere["total"] == 0 and elsewhere["excluded"]["outside_file_roots"] == 1


def test_observes_scripts_console_and_exceptions_passively(
    rea_session: Session, node_app: Path, node_path: str, inspected: list[Inspected]
) -> None:
    program = Inspected(node_path, node_app / "main.js")
    inspected.append(program)
    _, obs = _observe(rea_session, program, node_app)
    by_path = {s["file_path"]: s for s in obs["scripts"]}
    loaded = {"main.js", "lib/util.js", "dist/feature.js", "plugins/early.js"}
    assert set(by_path) == {str((node_app / rel).resolve()) for rel in loaded}
    for rel in loaded:
        script = by_path[str((node_app / rel).resolve())]
        # The source the runtime holds is the file's bytes: the hash rea computed matches the file's.
        assert script["sha256"] == _sha(node_app / rel), rel
        assert script["v8_hash"]
    assert by_path[str((node_app / "dist/feature.js").resolve())]["source_map_url"] == "feature.js.map"
    assert by_path[str((node_app / "main.js").resolve())]["source_map_url"] is None
    # Node's own scripts are counted, not listed.
    assert obs["counts"]["runtime_internal"] > 10
    assert obs["counts"]["application"] == 4 and obs["counts"]["sources_read"] == 4
    assert any(c["is_default"] for c in obs["execution_contexts"])
    texts = [c["text"] for c in obs["console"]]
    assert "ready 5 <x>!" in texts
    # Passive: the debugger statement on every tick never stopped the program while rea watched.
    ticks = [t for t in texts if t.startswith("tick ")]
    assert len(ticks) >= 3, texts
    assert all("resumed it at once" in lim for lim in obs["limitations"]), obs["limitations"]
    # And it still runs after rea detached.
    assert program.proc.poll() is None


def test_reconcile_joins_every_loaded_script_to_its_module(
    rea_session: Session, node_app: Path, node_path: str, inspected: list[Inspected]
) -> None:
    program = Inspected(node_path, node_app / "main.js")
    inspected.append(program)
    # The default answer: counts and a page of the scripts, the complete observation retained and linked.
    obs_id, summary = _observe(rea_session, program, node_app, detail="summary")
    assert summary["total"] == 4 and summary["counts"]["application"] == 4 and summary["next_offset"] is None
    assert summary["complete_evidence_id"] != obs_id and len(summary["scripts"]) == 4
    # The static graph made through the kernel's tool invocation of analyze_javascript_application.
    rec = result_of(
        rea_session,
        "reconcile_javascript_runtime",
        {
            "runtime_observations": [{"kind": "retained-evidence", "evidence_id": obs_id}],
            "static_layers": [{"input_path": str(node_app)}],
        },
    )
    assert rec["loaded_but_unknown"] == []
    known = {k["module_path"]: k for k in rec["loaded_and_known"]}
    assert set(known) == {"main.js", "lib/util.js", "dist/feature.js", "plugins/early.js"}
    assert all(k["matched_by"] == "content-hash" for k in known.values())
    # The bundle's source map reaches the original sources it was built from.
    assert {"mod:src/feature.js", "mod:src/helper.js"} <= set(known["dist/feature.js"]["mapped_modules"])
    never = {n["module_path"] for n in rec["known_but_never_loaded"]}
    assert "lib/unused.js" in never
    assert not never & {"main.js", "lib/util.js", "dist/feature.js", "src/feature.js", "src/helper.js"}
    assert rec["counts"]["loaded_and_known"] == 4 and rec["counts"]["runtime_scripts"] == 4


def test_reconcile_names_a_script_the_static_graph_never_saw(
    rea_session: Session, node_app: Path, node_path: str, inspected: list[Inspected], tmp_path: Path
) -> None:
    import shutil

    app = tmp_path / "app"
    shutil.copytree(node_app, app)
    static = call_tool(rea_session, "analyze_javascript_application", {"input_path": str(app)})
    assert static.evidence is not None
    # Written after the analysis: the runtime loads a plugin the static graph does not hold, and a changed file.
    (app / "plugins" / "late.js").write_text(LATE_PLUGIN)
    (app / "lib" / "util.js").write_text("exports.add = (a, b) => b + a;\n")
    # The bundle changed after its map was made (a line appended): its bytes join nothing, its map still joins it.
    with (app / "dist" / "feature.js").open("a") as fh:
        fh.write("// patched after the build\n")
    program = Inspected(node_path, app / "main.js")
    inspected.append(program)
    obs_id, _ = _observe(rea_session, program, app)
    rec = result_of(
        rea_session,
        "reconcile_javascript_runtime",
        {
            "runtime_observations": [{"kind": "retained-evidence", "evidence_id": obs_id}],
            "static_layers": [{"kind": "retained-evidence", "evidence_id": static.evidence.evidence_id}],
            "limits": {"limit": 2},
        },
    )
    unknown = {u["url"].rsplit("/", 2)[-2] + "/" + u["url"].rsplit("/", 1)[-1]: u for u in rec["loaded_but_unknown"]}
    assert unknown["plugins/late.js"]["reason"] == "no-static-module"
    assert unknown["lib/util.js"]["reason"] == "content-differs"
    assert unknown["lib/util.js"]["same_path_module"] == "mod:lib/util.js"
    assert rec["counts"]["loaded_but_unknown"] == 2 and rec["counts"]["loaded_and_known"] == 3
    everything = result_of(
        rea_session,
        "reconcile_javascript_runtime",
        {
            "runtime_observations": [{"kind": "retained-evidence", "evidence_id": obs_id}],
            "static_layers": [{"kind": "retained-evidence", "evidence_id": static.evidence.evidence_id}],
        },
    )
    bundle = next(k for k in everything["loaded_and_known"] if k["module_path"] == "dist/feature.js")
    assert bundle["matched_by"] == "source-map" and "mod:src/helper.js" in bundle["mapped_modules"]
    # Paged: two rows of each list, the rest by next_offset.
    assert len(rec["loaded_and_known"]) == 2 and rec["page"]["next_offset"] == 2


def test_refuses_a_non_loopback_endpoint_and_a_missing_target(
    rea_session: Session, node_app: Path, node_path: str, inspected: list[Inspected]
) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "list_javascript_runtime_targets", {"inspector_endpoint": "http://10.0.0.1:9229"})
    assert err.value.code == "invalid_request"
    program = Inspected(node_path, node_app / "main.js")
    inspected.append(program)
    with pytest.raises(ReaError) as err:
        call_tool(
            rea_session,
            "observe_javascript_runtime",
            {"inspector_endpoint": program.endpoint, "target_id": "nope", "runtime_kind": "node"},
        )
    assert err.value.code == "target_unavailable"


def test_an_uncaught_exception_ends_the_window_and_is_recorded(
    rea_session: Session, node_path: str, inspected: list[Inspected], tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.js").write_text("exports.add = (a, b) => a + b;\n")
    (tmp_path / "crashing.js").write_text(CRASHING)
    program = Inspected(node_path, tmp_path / "crashing.js")
    inspected.append(program)
    _, obs = _observe(rea_session, program, tmp_path, observation_ms=10_000)
    (exc,) = obs["exceptions"]
    assert "rea-test-uncaught" in (exc["description"] or "")
    # Node names the script by its path here (not a file:// URL).
    assert (exc["url"] or "").endswith("/crashing.js") and exc["line"] == 2
    assert any("ended" in lim for lim in obs["limitations"])
    assert program.proc.wait(timeout=30) != 0
