"""Shared fixtures: small native programs compiled from C source in the test session, the installed plugins'
registry per module, an empty home folder and a fresh annotation store."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

from rea import registry as registry_mod
from rea.registry import Registry
from tests import toolchains

# CI draws the same examples on every run (a fresh clone has no example database), so a landing is judged on what it
# changed, not on what Hypothesis happened to draw; a developer's run keeps exploring at random. No deadline: speed is
# the benchmarks' to judge, and a loaded CI machine (or a cold first import) must not fail a property that holds.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

HELLO_C = r"""
#include <stdio.h>
#include <string.h>

static const char *GREETING = "rea-fixture-greeting";

int helper_add(int a, int b) { return a + b; }

int compute(int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total = helper_add(total, i);
    return total;
}

int main(int argc, char **argv) {
    printf("%s %d\n", GREETING, compute(argc + 3));
    return (int)strlen(argv[0]) & 1;
}
"""


def pytest_configure(config: pytest.Config) -> None:
    """User data and caches (annotations, the analysis cache) go to a private folder, never the real home."""
    import tempfile

    root = tempfile.mkdtemp(prefix="rea-tests-xdg-")
    config.stash[_XDG_ROOT] = root
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache")):
        os.environ[var] = os.path.join(root, sub)
        os.makedirs(os.environ[var], exist_ok=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    root = config.stash.get(_XDG_ROOT, None)
    if root:
        shutil.rmtree(root, ignore_errors=True)


_XDG_ROOT = pytest.StashKey[str]()


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The registry of every installed plugin, loaded once per module (a module may define its own)."""
    return registry_mod.load()


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh annotation store; the setting points there too, so nothing reaches the real home."""
    path = tmp_path / "annotations"
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(path))
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty folder to stand for a user's home."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compiled")


@pytest.fixture(scope="session")
def hello_elf(fixture_dir: Path) -> Path:
    """An x86-64 (host) ELF with symbols, compiled with gcc now."""
    gcc = toolchains.require("gcc")
    src = fixture_dir / "hello.c"
    src.write_text(HELLO_C)
    out = fixture_dir / "hello"
    subprocess.run([gcc, "-O0", "-g", "-o", str(out), str(src)], check=True, capture_output=True)
    return out


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Remove rea's environment settings so tests start from defaults."""
    for key in list(os.environ):
        if key.startswith("REA_"):
            monkeypatch.delenv(key)
    return monkeypatch
