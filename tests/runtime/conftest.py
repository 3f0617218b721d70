"""Fixtures for the V8 inspector tests: the Node program (one file bundled by esbuild with a source map) built once
per session, and the Node processes a test starts."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import toolchains
from tests.javascript import appfixtures
from tests.runtime.nodeapp import FEATURE
from tests.runtime.nodeapp import HELPER
from tests.runtime.nodeapp import MAIN
from tests.runtime.nodeapp import PACKAGE
from tests.runtime.nodeapp import PLUGIN
from tests.runtime.nodeapp import UNUSED
from tests.runtime.nodeapp import UTIL
from tests.runtime.nodeapp import Inspected
from tests.runtime.nodeapp import write


@pytest.fixture(scope="session")
def node_path() -> str:
    return toolchains.require("node")


@pytest.fixture(scope="session")
def node_app(node_path: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program: main.js, lib/util.js, lib/unused.js (never required), plugins/early.js, and dist/feature.js,
    esbuild's bundle of src/feature.js and src/helper.js with its external source map."""
    toolchains.require("npm")
    reason = appfixtures.install_npm_tools()
    if reason is not None:
        toolchains.unavailable(reason)
    root = tmp_path_factory.mktemp("node-app")
    write(
        root,
        {
            "package.json": PACKAGE,
            "main.js": MAIN,
            "lib/util.js": UTIL,
            "lib/unused.js": UNUSED,
            "plugins/early.js": PLUGIN,
            "src/feature.js": FEATURE,
            "src/helper.js": HELPER,
        },
    )
    subprocess.run(
        [
            str(appfixtures.esbuild_tool("esbuild")),
            "src/feature.js",
            "--bundle",
            "--platform=node",
            "--format=cjs",
            "--sourcemap",
            "--outfile=dist/feature.js",
            "--log-level=error",
        ],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return root


@pytest.fixture
def inspected(node_path: str) -> Iterator[list[Inspected]]:
    """Start Node programs with ``inspected.append(Inspected(node, script))``; each ends with the test."""
    started: list[Inspected] = []
    yield started
    for one in started:
        one.close()
