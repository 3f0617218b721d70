"""The radare2 provider's settings, where its libraries are, and its analysis profile; imports no radare2."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Final

import msgspec

from rea.plugin import MAX_INT32
from rea.plugin import JSONObject
from rea.plugin import SettingSpec
from rea.plugin import choice_setting
from rea.plugin import default_memory_limit_mb
from rea.plugin import distribution_version
from rea.plugin import engine_rows
from rea.plugin import integer_setting

REMEDIATION_INSTALL = "pip install 'rea-reverse[radare2]'"
# The r2libr wheel's package directory holds the radare2 libraries in this subdirectory.
LIBRARY_SUBDIR = "libr"
CORE_LIBRARY = "libr_core.so"

ANALYSIS_LEVELS: Final[dict[str, str]] = {
    "aa": "aa: functions from symbols and the entry point, followed by their calls and jumps",
    "aaa": "aaa: aa, then call-target discovery (aac), references (aar), types and noreturn propagation",
}

ANALYSIS = choice_setting(
    "REA_RADARE2_ANALYSIS",
    ANALYSIS_LEVELS,
    "aaa",
    "radare2's analysis depth (part of the analysis profile): aa (fast) or aaa (complete).",
)
LOAD = integer_setting(
    "REA_RADARE2_LOAD_TIMEOUT_MS",
    1,
    MAX_INT32,
    60_000,
    "milliseconds",
    "Deadline of starting the radare2 worker and loading the binary.",
)
ANALYSIS_TIMEOUT = integer_setting(
    "REA_RADARE2_ANALYSIS_TIMEOUT_MS",
    1,
    MAX_INT32,
    300_000,
    "milliseconds",
    "Deadline of radare2's whole-program analysis (aa or aaa), run once per worker on the first query that needs it.",
)
QUERY = integer_setting(
    "REA_RADARE2_QUERY_TIMEOUT_MS",
    1,
    MAX_INT32,
    60_000,
    "milliseconds",
    "Deadline of one query once the analysis is done (pseudo code included).",
)


MEMORY = integer_setting(
    "REA_RADARE2_MEMORY_LIMIT_MB",
    256,
    1_048_576,
    default_memory_limit_mb(),
    "MiB",
    "Address-space cap of the radare2 worker, so a hostile or huge input ends in a typed error, not the OOM killer.",
)

SETTINGS: tuple[SettingSpec, ...] = (ANALYSIS, LOAD, ANALYSIS_TIMEOUT, QUERY, MEMORY)


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """The analysis level, the deadlines (milliseconds) and the worker's address-space cap one client runs with."""

    analysis: str = "aaa"
    load_ms: int = 60_000
    analysis_ms: int = 300_000
    query_ms: int = 60_000
    address_space_mb: int = msgspec.field(default_factory=default_memory_limit_mb)
    # How long close() waits after SIGTERM before SIGKILL.
    grace_ms: int = 2_000


def limits_from_env(env: Mapping[str, str] | None = None) -> Limits:
    """The limits from the environment; an invalid value is ``configuration_invalid`` naming the setting."""
    return Limits(
        analysis=ANALYSIS.read(env),
        load_ms=LOAD.read(env),
        analysis_ms=ANALYSIS_TIMEOUT.read(env),
        query_ms=QUERY.read(env),
        address_space_mb=MEMORY.read(env),
    )


def library_dir() -> str | None:
    """The directory of the installed r2libr wheel's radare2 libraries, found without importing them."""
    try:
        spec = importlib.util.find_spec("libr")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = os.path.join(root, LIBRARY_SUBDIR)
        if os.path.isfile(os.path.join(candidate, CORE_LIBRARY)):
            return candidate
    return None


def dist_version(name: str) -> str | None:
    return distribution_version(name)


# radare2 configuration set before loading; recorded in the profile because each shapes results.
CONFIG: Final[dict[str, str]] = {
    # Relocations are not applied (bin.cache off): radare2 then moves relocation targets into a region of
    # its own, and GOT slots would no longer be where the file puts them.
    "bin.cache": "false",
    "bin.demangle": "false",  # names as the symbol tables spell them, like the other providers
    "anal.jmp.tbl": "true",
    "anal.hasnext": "false",
}
PROCEDURE_OPTIONS: Final[dict[str, str]] = {
    "source": "radare2's function list (aflj) after the analysis",
    "seeded_starts": "import stubs, and unwind-table function starts (ELF .eh_frame FDEs, PE .pdata) as af",
    "extent": "the unwind table's extent where the file has one, else the end of the last block that starts "
    "before the next procedure (radare2 functions may also own blocks elsewhere: procedure_blocks)",
    "pe_imports": "import procedures at their IAT slots",
    "names": "symbol names, else import names, else radare2's (fcn.* spelled sub_*)",
}
PSEUDO_CODE: Final[dict[str, str]] = {
    "command": "pdc",
    "dialect": "radare2 pseudo-C",
    "decompiler": "none: a per-block rendering of the disassembly",
}


# JSON, not a Struct: the analysis profile the kernel hashes into every Evidence id.
def profile_parameters(limits: Limits) -> JSONObject:
    """The analysis-profile parameters: radare2's version, the analysis depth and every option that shapes results."""
    return {
        "engine": "radare2",
        "radare2_version": dist_version("r2libr"),
        "analysis": limits.analysis,
        "analysis_description": ANALYSIS_LEVELS[limits.analysis],
        "config": dict(CONFIG),
        "procedures": dict(PROCEDURE_OPTIONS),
        "strings": engine_rows.string_options("radare2 izj (strings in data sections)"),
        "pseudo_code": dict(PSEUDO_CODE),
        "addresses": "link-time (radare2's default base for every format)",
    }
