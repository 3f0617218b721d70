"""Every package of the source tree is in the wheel: tox and CI install rea as a wheel, not from the tree."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for name in ("rea", "rea_plugins"):
        for dirpath, _dirs, files in os.walk(ROOT / name):
            if "__init__.py" in files and "__pycache__" not in dirpath:
                rel = os.path.relpath(dirpath, ROOT / name)
                found.add(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    assert found - listed == set(), "package folders missing from [tool.setuptools] packages"
    assert listed - found == set(), "listed packages without a folder"
    # A package is imported by its folder's name: no mapping for an editable install, mypy or a reader to follow.
    assert "package-dir" not in config["tool"]["setuptools"]


def test_every_first_party_plugin_is_an_entry_point() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entry_points = set(config["project"]["entry-points"]["rea"].values())
    plugins = {f"rea_plugins.{p.name}" for p in (ROOT / "rea_plugins").iterdir() if (p / "__init__.py").exists()}
    assert plugins - entry_points == set(), "plugins that are not registered through the rea entry-point group"


def test_a_plugin_touches_only_the_kernel_not_another_plugin() -> None:
    import re

    offenders = []
    for plugin in sorted(p for p in (ROOT / "rea_plugins").iterdir() if (p / "__init__.py").exists()):
        for path in plugin.rglob("*.py"):
            for other in re.findall(r"rea_plugins\.([a-z0-9_]+)", path.read_text()):
                if other != plugin.name:
                    offenders.append(f"{path.relative_to(ROOT)} uses rea_plugins.{other}")
    assert offenders == []


def test_the_version_is_the_distributions_and_pyprojects() -> None:
    from importlib import metadata

    import rea

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["name"] == rea.DISTRIBUTION
    # One source: the build reads rea/_version.py (pyproject's dynamic version), as rea does at run time.
    assert config["project"]["dynamic"] == ["version"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rea._version.__version__"}
    assert metadata.version(rea.DISTRIBUTION) == rea.__version__
    # Every self-reference of an extra names the distribution, not the unrelated `rea` of the registry.
    for extra, requirements in config["project"]["optional-dependencies"].items():
        assert not [r for r in requirements if r.startswith("rea[")], extra


def test_the_release_files_exist() -> None:
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()
    notice = (ROOT / "NOTICE").read_text()
    for engine in ("Ghidra", "LIEF", "Capstone", "angr", "radare2", "androguard", "dnfile", "yara-python"):
        assert engine in notice, engine
    changelog = (ROOT / "CHANGELOG.md").read_text()
    import rea

    version = rea.__version__
    assert "## [Unreleased]" in changelog and f"## [{version}]" in changelog


def _git_dir(root: Path, head: str) -> Path:
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text(head)
    return git


def test_checkout_commit_reads_head_and_its_ref(tmp_path: Path) -> None:
    from rea.cli.main import checkout_commit

    sha = "0123456789abcdef0123456789abcdef01234567"
    loose = tmp_path / "loose"
    (_git_dir(loose, "ref: refs/heads/main\n") / "refs" / "heads" / "main").write_text(sha + "\n")
    assert checkout_commit(str(loose)) == sha[:12]
    packed = tmp_path / "packed"
    (_git_dir(packed, "ref: refs/heads/main\n") / "packed-refs").write_text(
        f"# pack-refs with: peeled fully-peeled sorted\n{sha} refs/heads/main\n"
    )
    assert checkout_commit(str(packed)) == sha[:12]
    detached = tmp_path / "detached"
    _git_dir(detached, sha + "\n")
    assert checkout_commit(str(detached)) == sha[:12]
    # A worktree: .git is a file naming its git directory, whose commondir holds the refs.
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    private = loose / ".git" / "worktrees" / "w"
    private.mkdir(parents=True)
    (private / "HEAD").write_text("ref: refs/heads/main\n")
    (private / "commondir").write_text("../..\n")
    (worktree / ".git").write_text(f"gitdir: {private}\n")
    assert checkout_commit(str(worktree)) == sha[:12]
    assert checkout_commit(str(tmp_path / "nothing")) is None
    unborn = tmp_path / "unborn"
    _git_dir(unborn, "ref: refs/heads/main\n")
    assert checkout_commit(str(unborn)) is None


def test_version_names_the_commit_from_a_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    from rea.cli.main import checkout_commit
    from rea.cli.main import main

    assert main(["--version"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    commit = checkout_commit(str(ROOT))
    if (ROOT / ".git").exists():
        assert commit is not None and first.endswith(f"(git {commit})"), first
    else:
        assert commit is None and first.startswith("rea ") and "git" not in first


def test_remediations_and_docs_name_the_distribution() -> None:
    # `pip install 'rea[angr]'` installs the registry's unrelated `rea`: every install hint names rea-reverse.
    import re

    offenders = []
    paths = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    for folder in ("rea", "rea_plugins", "docs", "contrib"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".toml", ".json")]
    for path in paths:
        text = path.read_text(errors="replace")
        for m in re.finditer(r"pip install (?:--?[\w-]+ )*['\"]?rea(?:\[|['\"\s`]|$)", text, re.MULTILINE):
            offenders.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert offenders == []
