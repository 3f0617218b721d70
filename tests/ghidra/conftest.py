"""Ghidra tests: a recorded model of a compiled fixture and the fake engine executable that serves it."""

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
from tests.ghidra import recorder

__all__ = ["native_fixtures"]

FAKE = Path(__file__).resolve().parent / "fake_engine.py"


def fake_processes() -> list[int]:
    """Live processes running the fake engine (read from /proc)."""
    return running(FAKE)


@pytest.fixture(scope="session")
def program(native_fixtures: object) -> str:
    """The compiled x86-64 ELF program fixture (program.c)."""
    return native_fixtures.get("elf-x64").path  # type: ignore[attr-defined, no-any-return]


@pytest.fixture(scope="session")
def recorded_model(rea_registry: Registry, program: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorder.write(recorder.record(rea_registry, program), tmp_path_factory.mktemp("ghidra") / "model.json")


@pytest.fixture(scope="session")
def fake_worker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An executable wrapper running the fake engine with this interpreter (REA_GHIDRA_TEST_WORKER's value)."""
    path = tmp_path_factory.mktemp("ghidra-fake") / "fake-ghidra-worker"
    return wrapper(path, FAKE)


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch, fake_worker: Path, recorded_model: Path) -> Iterator[pytest.MonkeyPatch]:
    """The fake engine selected for this test (success mode unless the test sets REA_GHIDRA_TEST_MODE)."""
    monkeypatch.setenv("REA_GHIDRA_TEST_WORKER", str(fake_worker))
    monkeypatch.setenv("REA_GHIDRA_TEST_MODEL", str(recorded_model))
    monkeypatch.setenv("REA_GHIDRA_TEST_MODE", "success")
    yield monkeypatch
    assert fake_processes() == [], "a fake Ghidra worker outlived its test"


@pytest.fixture
def session(fake_env: pytest.MonkeyPatch, rea_registry: Registry) -> Iterator[Session]:
    """A session with the fake engine selectable; closed before fake_env checks that no fake outlived it."""
    with closing_session(rea_registry) as s:
        yield s
