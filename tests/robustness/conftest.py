"""The robustness suite: compiled native fixtures, and its figures in the terminal summary."""

from __future__ import annotations

from typing import Any

from tests.fixtures.native.native_fixtures import native_fixtures
from tests.robustness import runner

__all__ = ["native_fixtures"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if runner.REPORT:
        terminalreporter.section("rea robustness figures")
        for line in runner.REPORT:
            terminalreporter.write_line(line)
