"""TEST ONLY: a fake Ghidra worker honouring the real worker's process protocol (selected by
REA_GHIDRA_TEST_WORKER through a small executable wrapper).

Modes (REA_GHIDRA_TEST_MODE): ``success`` answers from the recorded model (REA_GHIDRA_TEST_MODEL);
``slow:N`` takes N seconds to start, then succeeds; ``exit:CODE`` dies with CODE during startup;
``exit-once:CODE`` dies the first time only (a marker file, REA_GHIDRA_TEST_MARKER, remembers it);
``silent`` never finishes starting. The answers go through the plugin's real routes and query layer.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from rea.operations.records import Snapshot  # noqa: E402
from rea.operations.records import SnapshotSource  # noqa: E402
from rea.process.worker import Reporter  # noqa: E402
from rea.process.worker import serve  # noqa: E402
from rea_plugins.ghidra.worker import make_routes  # noqa: E402


def start(params: dict[str, Any], reporter: Reporter) -> SnapshotSource:
    mode = os.environ.get("REA_GHIDRA_TEST_MODE", "success")
    kind, _, arg = mode.partition(":")
    if kind == "exit":
        os._exit(int(arg or "73"))
    if kind == "exit-once":
        marker = Path(os.environ["REA_GHIDRA_TEST_MARKER"])
        if not marker.exists():
            marker.write_text("exited once\n")
            os._exit(int(arg or "73"))
    if kind == "silent":
        while True:
            time.sleep(3600)
    if kind == "slow":
        time.sleep(float(arg or "5"))
    model = os.environ["REA_GHIDRA_TEST_MODEL"]
    snapshot = msgspec.json.decode(Path(model).read_bytes(), type=Snapshot)
    if snapshot.inventory.document.sha256 != params.get("sha256"):
        from rea.errors import ReaError

        raise ReaError(
            "artifact_changed",
            "the recorded model is of another file",
            details={"expected_sha256": params.get("sha256")},
        )
    return SnapshotSource(snapshot)


if __name__ == "__main__":
    sys.exit(serve(make_routes(start, decompiler="ghidra")))
