"""The Apple tests' fixtures: everything applefixtures builds, once per session."""

from __future__ import annotations

import pytest

from tests.apple import applefixtures


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> applefixtures.Built:
    return applefixtures.build(tmp_path_factory.mktemp("apple"))


@pytest.fixture(scope="session")
def signed_pe(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, ...]:
    return applefixtures.signed_pe(tmp_path_factory.mktemp("authenticode"))
