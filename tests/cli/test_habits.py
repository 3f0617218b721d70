"""The CLI's habits: every --help works, shell completion from the parsers, bare text for number-or-text flags,
a progress bar with total and ETA, NO_COLOR, -v/--log-file, and --render through Graphviz."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rea.cli import tools as cli_tools
from rea.cli.completion import builtin_parser
from rea.cli.completion import tool_parsers
from rea.cli.main import _builtin_handlers
from rea.cli.main import main
from rea.errors import ReaError
from rea.registry import Registry
from rea.registry import default_registry
from tests import toolchains
from tests.fixtures.native.native_fixtures import native_fixtures
from tests.mcp.harness import server_env
from tests.native.test_native_progress import library_source

__all__ = ["native_fixtures"]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return default_registry()


def rea(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args],
        capture_output=True,
        text=True,
        env=server_env(REA_CACHE_DIR=str(cache), COLUMNS="160", **env),
        timeout=300,
    )


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``rea ARGV --help`` in this process: exit status 0 and the help text."""
    try:
        status = main([*argv, "--help"])
    except SystemExit as done:
        status = int(done.code or 0)
    out = capsys.readouterr().out
    assert status == 0, (argv, out)
    return out


def test_every_command_answers_help(registry: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    """A walk over every command: built-ins, every tool command and every group (rea corpus --help once failed)."""
    commands: list[list[str]] = [[name] for name in _builtin_handlers()]
    groups: set[str] = set()
    for group, command, _parser in tool_parsers(registry):
        commands.append([group, command] if group else [command])
        if group:
            groups.add(group)
    commands += [[g] for g in sorted(groups)]
    assert {"corpus"} <= groups and len(commands) > 100
    for argv in commands:
        text = _help(argv, capsys)
        assert text.startswith("usage: rea " + " ".join(argv)), argv
    assert main(["corpus"]) == 2  # a group without its command: the group's help, as a usage error
    assert "triage" in capsys.readouterr().out


def test_completion_is_generated_from_the_parsers(registry: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    # Built-ins, tool commands, a group's commands and a tool's flags are all in it.
    for word in ("completion", "analyze", "list-procedures", "get-call-graph", "triage", "--max-nodes", "--render"):
        assert word in script, word
    bash = shutil.which("bash")
    assert bash is not None
    checked = subprocess.run([bash, "-n"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # Completing `rea corpus t` in bash offers triage, from the script itself.
    probe = script + '\nCOMP_WORDS=(rea corpus t); COMP_CWORD=2; _shtab_rea; echo "${COMPREPLY[@]}"\n'
    offered = subprocess.run([bash, "-c", probe], capture_output=True, text=True)
    assert offered.stdout.split() == ["triage"], offered.stderr
    assert main(["completion", "zsh"]) == 0
    assert capsys.readouterr().out.startswith("#compdef rea")
    with pytest.raises(ReaError):
        builtin_parser("completion", _builtin_handlers()["completion"]).parse_args(["fish"])


def test_a_number_or_text_flag_takes_bare_text(registry: Registry) -> None:
    tool = registry.tools["search_immediates"]
    parser = cli_tools.build_parser(tool, "rea")
    for given, expected in (("0x428a2f98", "0x428a2f98"), ("-14", -14), ("42", 42), ('"0x10"', "0x10")):
        args = cli_tools.collect_arguments(tool, parser.parse_args(["bin", "--value", given]))
        assert args["value"] == expected, given


def test_progress_bar_with_total_and_eta_and_no_color(tmp_path: Path) -> None:
    """A long open's index progress (the updates MCP clients get) drawn as a bar on stderr; NO_COLOR has none."""
    gcc = toolchains.require("gcc")
    src = tmp_path / "large.s"
    src.write_text(library_source(24_000))
    lib = tmp_path / "liblarge.so"
    subprocess.run([gcc, "-shared", "-s", "-nostdlib", "-o", str(lib), str(src)], check=True, capture_output=True)
    out = rea("binary-overview", str(lib), "--json", cache=tmp_path / "cache", REA_PROGRESS="always", NO_COLOR="1")
    assert out.returncode == 0, out.stderr
    assert '"evidence_id"' in out.stdout  # stdout holds the result alone
    frames = out.stderr
    counts = re.findall(r"(\d+)/(\d+) \d:\d\d:\d\d ETA", frames)
    assert counts, frames[-2000:]
    assert any(0 < int(done) < int(total) for done, total in counts)
    assert not re.search(r"\x1b\[[0-9;]*(3[0-9]|9[0-7]|38;)[0-9;]*m", frames)  # no colour under NO_COLOR
    coloured = rea("binary-overview", str(lib), "--json", cache=tmp_path / "cache2", REA_PROGRESS="always")
    assert re.search(r"\x1b\[[0-9;]*(3[0-9]|9[0-7])m", coloured.stderr)
    piped = rea("binary-overview", str(lib), "--json", cache=tmp_path / "cache3")
    assert "ETA" not in piped.stderr  # not a terminal: no bar frames in a log


def test_verbose_log_file_and_its_errors(native_fixtures: Any, tmp_path: Path) -> None:
    binary = native_fixtures.get("elf-x64").path
    log = tmp_path / "rea.log"
    out = rea("-v", "--log-file", str(log), "list-procedures", str(binary), "--limit", "1", cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    assert "INFO rea: list_procedures: completed in " in log.read_text()
    quiet = rea("list-procedures", str(binary), "--limit", "1", cache=tmp_path / "c")
    assert "rea:" not in quiet.stderr
    loud = rea("-vv", "list-procedures", str(binary), "--limit", "1", cache=tmp_path / "c")
    assert "INFO rea: list_procedures: started" in loud.stderr
    missing = rea("--log-file", cache=tmp_path / "c")
    assert missing.returncode == 1 and "--log-file needs a path" in missing.stderr


def test_render_draws_svg_through_graphviz(native_fixtures: Any, tmp_path: Path) -> None:
    toolchains.require("dot")
    binary = native_fixtures.get("elf-x64").path
    svg = tmp_path / "main.svg"
    out = rea("get-call-graph", str(binary), "main", "--render", str(svg), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    assert svg.read_bytes().lstrip().startswith(b"<?xml") and b"compute_checksum" in svg.read_bytes()
    assert f"wrote {svg}" in out.stderr
    # The picture was the answer asked for: the record is named, with what was drawn, not printed whole.
    assert out.stdout.startswith("get_call_graph  ev_") and "picture: " in out.stdout and "call_sites" not in out.stdout
    wrong = rea("get-call-graph", str(binary), "main", "--render", str(tmp_path / "x.gif"), cache=tmp_path / "c")
    assert wrong.returncode == 1 and "must end in" in wrong.stderr
    mermaid = rea(
        "get-call-graph", str(binary), "main", "--format", "mermaid", "--render", str(svg), cache=tmp_path / "c"
    )
    assert mermaid.returncode == 1 and "--render draws the DOT picture" in mermaid.stderr
    # Without Graphviz on PATH: a clear error naming the package, not a crash.
    bare = tmp_path / "bin"
    bare.mkdir()
    no_dot = rea(
        "get-call-graph", str(binary), "main", "--render", str(tmp_path / "y.svg"), cache=tmp_path / "c", PATH=str(bare)
    )
    assert no_dot.returncode == 1 and "capability_unavailable" in no_dot.stderr and "graphviz" in no_dot.stderr
    assert os.path.exists(svg)
