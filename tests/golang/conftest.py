"""Go fixtures: one program built with Debian's Go for Linux (with and without symbols), Windows and macOS."""

from __future__ import annotations

from pathlib import Path

import gofixtures
import pytest

from tests import toolchains


@pytest.fixture(scope="session")
def go_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return gofixtures.build(toolchains.require("go"), tmp_path_factory.mktemp("golang"))
