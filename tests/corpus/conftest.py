"""Corpus fixtures: binaries compiled in the session, and a helper that runs a corpus tool in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import corpussupport
import msgspec
import pytest

from rea.catalog.invoke import invoke
from rea.context import CallContext
from rea.registry import Registry
from rea.session import Session


@pytest.fixture(scope="session")
def corpus_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return corpussupport.build_corpus(tmp_path_factory.mktemp("corpus"))


class Runner:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def __call__(self, tool: str, args: dict[str, Any], ctx: CallContext | None = None) -> dict[str, Any]:
        session = Session(self.registry)
        try:
            result = invoke(session, self.registry.tools[tool], args, ctx or CallContext())
            assert result.evidence is not None
            out: dict[str, Any] = msgspec.to_builtins(result.evidence)
            return out
        finally:
            session.close()


@pytest.fixture(scope="session")
def run_tool(rea_registry: Registry) -> Runner:
    return Runner(rea_registry)


@pytest.fixture(scope="session")
def triaged(corpus_build: dict[str, Any], run_tool: Runner, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus triaged once with the local scheduler (two workers)."""
    index: Path = tmp_path_factory.mktemp("index") / "corpus.db"
    ev = run_tool("triage_corpus", {"paths": [str(corpus_build["root"])], "index": str(index), "workers": 2})
    return {"index": index, "evidence": ev, "result": ev["normalized_result"], **corpus_build}
