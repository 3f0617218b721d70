"""Notebook tests: the compiled native fixtures and an annotation store in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rea.annotations import AnnotationStore
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.fixtures.native.native_fixtures import FixtureSet
from tests.fixtures.native.native_fixtures import native_fixtures

__all__ = ["native_fixtures"]


@pytest.fixture
def elf(native_fixtures: FixtureSet) -> str:
    return native_fixtures.get("elf-x64").path


def open_session(registry: Registry, store: Path, path: str | None, provider: str = "native") -> Session:
    """A session whose annotations live in ``store``, with ``path`` open on ``provider`` (nothing open for None)."""
    session = Session(registry, annotations=AnnotationStore(str(store)))
    if path is not None:
        result_of(session, "open_binary", {"path": path, "provider_id": provider})
    return session


@pytest.fixture
def native(rea_registry: Registry, store_dir: Path, elf: str) -> Iterator[Session]:
    """A session on the x86-64 ELF fixture (program.c, -O2, with symbols) over the native provider."""
    session = open_session(rea_registry, store_dir, elf)
    try:
        yield session
    finally:
        session.close()
