"""The native provider keeps its parse and its index in the analysis cache: a reopen of the same bytes starts no
parse worker, in a fresh session and in a fresh process (the CLI), and answers exactly as the first open did;
changed bytes at the same path are parsed again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rea import registry as registry_mod
from rea.session import Session
from rea.testing import result_of
from tests.waiting import wait_for

QUESTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list_procedures", {"limit": 1000}),
    ("list_names", {"limit": 1000}),
    ("procedure_callees", {"procedure": "main"}),
    ("procedure_references", {"procedure": "main", "direction": "outgoing", "limit": 1000}),
    ("procedure_references", {"procedure": "greet", "direction": "incoming", "limit": 1000}),
)
# Logs the command line of every Python process started with this on PYTHONPATH (workers inherit
# PYTHONPATH, not the rest of the environment, so the log's path is written in).
SITECUSTOMIZE = """
with open({log!r}, "a") as fh:
    fh.write(open("/proc/self/cmdline", "rb").read().replace(b"\\0", b" ").decode() + "\\n")
"""


def _session_answers(path: str) -> tuple[list[Any], list[dict[str, Any]], Any]:
    """Answers of a fresh registry (so a fresh provider, with no worker of its own) and its process lineage."""
    registry = registry_mod.load()
    provider = registry.providers["native"]
    session = Session(registry)
    try:
        result_of(session, "open_binary", {"path": path, "provider_id": "native"})
        answers = [result_of(session, op, args) for op, args in QUESTIONS]
        lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]
    finally:
        session.close()
    return answers, lineage.get("snapshots", []), provider


def _workers(snapshots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in snapshots if s.get("resource") == "native-parse-worker"]


def test_a_reopen_in_a_fresh_session_starts_no_parse_worker(
    native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import store

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "MEMO", store._Memo())  # other tests of this process opened these bytes
    path = str(tmp_path / "program")
    shutil.copyfile(native_fixtures.get("elf-x64").path, path)
    first, lineage, _ = _session_answers(path)
    assert _workers(lineage), lineage
    # From this process's memo, then from the cache directory alone (as a new server would).
    for forget in (False, True):
        if forget:
            monkeypatch.setattr(store, "MEMO", store._Memo())
        again, lineage, provider = _session_answers(path)
        assert again == first
        assert not _workers(lineage), lineage
        assert provider._worker is None

    # The same path with other bytes is parsed again (and answers for those bytes).
    data = bytearray(Path(path).read_bytes())
    at = data.find(b"REA_FIXTURE_GREETING")
    data[at : at + 3] = b"rea"
    Path(path).write_bytes(bytes(data))
    changed, lineage, _ = _session_answers(path)
    assert _workers(lineage), lineage
    assert changed[0] == first[0]


def _cli(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "rea", *args], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_a_second_cli_call_starts_no_parse_worker(native_fixtures: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    log = tmp_path / "processes.log"
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(log=str(log)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env.update(
        REA_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    path = native_fixtures.get("elf-x64").path
    results = []
    for _ in range(2):
        log.write_text("")
        results.append(_cli(["list-procedures", path, "--limit", "1000", "--json"], env))
        started = [line for line in log.read_text().splitlines() if "rea_plugins.native.worker" in line]
        assert len(started) == (1 if len(results) == 1 else 0), log.read_text()
    assert results[0]["normalized_result"] == results[1]["normalized_result"]
    assert results[0]["evidence_id"] == results[1]["evidence_id"]
    kinds = {k["kind"] for k in _cli(["cache", "info", "--json"], env)["kinds"]}
    from rea_plugins.native.store import INDEX_KIND
    from rea_plugins.native.store import MODEL_KIND

    assert {MODEL_KIND, INDEX_KIND} <= kinds, kinds


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_prewarm_starts_the_parse_worker_which_loads_lief_before_its_first_request(
    native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from rea_plugins.native import store

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "MEMO", store._Memo())
    registry = registry_mod.load()
    provider: Any = registry.providers["native"]
    provider.prewarm()  # returns at once; the worker starts in the background
    try:
        wait_for(
            lambda: provider._worker is not None and provider._worker.pid and _loaded(provider._worker.pid, "lief"),
            "the prewarmed worker loaded LIEF",
            timeout_s=120,
        )
        pid = provider._worker.pid
        session = Session(registry)
        try:
            result_of(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
            snapshots = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]["snapshots"]
        finally:
            session.close()
        assert [s["pid"] for s in _workers(snapshots)] == [pid], snapshots
    finally:
        if provider._worker is not None:
            provider._worker.close()


PRESTART_PROBE = """
import json, sys, time
from rea import registry, warmup
reg = registry.load()
warmup.prestart(reg).join(60)
worker = reg.providers["native"]._worker
pid = worker.pid if worker is not None else None
def loaded():
    with open(f"/proc/{pid}/maps") as fh:
        return "lief" in fh.read()
deadline = time.monotonic() + 120
while pid and not loaded() and time.monotonic() < deadline:
    time.sleep(0.05)
here = sorted(m for m in ("lief", "capstone", "angr", "mcp") if m in sys.modules)
print(json.dumps({"pid": pid, "loaded": bool(pid) and loaded(), "here": here}))
worker.close()
"""


def test_prestart_spawns_the_parse_worker_and_loads_no_engine_into_the_server(tmp_path: Path) -> None:
    # rea serve calls it before importing the SDK: the worker loads LIEF on another core while the server starts.
    env = {**os.environ, "REA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", PRESTART_PROBE], capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert isinstance(report["pid"], int) and report["loaded"], report
    assert report["here"] == [], "prestart loaded an engine or the SDK into the server's process"


def test_a_large_index_is_kept_in_the_cache_not_the_memo(
    native_fixtures: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``MEMO_MAX_PROCEDURES`` the memo would hold a second copy of every procedure: a reopen reads the cache."""
    from rea_plugins.native import store

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "MEMO", store._Memo())
    monkeypatch.setattr(store, "MEMO_MAX_PROCEDURES", 0)
    path = str(tmp_path / "program")
    shutil.copyfile(native_fixtures.get("elf-x64").path, path)
    first, _, _ = _session_answers(path)
    assert not any(isinstance(v, store.ProgramIndex) for v in store.MEMO._items.values())
    again, lineage, _ = _session_answers(path)
    assert again == first
    assert not _workers(lineage), lineage
    assert not any(isinstance(v, store.ProgramIndex) for v in store.MEMO._items.values())
