"""The tools the tests run are installed by scripts/system-deps, by package name."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests import toolchains

ROOT = Path(__file__).resolve().parents[1]


def test_every_tool_package_is_installed_by_system_deps() -> None:
    listed = toolchains.listed_packages()
    needed = {p for tool in toolchains.TOOLS.values() for p in tool.packages}
    assert needed - listed == set(), "scripts/system-packages.txt lacks packages that tests/toolchains.py needs"


def test_arm64_cross_libc_is_listed_because_no_install_recommends_drops_it() -> None:
    assert "libc6-dev-arm64-cross" in toolchains.TOOLS["aarch64-linux-gnu-gcc"].packages


def _literal_commands(path: Path) -> set[str]:
    """First elements of list literals passed to subprocess calls (the executables a file runs)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "subprocess"
            and node.args
            and isinstance(node.args[0], ast.List)
            and node.args[0].elts
        ):
            first = node.args[0].elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return found


def test_every_literal_host_tool_in_tests_and_benchmarks_is_mapped_to_a_package() -> None:
    known = {c for tool in toolchains.TOOLS.values() for c in tool.commands}
    unmapped = {}
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if ".fixtures" in path.parts:
                continue
            for command in _literal_commands(path):
                if "/" not in command and command not in known:
                    unmapped.setdefault(command, []).append(str(path.relative_to(ROOT)))
    assert unmapped == {}, "host tools run without a package in tests/toolchains.py"


def test_a_missing_tool_skips_naming_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(toolchains.TOOLS, "absent-cc", toolchains.Tool(("rea-no-such-cc",), ("gcc-absent",), "link"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"gcc-absent.*scripts/system-deps"):
        toolchains.require("absent-cc")


def test_a_missing_tool_fails_under_ci_on_debian(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(toolchains.TOOLS, "absent-cc", toolchains.Tool(("rea-no-such-cc",), ("gcc-absent",), "link"))
    monkeypatch.setenv("CI", "true")
    fake_apt = tmp_path / "apt-get"
    fake_apt.write_text("#!/bin/sh\nexit 0\n")
    fake_apt.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(pytest.fail.Exception, match="gcc-absent"):
        toolchains.require("absent-cc")


def test_a_compiler_that_cannot_link_is_unusable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    broken = tmp_path / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'cannot find Scrt1.o: No such file or directory' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setitem(toolchains.TOOLS, "broken-cc", toolchains.Tool((str(broken),), ("libc-absent-dev",), "link"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"Scrt1\.o.*libc-absent-dev"):
        toolchains.require("broken-cc")
