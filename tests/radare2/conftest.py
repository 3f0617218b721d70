"""Fixtures for the radare2 provider tests: the compiled native fixtures and one shared radare2 worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool, result_of
from rea_plugins.radare2.options import library_dir
from tests.fixtures.native.native_fixtures import native_fixtures
from tests.radare2.r2_support import owned_alive, worker_pid

__all__ = ["native_fixtures"]


def require_radare2() -> None:
    if library_dir() is None:
        pytest.skip("radare2 is not installed (pip install 'rea-reverse[radare2]')")


@pytest.fixture(scope="module")
def r2_session(rea_registry: Registry, native_fixtures: Any) -> Iterator[Session]:
    """One session (so one radare2 worker) on the symbolized x86-64 ELF fixture, shared by a test module."""
    require_radare2()
    session = Session(rea_registry)
    call_tool(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "radare2"})
    try:
        yield session
    finally:
        pid = worker_pid(session)
        closed = result_of(session, "close_binary", {})
        assert closed["cleanup"] == "complete" and closed["closed"] is True
        assert pid is None or not owned_alive(pid)
