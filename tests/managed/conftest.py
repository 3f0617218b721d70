"""Managed fixtures: C# compiled with mcs and a C library with gcc, once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import csfixtures as csharp
import pytest

from rea.registry import Registry
from rea.session import Session
from tests import toolchains


@pytest.fixture(scope="session")
def managed_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    mcs = toolchains.require("mcs")
    gcc = toolchains.require("gcc")
    return csharp.build_all(mcs, gcc, tmp_path_factory.mktemp("managed"))


@pytest.fixture(scope="session")
def managed_session(rea_registry: Registry) -> Iterator[Session]:
    session = Session(rea_registry)
    yield session
    session.close()
