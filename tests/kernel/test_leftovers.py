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
