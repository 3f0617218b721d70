"""``rea script FILE.py [TARGET]``: opens TARGET, runs the script with the same handler, prints the record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.harness import server_env
from tests.scripting.conftest import EXAMPLES

pytestmark = pytest.mark.usefixtures("sandboxed")


def rea(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea.cli.main", *args], capture_output=True, text=True, timeout=300, env=server_env()
    )


def test_script_command_runs_an_example_on_a_target(script_programs: dict[str, Path]) -> None:
    done = rea(
        "script",
        str(EXAMPLES / "crypto_constants.py"),
        str(script_programs["crypto"]),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    run = record["normalized_result"]
    assert {row["procedure"]["name"] for row in run["result"]["functions"]} == {"tea_encrypt", "crc32_bytes"}
    assert sorted(record["evidence_links"]) == sorted(run["call_evidence_ids"])
    assert record["parameters"]["filename"] == "crypto_constants.py"


def test_script_command_passes_args_and_reports_typed_errors(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text("print(args['word'])\nresult = sorted(args)\n")
    done = rea("script", str(script), "--args", '{"word": "hello"}', "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["normalized_result"]
    assert run["printed"] == "hello\n" and run["result"] == ["word"] and run["calls"] == 0
    # Without a target, a target-bound tool is a typed error the script sees (uncaught: the call's error).
    script.write_text("rea.list_procedures(limit=1)\n")
    done = rea("script", str(script), "--json")
    assert done.returncode == 1
    err = json.loads(done.stdout)["error"]
    assert err["code"] == "target_unavailable" and err["details"]["script_error"]["line"] == 1
    missing = rea("script", str(tmp_path / "missing.py"), "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["error"]["code"] == "target_unavailable"
