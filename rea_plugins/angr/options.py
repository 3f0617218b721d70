"""The settings that shape angr's results and bound its work; importable without angr."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import msgspec

from rea.plugin import MAX_INT32
from rea.plugin import JSONObject
from rea.plugin import SettingSpec
from rea.plugin import default_memory_limit_mb
from rea.plugin import engine_rows
from rea.plugin import integer_setting

# Recorded in the analysis profile: changing any of these changes what the provider reports.
LOADER_OPTIONS: Final[dict[str, bool | str]] = {
    "auto_load_libs": False,
    "load_debug_info": False,
    # Position-independent images are mapped where cle likes; results are translated back to link-time
    # addresses so they agree with the file (and with the native provider).
    "addresses": "link-time",
}
CFG_OPTIONS: Final[dict[str, bool]] = {
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
DECOMPILER_OPTIONS: Final[dict[str, str]] = {"analysis": "Decompiler", "cfg": "CFGFast model", "options": "default"}
PROCEDURE_OPTIONS: Final[dict[str, str]] = {
    "alignment_functions": "omitted",
    "extern_functions": "omitted",
    # Function starts given to CFGFast besides symbols and the entry point.
    "seeded_starts": "unwind table (ELF .eh_frame FDEs, PE .pdata)",
    # CFGFast functions starting strictly inside another function's unwind extent are parts of that function.
    "fragments": "merged into the procedure whose unwind extent contains them",
    "jump_tables": "angr's resolver, plus the table base of relative tables whose base was spilled to the stack",
    "call_sites": "call edges of the function graphs",
}

REMEDIATION_INSTALL = "pip install 'rea-reverse[angr]'"


class Timeouts(msgspec.Struct, frozen=True, kw_only=True):
    """Deadlines of each worker phase, in milliseconds, and the worker's address-space cap."""

    # Worker start, angr import and cle loading; cle needs over a minute for a 100+ MB library.
    load_ms: int = 120_000
    cfg_ms: int = 120_000
    decompile_ms: int = 60_000
    query_ms: int = 30_000
    # How long close() waits after SIGTERM before SIGKILL.
    grace_ms: int = 2_000
    # RLIMIT_AS of the worker, so a hostile or huge input ends in resource_constraint, not the OOM killer.
    address_space_mb: int = msgspec.field(default_factory=default_memory_limit_mb)


_ENV: Final[dict[str, str]] = {
    "load_ms": "REA_ANGR_LOAD_TIMEOUT_MS",
    "cfg_ms": "REA_ANGR_CFG_TIMEOUT_MS",
    "decompile_ms": "REA_ANGR_DECOMPILE_TIMEOUT_MS",
    "query_ms": "REA_ANGR_QUERY_TIMEOUT_MS",
    "address_space_mb": "REA_ANGR_MEMORY_LIMIT_MB",
}


def settings() -> dict[str, SettingSpec]:
    """The angr settings, declared to the kernel (validated at startup) and read at each open."""
    defaults = Timeouts()
    out = {}
    for field, var in _ENV.items():
        if field == "address_space_mb":
            out[field] = integer_setting(
                var, 256, MAX_INT32, getattr(defaults, field), "MiB", "address-space cap of the angr worker"
            )
        else:
            out[field] = integer_setting(
                var,
                1,
                MAX_INT32,
                getattr(defaults, field),
                "milliseconds",
                f"angr worker deadline ({field.removesuffix('_ms')} phase)",
            )
    return out


def timeouts_from_env(env: Mapping[str, str] | None = None, base: Timeouts | None = None) -> Timeouts:
    """Limits from ``REA_ANGR_*_TIMEOUT_MS`` (1-2,147,483,647 ms) and ``REA_ANGR_MEMORY_LIMIT_MB``; invalid fails."""
    env = os.environ if env is None else env
    values = {field: spec.read(env) for field, spec in settings().items() if spec.name in env}
    return msgspec.structs.replace(base or Timeouts(), **values)


# JSON, not a Struct: the analysis profile the kernel hashes into every Evidence id.
def profile_parameters(angr_version: str) -> JSONObject:
    """The analysis-profile parameters: angr's version and every option that shapes results."""
    return {
        "engine": "angr",
        "angr_version": angr_version,
        "loader": dict(LOADER_OPTIONS),
        "cfg": {"analysis": "CFGFast", **CFG_OPTIONS},
        "decompiler": dict(DECOMPILER_OPTIONS),
        "strings": engine_rows.string_options("CFGFast memory_data (string, unicode)"),
        "procedures": dict(PROCEDURE_OPTIONS),
    }
