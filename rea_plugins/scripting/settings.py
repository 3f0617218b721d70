"""The scripting plugin's settings: the bounds every script runs under, read when a script starts."""

from __future__ import annotations

from rea.plugin import SettingSpec
from rea.plugin import integer_setting


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError(raw)
    return raw == "1"


TIMEOUT_S = integer_setting(
    "REA_SCRIPT_TIMEOUT_S",
    1,
    3600,
    60,
    "seconds",
    "Wall-clock bound of one run_analysis_script call, its inner tool calls included; past it the worker is "
    "killed and the call is provider_timeout.",
)
MEMORY_LIMIT_MB = integer_setting(
    "REA_SCRIPT_MEMORY_LIMIT_MB",
    256,
    65_536,
    1024,
    "MiB",
    "Address-space bound of the script's worker; exceeding it is resource_constraint.",
)
MAX_OUTPUT_BYTES = integer_setting(
    "REA_SCRIPT_MAX_OUTPUT_BYTES",
    1024,
    8 * 1024 * 1024,
    64 * 1024,
    "bytes",
    "What a script may print (kept up to it, marked truncated beyond) and the most its result may encode to.",
)
MAX_CALLS = integer_setting(
    "REA_SCRIPT_MAX_CALLS",
    1,
    100_000,
    1000,
    "calls",
    "Inner tool calls one script may make; the next one is refused with resource_constraint.",
)
MAX_TASKS = integer_setting(
    "REA_SCRIPT_MAX_TASKS",
    4,
    4096,
    32,
    "processes and threads",
    "Processes and threads alive at once in the script's sandbox (a fork past it fails inside the script).",
)
ALLOW_EFFECTS = SettingSpec(
    name="REA_SCRIPT_ALLOW_EFFECTS",
    constraint="0 or 1",
    parse=_flag,
    default=False,
    description="1: scripts may call tools that write, launch or drive (not read-only); 0 (default): those are "
    "refused inside scripts with access_denied.",
)

SETTINGS: tuple[SettingSpec, ...] = (TIMEOUT_S, MEMORY_LIMIT_MB, MAX_OUTPUT_BYTES, MAX_CALLS, MAX_TASKS, ALLOW_EFFECTS)
