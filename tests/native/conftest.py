"""Native provider tests: shared compiled fixtures (tests/fixtures/native) and a session on the x86-64 ELF."""

from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests.fixtures.native.native_fixtures import native_fixtures

__all__ = ["native_fixtures"]


@pytest.fixture
def native(rea_registry: Registry, native_fixtures: Any) -> Iterator[Session]:
    """A session with the symbolized x86-64 ELF fixture open on the native provider, closed after the test."""
    session = Session(rea_registry)
    result_of(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
    try:
        yield session
    finally:
        session.close()
