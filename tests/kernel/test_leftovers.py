"""The sweep after a kill: only a provably dead owner's directories go, the ones that can hold secrets first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rea.process import leftovers
from tests.mcp.harness import server_env

MARK_AND_EXIT = (
    "import sys\nfrom rea.process import leftovers\n"
    "for path, secret in zip(sys.argv[1::2], sys.argv[2::2]):\n"
    "    leftovers.mark(path, holds_secrets=secret == '1')\n"
)


def test_the_sweep_removes_a_dead_owners_secret_holding_directories_first(tmp_path: Path) -> None:
    dirs = {name: tmp_path / name for name in ("rea-a-plain", "rea-b-profile", "rea-c-plain", "rea-d-profile")}
    for path in dirs.values():
        path.mkdir()
        (path / "data").write_text("x")
    args = [a for name, path in dirs.items() for a in (str(path), "1" if "profile" in name else "0")]
    subprocess.run([sys.executable, "-c", MARK_AND_EXIT, *args], env=server_env(), check=True)
    live = tmp_path / "rea-live-profile"
    live.mkdir()
    leftovers.mark(str(live), holds_secrets=True)

    removed = leftovers.sweep(str(tmp_path))

    names = [os.path.basename(p) for p in removed]
    assert names == ["rea-b-profile", "rea-d-profile", "rea-a-plain", "rea-c-plain"]
    assert sorted(os.listdir(tmp_path)) == ["rea-live-profile"]


KILLED_MID_PUBLISH = (
    "import os, signal, sys\nfrom rea import annotations\n"
    # Killed after the staging file is written, before it is renamed over the store's file.
    "os.replace = lambda *_: os.kill(os.getpid(), signal.SIGKILL)\n"
    "annotations.publish(sys.argv[1], os.path.join(sys.argv[1], 'x.unknowns.json'), b'{}', '.0123abcd-unk-')\n"
)


def test_a_start_removes_the_staging_file_of_a_writer_killed_mid_publish(tmp_path: Path) -> None:
    """The unknowns' and annotations' staging files (issue 42 item 6): a killed writer's is removed by the sweep."""
    store, tmp = tmp_path / "store", tmp_path / "tmp"
    store.mkdir()
    tmp.mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_PUBLISH, str(store)], env=server_env(TMPDIR=str(tmp)), check=False
    )
    assert killed.returncode == -9
    [left] = os.listdir(store)
    assert left.endswith(".tmp")
    removed = leftovers.sweep(str(tmp))
    assert removed == [str(store / left)]
    assert os.listdir(store) == [] and os.listdir(tmp) == []
