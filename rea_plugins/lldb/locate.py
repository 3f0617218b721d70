"""Where the lldb-server rea runs is: read by the provider (availability) and the client (the worker's setting)."""

from __future__ import annotations

import importlib.util
import os


def debugserver_path() -> str | None:
    """The lldb-server the wheel ships (LLDB_DEBUGSERVER_PATH for the worker), found without importing it."""
    configured = os.environ.get("LLDB_DEBUGSERVER_PATH")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    spec = importlib.util.find_spec("lldb_for_pwndbg")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "_vendor", "bin", "lldb-server")
        if os.access(path, os.X_OK):
            return path
    return None
