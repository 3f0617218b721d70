"""The SQLite fixture: sqlitefixtures.build once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlitefixtures import build


@pytest.fixture(scope="session")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("sqlite"))
