"""Fixtures for the angr provider tests: a small C program compiled now, and one shared angr worker."""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rea.registry import Registry
from rea.session import Session
from tests import toolchains
from tests.angr.angr_support import PROGRAM_C
from tests.engine_lifecycle import shared_session


def _require_angr() -> None:
    if importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")


@pytest.fixture(scope="session")
def angr_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The program built non-PIE (with debug info) and PIE, with gcc, now."""
    gcc = toolchains.require("gcc")
    toolchains.require("nm")
    _require_angr()
    out = tmp_path_factory.mktemp("angr-programs")
    src = out / "program.c"
    src.write_text(PROGRAM_C)
    builds = {"nopie": ["-O1", "-g", "-fno-pie", "-no-pie"], "pie": ["-O1", "-fpie", "-pie"]}
    paths = {}
    for name, flags in builds.items():
        path = out / f"program-{name}"
        subprocess.run([gcc, *flags, "-o", str(path), str(src)], check=True, capture_output=True)
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def angr_session(rea_registry: Registry, angr_programs: dict[str, Path]) -> Iterator[Session]:
    """One session (so one angr worker) on the non-PIE program, shared by a test module."""
    with shared_session(rea_registry, angr_programs["nopie"], "angr") as session:
        yield session
