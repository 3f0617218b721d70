"""Investigation tests: the compiled native fixtures, and a store directory of their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea import evidence as ev_mod
from rea.evidence import Digest
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.registry import Registry
from rea.session import Session
from tests.fixtures.native.native_fixtures import FixtureSet
from tests.fixtures.native.native_fixtures import native_fixtures
from tests.notebook.conftest import open_session

__all__ = ["native_fixtures"]

PEER = ProviderIdentity(id="peer", name="test peer", version="1")


@pytest.fixture
def stripped(native_fixtures: FixtureSet) -> str:
    return native_fixtures.get("elf-x64-stripped").path


@pytest.fixture
def session(rea_registry: Registry, store_dir: Path, stripped: str) -> Iterator[Session]:
    s = open_session(rea_registry, store_dir, stripped)
    try:
        yield s
    finally:
        s.close()


def subject(sha: str, name: str = "app") -> Subject:
    return Subject(
        name=name, local_path=f"/x/{name}", digest=Digest(sha256=sha), size=1, format="elf", architecture="x86_64"
    )


def record(
    operation: str, result: Any, *, sha: str | None = "a" * 64, links: list[str] | None = None, **kw: Any
) -> Evidence:
    return ev_mod.build(
        operation=operation,
        provider=PEER,
        subject=None if sha is None else subject(sha),
        analysis_profile=None,
        parameters=kw.pop("parameters", {}),
        normalized_result=result,
        evidence_links=links,
        **kw,
    )


def function(address: str, name: str, callees: list[str], sha: str = "a" * 64) -> Evidence:
    return record(
        "analyze_function",
        {"procedure": {"address": address, "name": name}, "callees": [{"address": c, "name": None} for c in callees]},
        sha=sha,
        parameters={"procedure": name},
    )
