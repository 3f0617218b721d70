"""Fixtures for the contrib tests: the example plugin installed from its source, and a plugin that raises."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from contrib_support import EXAMPLE_DIST
from contrib_support import EXAMPLE_SRC
from contrib_support import TOY_SOURCE
from contrib_support import write_broken_plugin


def _installed() -> bool:
    try:
        metadata.distribution(EXAMPLE_DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="session")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Install the example plugin with pip (into a private target dir) unless it is installed already.

    Returns the directory to put on ``sys.path``/``PYTHONPATH``, or None when the environment has it.
    A target dir leaves the shared environment as it was for the suites that run beside this one.
    """
    if _installed():
        return None
    base = tmp_path_factory.mktemp("example-plugin")
    # Building from a copy keeps build/ and *.egg-info out of the source tree.
    src = base / "src"
    shutil.copytree(EXAMPLE_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = base / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(site),
            str(src),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"pip could not install {EXAMPLE_DIST}:\n{proc.stdout}\n{proc.stderr}")
    return site


@pytest.fixture
def example_on_path(example_site: Path | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The example plugin importable and visible to entry-point discovery in this process."""
    if example_site is not None:
        monkeypatch.syspath_prepend(str(example_site))
        # The plugin's worker process imports it too.
        monkeypatch.setenv(
            "PYTHONPATH", os.pathsep.join(filter(None, [str(example_site), os.environ.get("PYTHONPATH")]))
        )
    yield
    sys.modules.pop("rea_example_provider", None)


@pytest.fixture
def toy_file(tmp_path: Path) -> Path:
    path = tmp_path / "program.toy"
    path.write_text(TOY_SOURCE, encoding="utf-8")
    return path


@pytest.fixture
def broken_plugin_dir(tmp_path: Path) -> Path:
    return write_broken_plugin(tmp_path / "broken-site")
