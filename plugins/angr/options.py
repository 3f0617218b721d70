"""The settings that shape angr's results and bound its work; importable without angr."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from rea.errors import configuration_invalid

# Recorded in the analysis profile: changing any of these changes what the provider reports.
LOADER_OPTIONS: Final[dict[str, Any]] = {
    "auto_load_libs": False,
    "load_debug_info": False,
    # Position-independent images are mapped where cle likes; results are translated back to link-time
    # addresses so they agree with the file (and with the native provider).
    "addresses": "link-time",
}
CFG_OPTIONS: Final[dict[str, Any]] = {
    # normalize splits overlapping blocks so every instruction belongs to exactly one block per function,
    # which the block/edge and instruction-count results rely on.
    "normalize": True,
    "data_references": True,
    # cross_references (read/write classification of every memory access) costs about 4x the CFG time
    # (140 s against 31 s on /bin/ls); data references still record every address an instruction uses.
    "cross_references": False,
    "resolve_indirect_jumps": True,
    "force_complete_scan": False,
    "symbols": True,
    "eh_frame": True,
}
DECOMPILER_OPTIONS: Final[dict[str, Any]] = {"analysis": "Decompiler", "cfg": "CFGFast model",
                                             "options": "default"}
STRING_OPTIONS: Final[dict[str, Any]] = {"source": "CFGFast memory_data (string, unicode)", "min_chars": 4,
                                         "max_chars": 1024}
PROCEDURE_OPTIONS: Final[dict[str, Any]] = {"alignment_functions": "omitted", "extern_functions": "omitted"}

REMEDIATION_INSTALL = "pip install 'rea[angr]'"


class Timeouts(msgspec.Struct, frozen=True, kw_only=True):
    """Deadlines of each worker phase, in milliseconds."""

    load_ms: int = 60_000
    cfg_ms: int = 120_000
    decompile_ms: int = 60_000
    query_ms: int = 30_000
    # Regex searches run in a forked child of the worker under this budget, so the CFG survives a bad pattern.
    regex_ms: int = 5_000
    # How long close() waits after SIGTERM before SIGKILL.
    grace_ms: int = 2_000


_ENV: Final[dict[str, str]] = {
    "load_ms": "REA_ANGR_LOAD_TIMEOUT_MS",
    "cfg_ms": "REA_ANGR_CFG_TIMEOUT_MS",
    "decompile_ms": "REA_ANGR_DECOMPILE_TIMEOUT_MS",
    "query_ms": "REA_ANGR_QUERY_TIMEOUT_MS",
    "regex_ms": "REA_ANGR_REGEX_TIMEOUT_MS",
}
_MAX_MS = 2_147_483_647


def timeouts_from_env(env: Mapping[str, str] | None = None, base: Timeouts | None = None) -> Timeouts:
    """Deadlines from ``REA_ANGR_*_TIMEOUT_MS`` (decimal 1-2,147,483,647 ms); invalid values fail."""
    env = os.environ if env is None else env
    values: dict[str, int] = {}
    constraint = f"a decimal integer from 1 to {_MAX_MS} (milliseconds)"
    for field, var in _ENV.items():
        raw = env.get(var)
        if raw is None:
            continue
        if not re.fullmatch(r"[1-9][0-9]{0,9}", raw) or int(raw) > _MAX_MS:
            raise configuration_invalid(var, constraint, raw)
        values[field] = int(raw)
    return msgspec.structs.replace(base or Timeouts(), **values)


def profile_parameters(angr_version: str) -> dict[str, Any]:
    """The analysis-profile parameters: angr's version and every option that shapes results."""
    return {
        "engine": "angr",
        "angr_version": angr_version,
        "loader": dict(LOADER_OPTIONS),
        "cfg": {"analysis": "CFGFast", **CFG_OPTIONS},
        "decompiler": dict(DECOMPILER_OPTIONS),
        "strings": dict(STRING_OPTIONS),
        "procedures": dict(PROCEDURE_OPTIONS),
    }
