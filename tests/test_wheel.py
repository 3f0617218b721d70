"""The released artifacts work: ``python -m build`` makes an sdist and a wheel, and the wheel installed (not
editable) into a fresh venv runs the main job, finds every first-party plugin through its entry points, and
decompiles. A package folder, a data file or an entry point the wheel lacks fails here, not on a user's machine.

The venv sees this interpreter's site-packages (a ``.pth`` file, which works where the interpreter is itself a
venv and ``--system-site-packages`` would not), so the heavy dependencies are not installed again (a minute in CI
rather than a quarter of an hour); rea itself comes from the wheel, which the test checks by where ``rea`` is
imported from. ``pip check`` then holds the wheel's declared dependencies to what is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
NAME = CONFIG["project"]["name"]
# The version is rea/_version.py's (pyproject's dynamic version reads it).
VERSION = re.search(r'__version__ = "([^"]+)"', (ROOT / "rea" / "_version.py").read_text()).group(1)  # type: ignore[union-attr]
WHEEL_STEM = f"{NAME.replace('-', '_')}-{VERSION}"
# Building in an isolated environment fetches setuptools once; each rea command below takes a few seconds.
BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 180


# Collected and run in every CI run (tox's py313 runs the whole suite): about a minute, most of it the build.
pytestmark = [pytest.mark.wheel, pytest.mark.timeout(BUILD_TIMEOUT_S + 4 * RUN_TIMEOUT_S)]


def _run(
    argv: list[str], *, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT_S, cwd: Path | None = None
) -> str:
    # Never from the checkout: `python -c` puts the working directory first on sys.path, where ./rea would win.
    cwd = cwd or Path(argv[0]).parent
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, check=False)
    assert done.returncode == 0, f"{argv} exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the build frontend is not installed (pip install 'rea-reverse[test]')")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], timeout=BUILD_TIMEOUT_S, cwd=out)
    return out


@pytest.fixture(scope="module")
def venv_python(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(root)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # This interpreter's site-packages (a venv's own, where --system-site-packages would give the base
    # interpreter's) after the new venv's: the dependencies are found there, rea first in the venv. Paths named in
    # a .pth file are added without reading their own .pth files, so an editable rea's finder never loads.
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip()
    outer = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (Path(site) / "outer-site-packages.pth").write_text("".join(f"{p}\n" for p in outer))
    wheel = dist / f"{WHEEL_STEM}-py3-none-any.whl"
    # pip from this interpreter installs into the venv (--python); --no-deps --ignore-installed: rea alone,
    # from the wheel, even though an editable rea of the same version is visible through the system site.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--ignore-installed",
            str(wheel),
        ]
    )
    return python


def _env(python: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_") and k != "PYTHONPATH"}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    # A private cache and annotation store: the installed rea must not read this checkout's manifest.
    env["XDG_CACHE_HOME"] = str(python.parent.parent / "cache")
    env["XDG_DATA_HOME"] = str(python.parent.parent / "data")
    return env


def test_build_makes_an_sdist_and_a_wheel_with_every_package(dist: Path) -> None:
    assert (dist / f"{WHEEL_STEM}.tar.gz").is_file(), sorted(p.name for p in dist.iterdir())
    wheel = dist / f"{WHEEL_STEM}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(f"{WHEEL_STEM}.dist-info/METADATA").decode()
        entry_points = zf.read(f"{WHEEL_STEM}.dist-info/entry_points.txt").decode()
    for package in CONFIG["tool"]["setuptools"]["packages"]:
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    assert {"rea/py.typed", "rea_plugins/py.typed"} <= names
    assert f"{WHEEL_STEM}.dist-info/licenses/LICENSE" in names and f"{WHEEL_STEM}.dist-info/licenses/NOTICE" in names
    assert (
        f"Name: {NAME}" in metadata
        and f"Version: {VERSION}" in metadata
        and "License-Expression: Apache-2.0" in metadata
    )
    assert "rea = rea.cli.main:main" in entry_points
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.startswith(("tests/", "benchmarks/"))]


def test_the_wheel_installs_and_runs_the_main_job(venv_python: Path, hello_elf: Path) -> None:
    env = _env(venv_python)
    where = _run(
        [str(venv_python), "-c", "import rea, rea_plugins; print(rea.__file__); print(rea_plugins.__file__)"], env=env
    )
    purelib = _run([str(venv_python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], env=env).strip()
    for path in where.split():
        assert Path(path).is_relative_to(purelib), f"{path} is not from the wheel installed in {purelib}"
    rea = str(venv_python.parent / "rea")
    version = _run([rea, "--version"], env=env).splitlines()[0]
    # An installed wheel has no checkout beside it: the version alone.
    assert version == f"rea {VERSION}", version
    overview = _run([rea, "analyze", str(hello_elf)], env=env)
    assert "compute" in overview or "elf" in overview.lower(), overview[:2000]


def test_every_first_party_plugin_is_found_through_entry_points(venv_python: Path) -> None:
    env = _env(venv_python)
    report = json.loads(_run([str(venv_python.parent / "rea"), "providers", "list", "--json"], env=env))
    declared = set(CONFIG["project"]["entry-points"]["rea"])
    found = {p["name"]: p for p in report["plugins"]}
    assert declared - set(found) == set(), f"missing: {declared - set(found)}; broken: {report['broken_plugins']}"
    assert all(found[name]["distribution"] == NAME and found[name]["version"] == VERSION for name in declared)
    assert report["broken_plugins"] == [] and report["registry_errors"] == []
    assert "native" in {p["id"] for p in report["providers"]}


def test_the_installed_rea_decompiles(venv_python: Path, hello_elf: Path) -> None:
    if importlib.util.find_spec("flatline") is None:
        pytest.skip(f"flatline is not importable on Python {sysconfig.get_python_version()} (it needs 3.13)")
    env = _env(venv_python)
    out = _run([str(venv_python.parent / "rea"), "procedure-pseudo-code", str(hello_elf), "compute", "--json"], env=env)
    text = json.dumps(json.loads(out))
    assert "helper_add" in text, text[:2000]


def test_the_wheels_dependencies_are_installed(venv_python: Path) -> None:
    # pip check reads every distribution the venv sees; only rea-reverse's own requirements are the wheel's.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv_python), "check"],
        cwd=venv_python.parent,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    mine = [line for line in done.stdout.splitlines() if line.lower().startswith((NAME, NAME.replace("-", "_")))]
    assert mine == [], done.stdout
