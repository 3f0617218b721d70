"""README is true: its marked command blocks run on a fixture, and every tool and toolset count it states is the
catalog's (scripts/readme_counts.py; ``--write`` regenerates them).

A block runs when the line before its fence is ``<!-- readme-test: run -->``: the whole block, as one bash script
(``set -e``), in one scratch folder shared by the marked blocks in document order, with ``rea`` from this
interpreter's environment, ``/bin/ls`` replaced by the compiled fixture and ``/tmp/evidence.json`` by a file in
the scratch folder (a bundle exported beforehand, which a block may overwrite: the Evidence round trip does).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rea.registry import default_registry
from rea.session import Session
from rea.testing import call_tool

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- readme-test: run -->"


def _counts_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_counts", ROOT / "scripts" / "readme_counts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def marked_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, body) of every fenced block whose fence follows the marker line."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        fence = lines[i + 1]
        assert fence.startswith("```"), f"README line {i + 1}: the marker must sit right above a fence"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        out.append((i + 2, "\n".join(lines[i + 2 : end])))
    return out


README = (ROOT / "README.md").read_text()
BLOCKS = marked_blocks(README)


def test_readme_marks_the_blocks_to_run() -> None:
    bodies = "\n".join(body for _, body in BLOCKS)
    # The main job, the CLI tour, and the Evidence round trip (export, then inspect) are among them.
    for command in ("rea analyze /bin/ls", "rea export-evidence-bundle", "rea inspect-evidence-bundle"):
        assert command in bodies or command.replace("rea ", "rea.").replace("-", "_") in bodies, command


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, hello_elf: Path) -> Path:
    work = tmp_path_factory.mktemp("readme")
    session = Session(default_registry())
    try:
        call_tool(session, "open_binary", {"path": str(hello_elf)})
        call_tool(session, "binary_overview", {})
        call_tool(session, "export_evidence_bundle", {"path": str(work / "evidence.json")})
    finally:
        session.close()
    return work


@pytest.mark.parametrize(("line", "body"), BLOCKS, ids=[f"README:{n}" for n, _ in BLOCKS])
def test_marked_block_runs(line: int, body: str, scratch: Path, hello_elf: Path) -> None:
    script = body.replace("/bin/ls", str(hello_elf)).replace("/tmp/evidence.json", str(scratch / "evidence.json"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["REA_CACHE_DIR"] = str(scratch / "cache")
    # A scratch home: nothing a block runs reads or writes this machine's user configuration.
    for var in ("CODEX_HOME", "APPDATA", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env.pop(var, None)
    env["HOME"] = str(scratch / "home")
    os.makedirs(env["HOME"], exist_ok=True)
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, "-euo", "pipefail", "-c", script],
        cwd=scratch,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"README line {line}: exit {done.returncode}\n{done.stderr[-3000:]}"
    if "rea inspect-evidence-bundle" in script:
        # The round trip: the inspected bundle holds the Evidence the export wrote, not an empty list.
        counts = [int(n) for n in re.findall(r'"record_count": (\d+)', done.stdout)]
        assert counts and all(n >= 1 for n in counts), done.stdout[-2000:]


def test_every_count_readme_states_is_the_catalogs() -> None:
    module = _counts_module()
    counts = module.catalog_counts()
    assert module.stated(README), "README states no count: the statements in scripts/readme_counts.py are stale"
    assert module.stated_on_demand(README)
    problems = module.mismatches(README, counts)
    assert not problems, "run `python scripts/readme_counts.py --write`:\n" + "\n".join(problems)


def test_the_generator_writes_what_the_check_accepts() -> None:
    module = _counts_module()
    counts = module.Counts(total=7, default=5, read_only=3, on_demand=("managed", "navigation", "corpus"))
    written = module.rewrite(README, counts)
    assert module.mismatches(written, counts) == []
    assert "Read-only tools (3 of 7)" in written and "`navigation` (the cursor tools) and `corpus`" in written
