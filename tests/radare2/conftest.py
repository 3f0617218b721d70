"""Fixtures for the radare2 provider tests: the compiled native fixtures and one shared radare2 worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea_plugins.radare2.options import library_dir
from tests.engine_lifecycle import shared_session
from tests.fixtures.native.native_fixtures import native_fixtures

__all__ = ["native_fixtures"]


def require_radare2() -> None:
    if library_dir() is None:
        pytest.skip("radare2 is not installed (pip install 'rea-reverse[radare2]')")


@pytest.fixture(scope="module")
def r2_session(rea_registry: Registry, native_fixtures: Any) -> Iterator[Session]:
    """One session (so one radare2 worker) on the symbolized x86-64 ELF fixture, shared by a test module."""
    require_radare2()
    with shared_session(rea_registry, native_fixtures.get("elf-x64").path, "radare2") as session:
        yield session
