"""The three example scripts of docs/code-mode.md, run for real on programs compiled now (in process)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.scripting.conftest import example

pytestmark = pytest.mark.usefixtures("sandboxed")


def run_script(session: Session, name: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    """The script's result (as a client decodes it) and its Evidence id."""
    out = call_tool(session, "run_analysis_script", {"source": example(name), "filename": name, "arguments": arguments})
    assert out.evidence is not None
    return msgspec.to_builtins(out.evidence.normalized_result), out.evidence.evidence_id


def test_string_to_c(rea_session: Session, script_programs: dict[str, Path]) -> None:
    result_of(rea_session, "open_binary", {"path": str(script_programs["strings"])})
    run, evidence_id = run_script(rea_session, "string_to_c.py", needle="rea-script-banner")
    [row] = run["result"]
    assert row["string"] == "rea-script-banner"
    assert row["procedure"]["name"] == "show_banner"
    assert "puts" in row["c"]
    assert [c["name"] for c in row["callers"]] == ["report"]
    assert "show_banner()" in row["callers"][0]["c"]
    assert "is used by show_banner" in run["printed"]
    # Every inner call is in the ledger like a direct call, and the script's own record links them.
    record = rea_session.ledger.get(evidence_id)
    assert record is not None
    assert sorted(record.evidence_links) == sorted(run["call_evidence_ids"])
    operations = [rea_session.ledger.get(i).operation for i in run["call_evidence_ids"]]  # type: ignore[union-attr]
    assert {"search_strings", "xrefs", "procedure_callers", "procedure_pseudo_code"} <= set(operations)
    assert run["calls"] >= 5 and run["sandbox"] == "bubblewrap"


def test_crypto_constants(rea_session: Session, script_programs: dict[str, Path]) -> None:
    result_of(rea_session, "open_binary", {"path": str(script_programs["crypto"])})
    run, _ = run_script(rea_session, "crypto_constants.py")
    found = {row["procedure"]["name"]: row for row in run["result"]["functions"]}
    assert set(found) == {"tea_encrypt", "crc32_bytes"}
    assert found["tea_encrypt"]["constants"] == ["TEA/XTEA delta"]
    assert found["crc32_bytes"]["constants"] == ["CRC-32 polynomial (reflected)"]
    assert all(row["callers"] == ["protect"] for row in found.values())


def test_diff_summary(rea_session: Session, script_programs: dict[str, Path]) -> None:
    result_of(rea_session, "open_binary", {"path": str(script_programs["crypto"]), "alias": "old"})
    result_of(rea_session, "open_binary", {"path": str(script_programs["crypto_v2"]), "alias": "new"})
    run, _ = run_script(rea_session, "diff_summary.py")
    summary = run["result"]
    assert summary["complete"] is True
    assert summary["added"] == ["added_function"]
    assert summary["removed"] == []
    assert [c["name"] for c in summary["changed"]] == ["crc32_bytes"]
    assert summary["counts"]["changed"] == 1
    changed = summary["changed"][0]
    assert changed["before"] != changed["after"]  # ~crc, then ~crc ^ 0x5a5a


def test_the_script_sees_none_of_reas_state(rea_session: Session, tmp_path: Path) -> None:
    """The worker runs rea's code, not its state: the cache, the annotations, the server's temporary directory
    (where other processes' private directories live), homes and shadow files are not in its sandbox."""
    from rea import config

    home = os.path.realpath(os.path.expanduser("~"))
    secrets = [config.cache_dir(), config.annotations_dir()]
    for path in secrets:
        os.makedirs(path, exist_ok=True)
    secrets += ["/etc/shadow", "/root/.ssh", os.path.join(home, ".ssh"), str(tmp_path)]
    source = "import os\nresult = {p: os.path.exists(p) for p in args['paths']}\n"
    source += "result[args['home']] = sorted(os.listdir(args['home'])) if os.path.isdir(args['home']) else []\n"
    out = call_tool(
        rea_session, "run_analysis_script", {"source": source, "arguments": {"paths": secrets, "home": home}}
    )
    assert out.evidence is not None
    seen = msgspec.to_builtins(out.evidence.normalized_result)["result"]
    assert not any(seen[p] for p in secrets), seen
    # A home is there only as the way to rea's interpreter when it is installed under it (pyenv, a venv).
    runtime = {
        Path(os.path.realpath(p)).relative_to(home).parts[0]
        for p in (sys.prefix, sys.base_prefix, *sys.path)
        if p and os.path.realpath(p).startswith(home + "/")
    }
    assert set(seen[home]) <= runtime, seen[home]
    listing = "import os\nresult = sorted(os.listdir(args['tmp']))\n"
    out = call_tool(
        rea_session, "run_analysis_script", {"source": listing, "arguments": {"tmp": tempfile.gettempdir()}}
    )
    assert out.evidence is not None
    names = msgspec.to_builtins(out.evidence.normalized_result)["result"]
    # Only the worker's own private directory (its TMPDIR) is there, no other rea- folder of the host's.
    assert len([n for n in names if n.startswith("rea-")]) <= 1, names
