"""The robustness suite: compiled native fixtures, a session per module, and its figures in the terminal summary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from tests.fixtures.native.native_fixtures import native_fixtures
from tests.robustness import runner

__all__ = ["native_fixtures"]


@pytest.fixture(scope="module")
def session(rea_registry: Registry) -> Iterator[Session]:
    """One in-process session for a module's hostile calls, closed after its last test."""
    s = Session(rea_registry)
    yield s
    s.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if runner.REPORT:
        terminalreporter.section("rea robustness figures")
        for line in runner.REPORT:
            terminalreporter.write_line(line)
