"""The ghidra provider's settings: declared to the kernel (validated at startup), read at open."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import msgspec

from rea.plugin import MAX_INT32
from rea.plugin import SettingSpec
from rea.plugin import integer_setting

STARTUP = integer_setting(
    "REA_GHIDRA_STARTUP_TIMEOUT_MS",
    1,
    MAX_INT32,
    330_000,
    "milliseconds",
    "Deadline of Ghidra's startup on the first query: worker and JVM start, import, default auto-analysis and "
    "worker readiness.",
)
DECOMPILE = integer_setting(
    "REA_GHIDRA_DECOMPILE_TIMEOUT_MS",
    1,
    MAX_INT32,
    30_000,
    "milliseconds",
    "Deadline of one DecompInterface call (procedure_pseudo_code).",
)
QUERY = integer_setting(
    "REA_GHIDRA_QUERY_TIMEOUT_MS", 1, MAX_INT32, 60_000, "milliseconds", "Deadline of one query once Ghidra is ready."
)
MAX_HEAP = integer_setting(
    "REA_GHIDRA_MAX_HEAP_MB", 256, 1_048_576, 2048, "MiB", "Maximum Java heap of the Ghidra worker's JVM (-Xmx)."
)


def _absolute(raw: str) -> str:
    if not os.path.isabs(raw):
        raise ValueError(raw)
    return raw


# Test-only: an executable that speaks the worker protocol in place of the pyghidra worker (tests/ghidra uses a
# fake engine with success/slow/exit/silent modes). Never set it in production: it makes `ghidra` available
# without Ghidra.
TEST_WORKER = SettingSpec(
    name="REA_GHIDRA_TEST_WORKER",
    constraint="an absolute path to an executable",
    parse=_absolute,
    description="TEST ONLY: a fake Ghidra worker executable (rea's own tests); never set in production.",
)
# Variables passed through to a test worker (its mode and recorded model), besides the ones rea always sets.
TEST_PREFIX: Final = "REA_GHIDRA_TEST_"

SETTINGS: tuple[SettingSpec, ...] = (STARTUP, DECOMPILE, QUERY, MAX_HEAP, TEST_WORKER)


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """The deadlines (milliseconds) and the heap cap one client runs with."""

    startup_ms: int = 330_000
    decompile_ms: int = 30_000
    query_ms: int = 60_000
    max_heap_mb: int = 2048
    # How long close() waits after SIGTERM before SIGKILL: the JVM runs its shutdown hooks in between.
    grace_ms: int = 5_000


def limits_from_env(env: Mapping[str, str] | None = None) -> Limits:
    """The limits from the environment; an invalid value is ``configuration_invalid`` naming it."""
    return Limits(
        startup_ms=STARTUP.read(env),
        decompile_ms=DECOMPILE.read(env),
        query_ms=QUERY.read(env),
        max_heap_mb=MAX_HEAP.read(env),
    )


def fake_worker_path(env: Mapping[str, str] | None = None) -> str | None:
    value = TEST_WORKER.read(env)
    return value if isinstance(value, str) else None
