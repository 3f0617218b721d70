"""Every package of the source tree is in the wheel: tox and CI install rea as a wheel, not from the tree."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, name in (("rea", "rea"), ("plugins", "rea_plugins")):
        for dirpath, _dirs, files in os.walk(ROOT / folder):
            if "__init__.py" in files and "__pycache__" not in dirpath:
                rel = os.path.relpath(dirpath, ROOT / folder)
                found.add(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    assert found - listed == set(), "package folders missing from [tool.setuptools] packages"
    assert listed - found == set(), "listed packages without a folder"


def test_every_first_party_plugin_is_an_entry_point() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entry_points = set(config["project"]["entry-points"]["rea"].values())
    plugins = {f"rea_plugins.{p.name}" for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists()}
    assert plugins - entry_points == set(), "plugins that are not registered through the rea entry-point group"


def test_a_plugin_touches_only_the_kernel_not_another_plugin() -> None:
    import re

    offenders = []
    for plugin in sorted(p for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists()):
        for path in plugin.rglob("*.py"):
            for other in re.findall(r"rea_plugins\.([a-z0-9_]+)", path.read_text()):
                if other != plugin.name:
                    offenders.append(f"{path.relative_to(ROOT)} uses rea_plugins.{other}")
    assert offenders == []
