"""The hopper provider's settings: declared to the kernel (validated at startup), read at open."""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec

from rea.plugin import ANSWER_OPERATIONS
from rea.plugin import MAX_INT32
from rea.plugin import SettingSpec
from rea.plugin import integer_setting

# What the bridge answers: the engine-neutral answers over its records, and the notebook's annotations at an address.
OPERATIONS: tuple[str, ...] = (*ANSWER_OPERATIONS, "address_annotations")

STARTUP = integer_setting(
    "REA_HOPPER_STARTUP_TIMEOUT_MS",
    1,
    MAX_INT32,
    120_000,
    "milliseconds",
    "Deadline of Hopper's startup on the first query: launch, loading, background analysis and bridge readiness.",
)
REQUEST = integer_setting(
    "REA_HOPPER_REQUEST_TIMEOUT_MS",
    1,
    MAX_INT32,
    30_000,
    "milliseconds",
    "Deadline of one bridge request once Hopper is ready.",
)


def _absolute(raw: str) -> str:
    if not os.path.isabs(raw):
        raise ValueError(raw)
    return raw


def _one(raw: str) -> bool:
    if raw != "1":
        raise ValueError(raw)
    return True


LAUNCHER = SettingSpec(
    name="HOPPER_LAUNCHER_PATH",
    constraint="an absolute path to Hopper's command-line launcher",
    parse=_absolute,
    description="Hopper's launcher (default: the standard app location).",
)
# Test-only: lifts the macOS-only host check so rea's tests can drive a fake Hopper launcher on Linux.
TEST_ANY_HOST = SettingSpec(
    name="REA_HOPPER_TEST_ANY_HOST",
    constraint="exactly 1",
    parse=_one,
    default=False,
    description="TEST ONLY: accept any host for a fake Hopper launcher; never set it in production.",
)
# Variables passed through to a fake launcher (its mode), besides the ones rea always sets.
TEST_PREFIX = "REA_HOPPER_TEST_"

SETTINGS: tuple[SettingSpec, ...] = (STARTUP, REQUEST, LAUNCHER, TEST_ANY_HOST)


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    startup_ms: int = 120_000
    request_ms: int = 30_000
    # How long close() waits for the bridge's shutdown acknowledgement, then for the process after SIGTERM.
    shutdown_ms: int = 5_000
    grace_ms: int = 3_000


def limits_from_env(env: Mapping[str, str] | None = None) -> Limits:
    return Limits(startup_ms=STARTUP.read(env), request_ms=REQUEST.read(env))
