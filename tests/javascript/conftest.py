"""Fixtures for the JavaScript application tests: apps built with esbuild once per session, and analyses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import appfixtures
import minified
import pytest
from jssupport import analyze

from rea.evidence import Evidence
from rea.registry import Registry
from rea.session import Session
from tests import toolchains


@pytest.fixture(scope="session")
def npm_tools() -> None:
    toolchains.require_all(("node", "npm"))
    reason = appfixtures.install_npm_tools()
    if reason is not None:
        toolchains.unavailable(reason)


@pytest.fixture(scope="session")
def app_v1(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return appfixtures.build_app(tmp_path_factory.mktemp("app-v1"), appfixtures.V1_SOURCES)


@pytest.fixture(scope="session")
def app_v2(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return appfixtures.build_app(tmp_path_factory.mktemp("app-v2"), appfixtures.V2_SOURCES)


@pytest.fixture(scope="session")
def broken_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return appfixtures.build_broken(tmp_path_factory.mktemp("broken"))


@pytest.fixture(scope="session")
def analysis_session(rea_registry: Registry) -> Iterator[Session]:
    """One session for analyses shared by many tests (tests copy records into their own ledger)."""
    session = Session(rea_registry)
    yield session
    session.close()


@pytest.fixture(scope="session")
def ev_v1(analysis_session: Session, app_v1: Path) -> Evidence:
    return analyze(analysis_session, app_v1)


@pytest.fixture(scope="session")
def ev_v2(analysis_session: Session, app_v2: Path) -> Evidence:
    return analyze(analysis_session, app_v2)


@pytest.fixture(scope="session")
def ev_broken(analysis_session: Session, broken_app: Path) -> Evidence:
    return analyze(analysis_session, broken_app)


@pytest.fixture(scope="session")
def page_v1(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A page bundle minified for whitespace and syntax (names kept), with its source map."""
    return minified.build_v1(tmp_path_factory.mktemp("page-v1"))


@pytest.fixture(scope="session")
def page_v2(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The next version, minified wholly (names mangled), with its source map."""
    return minified.build_v2(tmp_path_factory.mktemp("page-v2"))


@pytest.fixture(scope="session")
def page_v2_without_map(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minified.build_v2_without_map(tmp_path_factory.mktemp("page-v2-nomap"))
