"""Crash fixtures: the crashing program built with gcc and its core, once per session."""

from __future__ import annotations

from pathlib import Path

import crashfixtures
import pytest

from tests import toolchains


@pytest.fixture(scope="session")
def crash_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("crash")
    program = crashfixtures.build(toolchains.require("gcc"), out)
    core = crashfixtures.kernel_core(program, out)
    if core is None:
        core = crashfixtures.debugger_core(toolchains.require("gdb"), program, out)
    return {"program": program, "core": core}
