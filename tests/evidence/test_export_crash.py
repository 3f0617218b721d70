"""A process killed with SIGKILL mid-export leaves the destination absent or the old file intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# The child builds records, then exports; its progress sink announces the stream has begun and stalls,
# so the kill always lands after the staging file exists and before publication.
CHILD = r"""
import sys, time
from rea import bundle, evidence as ev_mod
from rea.context import CallContext
from rea.evidence import ProviderIdentity
prov = ProviderIdentity(id="crash-test", name="crash", version="1")
recs = [ev_mod.build(operation="note", provider=prov, subject=None, analysis_profile=None, parameters={"i": i},
                     normalized_result={"i": i, "pad": "x" * 4096}) for i in range(64)]
def sink(_n, _total, msg):
    print("streaming", flush=True)
    time.sleep(60)
bundle.export(recs, sys.argv[1], overwrite=True, ctx=CallContext(sink=sink))
print("published", flush=True)
"""


@pytest.mark.parametrize("old", [None, b'{"old": "bundle"}'])
def test_sigkill_mid_export_never_publishes_a_partial_file(tmp_path: Path, old: bytes | None) -> None:
    dest = tmp_path / "evidence.json"
    if old is not None:
        dest.write_bytes(old)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(dest)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "streaming"
        staging = [p for p in os.listdir(tmp_path) if p.startswith(".rea-export-")]
        assert len(staging) == 1  # the export was under way
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if old is None:
        assert not dest.exists()
    else:
        assert dest.read_bytes() == old
