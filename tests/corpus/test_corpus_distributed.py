"""--scheduler tcp://: a real `dask scheduler` and two `dask worker` processes on 127.0.0.1, one killed mid-run."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import corpussupport
import psutil
import pytest
from corpussupport import rows

from rea.context import CallContext
from tests.waiting import poll_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask() -> str:
    exe = shutil.which("dask", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.fail("the dask command is not installed next to this interpreter (pip install dask distributed)")
    return exe


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A scheduler and two single-threaded workers (each under a nanny that restarts it), owned by this test."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2", "PYTHONPATH": os.getcwd()}
    log = open(tmp_path / "cluster.log", "w")  # noqa: SIM115 - closed at teardown
    procs = [
        subprocess.Popen(
            [_dask(), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    ]  # fmt: skip
    for i in range(2):
        procs.append(
            subprocess.Popen(
                [_dask(), "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                 "--name", f"w{i}", "--local-directory", str(tmp_path / f"w{i}")],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        )  # fmt: skip
    try:
        from distributed import Client

        client = Client(address, timeout="30s", set_as_default=False)
        try:
            client.wait_for_workers(2, timeout=60)
        finally:
            client.close()
        yield {"address": address, "procs": procs}
    finally:
        for p in procs:
            for child in psutil.Process(p.pid).children(recursive=True) if p.poll() is None else []:
                child.kill()
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()


def test_a_cluster_triages_and_a_killed_worker_loses_no_item(
    cluster: dict[str, Any], corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path
) -> None:
    source = Path(os.path.realpath("/usr/bin/gzip" if os.path.exists("/usr/bin/gzip") else sys.executable))
    corpus = corpussupport.variants(source, tmp_path / "many", 24)
    index = tmp_path / "cluster.db"
    killed: list[int] = []
    done = threading.Event()
    workers = cluster["procs"][1:]

    def first_row() -> bool:
        # The index file exists before its tables do: "no such table" is "not yet" (waiting.NOT_YET).
        return index.exists() and bool(rows(index, "SELECT 1 FROM binaries LIMIT 1"))

    def kill_worker() -> int | None:
        # The worker process under the first nanny: the nanny restarts it, its task goes to another worker.
        for child in psutil.Process(workers[0].pid).children():
            line = " ".join(child.cmdline())
            if "multiprocessing" in line and "resource_tracker" not in line:
                child.kill()
                return child.pid
        return None

    def killer() -> None:
        if poll_until(first_row, stop=done.is_set) and (pid := poll_until(kill_worker, stop=done.is_set)):
            killed.append(pid)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        ev = run_tool(
            "triage_corpus",
            {"paths": [str(corpus)], "index": str(index), "scheduler": cluster["address"]},
            CallContext(),
        )
    finally:
        done.set()
        thread.join()
    assert killed
    res = ev["normalized_result"]
    assert res["scheduler"] == cluster["address"]
    assert res["counts"]["analysed"] == 24 and res["counts"]["failed"] == 0
    assert rows(index, "SELECT COUNT(*), COUNT(DISTINCT sha256), SUM(status = 'done') FROM binaries")[0] == (24, 24, 24)
    # The records are the ones the local scheduler makes (the same Evidence ids).
    local = tmp_path / "local.db"
    run_tool("triage_corpus", {"paths": [str(corpus)], "index": str(local), "scheduler": "synchronous"})
    sql = "SELECT sha256, evidence_id FROM binaries ORDER BY sha256"
    assert rows(index, sql) == rows(local, sql)


def test_an_address_with_no_scheduler_is_a_typed_error(run_tool: Any, tmp_path: Path) -> None:
    from rea.errors import ReaError

    (tmp_path / "c").mkdir()
    shutil.copy(os.path.realpath("/bin/true"), tmp_path / "c" / "true")
    with pytest.raises(ReaError) as err:
        run_tool(
            "triage_corpus",
            {
                "paths": [str(tmp_path / "c")],
                "index": str(tmp_path / "x.db"),
                "scheduler": f"tcp://127.0.0.1:{_free_port()}",
            },
        )
    assert err.value.code == "provider_unavailable"
