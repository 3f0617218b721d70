"""Call shapes on real code (issue 23 item 11): mocha's ``yargs().scriptName(...).command(...)...`` chain is its
calls, each named up to its method with its first argument (not one string cut at 80 characters, repeated), and
a conditional's value keeps both arms."""

from __future__ import annotations

from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.javascript import facts
from tests.javascript.test_js_entry_points import MOCHA
from tests.javascript.test_js_parse_recovery import npm_package


def test_a_yargs_chain_is_its_calls_with_their_first_arguments() -> None:
    cli = npm_package(*MOCHA) / "lib" / "cli" / "cli.js"
    data = cli.read_bytes()
    found = facts.extract(str(cli), "javascript", data)
    calls = [(c.callee, c.argument) for fn in found.functions for c in fn.calls]
    chain = [(callee, arg) for callee, arg in calls if callee.startswith("yargs().")]
    # The source (lib/cli/cli.js): yargs().scriptName('mocha').command(commands.run).command(commands.init)...
    assert ("yargs().scriptName", "mocha") in chain
    assert ("yargs().scriptName().command", "commands.run") in chain
    assert ("yargs().scriptName().command().command", "commands.init") in chain
    assert ("yargs().scriptName().command().command().updateStrings().fail().help", "help") in chain
    assert len({callee for callee, _ in chain}) == len(chain) >= 10
    assert all(len(callee) <= 120 for callee, _ in calls)


def test_a_conditional_keeps_both_candidates() -> None:
    source = (
        b"function pick(parallel) { return parallel ? parallelRun : singleRun; }\n"
        b"function parallelRun() {}\nfunction singleRun() {}\n"
    )
    found = facts.extract("pick.js", "javascript", source)
    pick = next(fn for fn in found.functions if fn.name == "pick")
    shape = pick.returns[0].shape
    assert shape["type"] == "conditional"
    assert [c.get("name") for c in shape["candidates"]] == ["parallelRun", "singleRun"]


def test_new_of_a_required_constructor_resolves_to_the_modules_export(rea_registry: Registry) -> None:
    root = npm_package(*MOCHA)
    session = Session(rea_registry)
    try:
        app = call_tool(session, "analyze_javascript_application", {"input_path": str(root)}).evidence
        assert app is not None
        traced = result_of(
            session,
            "trace_javascript_semantics",
            {
                "application": {"kind": "retained-evidence", "evidence_id": app.evidence_id},
                "target": {"kind": "module", "value": "lib/cli/run.js"},
                "max_depth": 1,
            },
        )
    finally:
        session.close()
    # lib/cli/run.js: const Mocha = require('../mocha'); ... new Mocha(argv); lib/mocha.js: module.exports = Mocha.
    sites = [c for fn in traced["functions"] for c in fn["calls"] if c["callee"] == "new Mocha"]
    assert sites and all(c["resolved"] and c["via"] == "require" for c in sites), sites
    targets = {f["node_id"]: f for f in traced["functions"]}
    assert {targets[c["resolved"]]["name"] for c in sites if c["resolved"] in targets} <= {"Mocha"}


def test_mochas_run_assignment_records_both_candidates() -> None:
    helpers = npm_package(*MOCHA) / "lib" / "cli" / "run-helpers.js"
    found = facts.extract(str(helpers), "javascript", helpers.read_bytes())
    runs = {tuple(a.candidates or ()) for fn in found.functions for a in fn.assignments if a.target == "run"}
    # The source: run = parallel ? watchParallelRun : watchRun; ... run = parallel ? parallelRun : singleRun;
    assert runs == {("watchParallelRun", "watchRun"), ("parallelRun", "singleRun")}
