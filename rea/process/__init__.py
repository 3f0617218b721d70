"""Processes rea owns: start, observe, signal and clean up, in one place for every plugin.

- ``OwnedProcess`` / ``ProcessSpec``: a process in its own session with a private directory, an explicit
  environment, an optional address-space cap and sandbox, lineage snapshots, and ``terminate`` that
  signals only what rea can prove it owns and reports what remains.
- ``WorkerChannel``: a restartable worker speaking rea's framed protocol, with deadlines, cancellation,
  progress and typed errors; ``python_worker_spec`` starts a Python worker whose module calls
  ``rea.process.worker.serve(ROUTES)``.
- ``SandboxPolicy``: bubblewrap isolation for code rea runs but did not write.
- ``leftovers``: what a killed server left (private directories, staging files), removed by the next start.

Plugins start processes only through this package (a test enforces it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from rea.process.channel import WorkerChannel
    from rea.process.channel import WorkerClient
    from rea.process.channel import python_worker_spec
    from rea.process.owned import OwnedProcess
    from rea.process.owned import ProcessSpec
    from rea.process.owned import status_details
    from rea.process.sandbox import Isolation
    from rea.process.sandbox import SandboxPolicy
    from rea.process.sandbox import bwrap_failure

# Loaded on first use: a module that needs one submodule (the annotation store needs ``leftovers``) does not pay
# for the channel, owned processes and the sandbox (~25 ms at every CLI call).
_WHERE = {
    "WorkerChannel": "channel",
    "WorkerClient": "channel",
    "python_worker_spec": "channel",
    "OwnedProcess": "owned",
    "ProcessSpec": "owned",
    "status_details": "owned",
    "Isolation": "sandbox",
    "SandboxPolicy": "sandbox",
    "bwrap_failure": "sandbox",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rea.process' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"rea.process.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Isolation",
    "OwnedProcess",
    "ProcessSpec",
    "SandboxPolicy",
    "WorkerChannel",
    "WorkerClient",
    "bwrap_failure",
    "python_worker_spec",
    "status_details",
]
