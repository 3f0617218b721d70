"""Hopper tests: the fake launcher (an executable wrapper) and a session that may select it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import closing_session
from tests.fake_engines import running
from tests.fake_engines import wrapper
from tests.fixtures.native.native_fixtures import native_fixtures

__all__ = ["native_fixtures"]

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_hopper.py"


def fake_processes() -> list[int]:
    """Live processes running the fake launcher (read from /proc)."""
    return running(FAKE)


@pytest.fixture(scope="session")
def target(native_fixtures: object) -> str:
    return native_fixtures.get("elf-x64").path  # type: ignore[attr-defined, no-any-return]


@pytest.fixture(scope="session")
def fake_launcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hopper-fake") / "hopper"
    return wrapper(path, FAKE)


@pytest.fixture
def hopper_env(monkeypatch: pytest.MonkeyPatch, fake_launcher: Path) -> Iterator[pytest.MonkeyPatch]:
    """The fake launcher selected, on any host (acknowledge mode unless the test sets REA_HOPPER_TEST_MODE)."""
    monkeypatch.setenv("REA_HOPPER_TEST_ANY_HOST", "1")
    monkeypatch.setenv("HOPPER_LAUNCHER_PATH", str(fake_launcher))
    monkeypatch.setenv("REA_HOPPER_TEST_MODE", "acknowledge")
    yield monkeypatch
    assert fake_processes() == [], "a fake Hopper outlived its test"


@pytest.fixture
def session(hopper_env: pytest.MonkeyPatch, rea_registry: Registry) -> Iterator[Session]:
    with closing_session(rea_registry) as s:
        yield s
