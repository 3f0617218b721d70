"""Every ``rea ...`` command line the README and CONTRIBUTING show runs, and exits as documented.

Commands run against the compiled fixture where the docs show /bin/ls, in a scratch working directory.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rea.catalog.schemas import flatten_root_union
from rea.cli import tools as cli_tools
from rea.registry import default_registry

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "CONTRIBUTING.md", "docs/doctor.md")
RUN_MARKER = "<!-- readme-test: run -->"
# Documented exit status other than 0.
EXPECTED_EXIT: dict[str, int] = {}


def documented_commands() -> list[tuple[str, str]]:
    """(document, command line) for each ``rea`` invocation in a shell block or an inline code span."""
    found: list[tuple[str, str]] = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        in_shell = False
        previous = ""
        for line in text.splitlines():
            if line.startswith("```"):
                # A block marked to run runs whole, in order, in tests/test_readme.py (its lines depend on each other).
                in_shell = line.strip() in ("```sh", "```bash", "```console") and previous.strip() != RUN_MARKER
                previous = line
                continue
            previous = line
            if in_shell:
                command = line.split("  #", 1)[0].strip()
                if re.match(r"^([A-Z_]+=\S* )*rea \S", command):
                    found.append((doc, command))
        outside = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", outside):
            if re.match(r"^([A-Z_]+=\S* )*rea \S", span) and not re.search(r"[<\[]|\.\.\.", span):
                found.append((doc, span))
    return sorted(set(found))


COMMANDS = documented_commands()


def test_the_docs_show_commands() -> None:
    # README's command tour runs whole as a marked block (tests/test_readme.py); the rest run here, line by line.
    assert len(COMMANDS) >= 5
    assert (ROOT / "README.md").read_text().count(RUN_MARKER) >= 2


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory: pytest.TempPathFactory, hello_elf: Path) -> Path:
    """A real exported Evidence bundle, standing in for the docs' /tmp/evidence.json."""
    from rea.session import Session
    from rea.testing import call_tool

    out = tmp_path_factory.mktemp("doc-bundle") / "evidence.json"
    session = Session(default_registry())
    call_tool(session, "open_binary", {"path": str(hello_elf)})
    call_tool(session, "binary_overview", {})
    call_tool(session, "export_evidence_bundle", {"path": str(out)})
    session.close()
    return out


@pytest.mark.parametrize(("doc", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_documented_command_runs(doc: str, command: str, hello_elf: Path, bundle_path: Path, tmp_path: Path) -> None:
    words = shlex.split(command.replace("/tmp/evidence.json", str(bundle_path)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    # A scratch home: `rea setup --write` must register rea with no client configuration of this machine's user.
    for var in ("CODEX_HOME", "APPDATA", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env.pop(var, None)
    env["HOME"] = str(tmp_path / "home")
    os.makedirs(env["HOME"], exist_ok=True)
    while "=" in words[0]:
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[0] == "rea"
    argv = [str(hello_elf) if w == "/bin/ls" else w for w in words[1:]]
    if argv[:2] == ["serve", "--http"]:
        _serves_until_stopped(argv, env, tmp_path)
        return
    proc = subprocess.run(
        [sys.executable, "-m", "rea", *argv],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    expected = EXPECTED_EXIT.get(command, 0)
    assert proc.returncode == expected, f"{doc}: `{command}` exited {proc.returncode}\n{proc.stderr[-2000:]}"
    if "--json" in argv or "json" in argv:
        json.loads(proc.stdout)


def _serves_until_stopped(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """A documented HTTP server runs until stopped: it starts, says where it listens, and ends on SIGTERM."""
    port_free = ["--http", "127.0.0.1:0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea", "serve", *port_free],
        cwd=cwd,
        env={**env, "REA_MCP_TOKEN": "documented-command-token"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "http://127.0.0.1:" in line:
                break
        assert proc.poll() is None, f"`rea {' '.join(argv)}` ended: {''.join(seen)[-2000:]}"
    finally:
        proc.terminate()
        # Stopped by SIGTERM: its handler exits 0 once serving; a signal during start-up ends it by the signal.
        assert proc.wait(timeout=60) in (0, -15)


def test_every_tool_property_has_its_own_flag() -> None:
    """The one CLI rule, checked over every registered tool's schema."""
    registry = default_registry()
    for tool in registry.tools.values():
        parser = cli_tools.build_parser(tool, "rea")
        flags = {s for action in parser._actions for s in action.option_strings}
        for name in flatten_root_union(tool.input_schema).get("properties", {}):
            assert cli_tools.flag_name(name) in flags, f"{tool.name}: no {cli_tools.flag_name(name)}"
        if tool.cli_subject:
            assert tool.cli_subject in flatten_root_union(tool.input_schema)["properties"], tool.name


def test_help_states_the_convention_the_readme_documents() -> None:
    readme = (ROOT / "README.md").read_text()
    registry = default_registry()
    tool = registry.tools["procedure_info"]
    help_text = cli_tools.build_parser(tool, "rea").format_help()
    assert "--procedure" in help_text and "SUBJECT" in help_text and "TARGET" in help_text
    assert "@file.json" in help_text and "@file.json" in readme
    for phrase in ("--json", "--format json", "--output-format", "kebab-cased"):
        assert phrase in readme, phrase
    assert "--json" in help_text and "--format json" in help_text


def test_the_operations_table_is_generated_from_the_result_shapes() -> None:
    """docs/native-operations.md's result column is each operation tool's Struct, described (issue 26)."""
    from rea.operations.shapes import OPERATION_TYPES
    from rea.operations.shapes import RESULT_TYPES
    from rea.operations.shapes import describe

    table = (ROOT / "docs" / "native-operations.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| .*? \| `(.*)` \|$", table, re.M))
    for tool, shape in {**RESULT_TYPES, **OPERATION_TYPES}.items():
        assert rows.get(tool) == describe(shape), f"regenerate the {tool} row: `{describe(shape)}`"
