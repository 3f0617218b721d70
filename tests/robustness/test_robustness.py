"""Issue 17's robustness suite: 2,000+ mutated binaries and 500+ hostile archives through one ``rea serve``.

One module-scoped run drives the whole corpus (tests/robustness/corpus.py) and records every violation;
each test below asserts one property over that run, so a failure names exactly what remains. The figures
(cases, outcomes by error code, peak RSS, seconds) are printed in the terminal summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.native.native_fixtures import FixtureSet
from tests.robustness import corpus
from tests.robustness import runner
from tests.robustness.runner import Finding
from tests.robustness.runner import Run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(native_fixtures: FixtureSet, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root, cases = corpus.load(native_fixtures)
    result = runner.run_all(cases, tmp_path_factory.mktemp("robustness"), root)
    runner.REPORT[:] = runner.figures(result)
    return result


def _show(findings: list[Finding], limit: int = 40) -> str:
    more = f"\n  ... and {len(findings) - limit} more" if len(findings) > limit else ""
    return f"{len(findings)} found:\n  " + "\n  ".join(map(str, findings[:limit])) + more


def test_the_corpus_is_large_and_covers_every_format(run: Run) -> None:
    assert run.cases["binary"] >= 2000 and run.cases["archive"] >= 500, run.cases
    bases = set(corpus.BASES)
    assert {"elf-x64", "elf-arm64", "pe-x64-exe", "macho-x64", "macho-arm64", "macho-fat"} <= bases
    # Both sides are exercised: some inputs are analysed, some refused.
    for kind in ("binary", "archive"):
        outcomes = {code for (k, code), _ in run.outcomes.items() if k == kind}
        assert "ok" in outcomes and len(outcomes) > 2, (kind, outcomes)


def test_no_crash_and_no_hang(run: Run) -> None:
    found = run.of("crash") + run.of("hang")
    assert not found, _show(found)
    assert run.restarts == 0


def test_every_error_is_canonical(run: Run) -> None:
    assert not run.of("untyped"), _show(run.of("untyped"))


def test_artifact_messages_name_no_python_exception(run: Run) -> None:
    assert not run.of("exception_name_artifacts"), _show(run.of("exception_name_artifacts"))


def test_native_messages_name_no_python_exception(run: Run) -> None:
    # Kept apart from the artifact check: these messages come from rea_plugins/native (its owner fixes them).
    assert not run.of("exception_name_native"), _show(run.of("exception_name_native"))


def test_nothing_is_written_outside_output_directories(run: Run) -> None:
    assert not run.of("outside"), _show(run.of("outside"))


def test_no_process_outlives_its_case_or_the_server(run: Run) -> None:
    assert not run.of("processes"), _show(run.of("processes"))


def test_exception_name_pattern() -> None:
    for text in (
        "TypeError: startswith first arg must be bytes",
        "UnicodeDecodeError: 'utf-8' codec",
        "[Errno 22] Invalid argument",
        "Traceback (most recent call last)",
        "BadZipFile",
        "'utf-8' codec can't decode byte 0x98 in position 3",
        "string index out of range",
    ):
        assert runner.EXCEPTION_NAME.search(text), text
    for text in (
        "malformed ZIP archive: truncated central directory",
        "program header table extends past end of file",
        "Error -3 while decompressing",
    ):
        assert not runner.EXCEPTION_NAME.search(text), text


def test_error_shape_check() -> None:
    good = {
        "error": {
            "code": "truncated",
            "category": "truncated",
            "message": "m",
            "retryable": False,
            "remediation": {"action": "a"},
            "details": {},
        }
    }
    assert runner.untyped(good) is None
    assert runner.untyped({"error": {**good["error"], "code": "oops"}}) == "unknown code 'oops'"
    assert runner.untyped({"error": {**good["error"], "retryable": True}}) is not None
    assert runner.untyped({"message": "x"}) is not None
    assert Path(runner.__file__).exists()


def test_issue24_bombs_are_in_the_corpus_and_answered(run: Run) -> None:
    # Entries past the limit, a bzip2 expansion, overlapping entries, a large nested ZIP, endless gzip, a
    # sparse tar: each call answers.
    assert run.cases["issue24"] == 7, run.cases
    assert not {"hang", "crash", "rpc_error"} & set(run.issue24), run.issue24
    assert run.issue24["resource_constraint"] >= 4 and run.issue24["artifact_operation_failed"] >= 2, run.issue24
