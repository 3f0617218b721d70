"""What the native provider declares without importing its engine: the operations it answers, and the installed
versions of the engines its analysis profiles name (read by the provider, its operations and its decompiler)."""

from __future__ import annotations

import platform
from importlib import metadata

from rea.plugin import CORE_OPERATIONS

# Answered by the decompile workers (rea_plugins.native.pseudo), not by Operations over the Program.
DECOMPILE_OPERATIONS = ("procedure_pseudo_code", "procedure_pseudo_code_batch", "pseudo_code_at", "procedure_data_flow")
# Declared here, once: reading the descriptor imports nothing heavy (operations.py dispatches from it).
OPERATIONS: tuple[str, ...] = (
    *CORE_OPERATIONS,
    "binary_layout",
    "inspect_native_data_type",
    "resolve_native_call_targets",
    "program_call_graph",
    "procedure_fingerprints",
    # Ghidra's decompiler (flatline) in the decompile workers, one procedure or several at once on both workers
    # (batch_decompile); where it cannot run here they answer provider_unavailable with the install command (the
    # availability's "decompiler" feature says so up front).
    *DECOMPILE_OPERATIONS,
)


def dist_version(name: str) -> str | None:
    """An installed distribution's version, or None (the analysis profiles name the engines' versions)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def host_arch() -> str | None:
    """This machine's architecture as the native provider names it (a universal binary's preferred slice)."""
    machine = platform.machine().lower()
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
