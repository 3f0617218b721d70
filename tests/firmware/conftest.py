"""The firmware fixture: fwfixtures.assemble once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from fwfixtures import assemble


@pytest.fixture(scope="session")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return assemble(tmp_path_factory.mktemp("firmware"))
