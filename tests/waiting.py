"""Waiting for what another process or thread is still making: one helper for every poll in the suite.

A test that polls a file, an index, a socket or a process that someone else is creating must read "not there
yet" as "not yet", never as a failure: the file exists before its schema does, a socket path before it listens,
a child before its command line is readable. ``wait_for`` asks ``probe`` again until it answers something truthy,
treats the errors named in ``pending`` as "not yet", and fails with ``what`` (and the last error) at its deadline.
The deadline is generous on purpose: on a loaded two-core machine a start-up can take many times its usual time,
and a passing poll returns as soon as its condition holds, so a long deadline costs a green run nothing.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

import psutil

from rea.process import procfs

T = TypeVar("T")

# What "not there yet" looks like for the things tests poll: a file or socket not made yet, an SQLite file whose
# tables are not created yet (or is locked by its writer), a process that ended or is not readable yet.
NOT_YET: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    ConnectionRefusedError,
    sqlite3.OperationalError,
    psutil.NoSuchProcess,
    psutil.ZombieProcess,
    ProcessLookupError,
)

DEFAULT_TIMEOUT_S = 60.0


class WaitTimeout(AssertionError):
    """The condition did not hold within the deadline (an AssertionError, so pytest reports it as a failure)."""


def wait_for(
    probe: Callable[[], T | None],
    what: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.05,
    pending: tuple[type[BaseException], ...] = NOT_YET,
) -> T:
    """The first truthy value ``probe`` returns; errors in ``pending`` mean "not yet"; ``WaitTimeout`` at the
    deadline, naming ``what`` and the last "not yet" error."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while True:
        try:
            value = probe()
        except pending as exc:
            last, value = exc, None
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f" (last: {type(last).__name__}: {last})" if last is not None else ""
            raise WaitTimeout(f"not within {timeout_s:g} s: {what}{detail}")
        time.sleep(interval_s)


def poll_until(
    probe: Callable[[], T | None],
    *,
    stop: Callable[[], bool],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.05,
    pending: tuple[type[BaseException], ...] = NOT_YET,
) -> T | None:
    """Like ``wait_for`` for a background thread that may be told to give up: ``None`` once ``stop()`` is true or
    the deadline passes (the test's own assertion then says what was missing), never an exception that would end
    the thread silently."""
    deadline = time.monotonic() + timeout_s
    while not stop() and time.monotonic() < deadline:
        try:
            value = probe()
        except pending:
            value = None
        if value:
            return value
        time.sleep(interval_s)
    return None


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie counts as exited: its parent has yet to reap it)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def still_running(pids: list[int]) -> list[int]:
    """The pids still running (a zombie has ended: this container's pid 1 may never reap it)."""
    return [p for p in pids if (info := procfs.read(p)) is not None and info.state != "Z"]
