"""What the Ghidra and Hopper suites share about their fake engines: the executable wrapper that runs a fake
script with this interpreter, the live processes running it, a session closed after each test, and a query held
on its own thread while the fake starts."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from tests.waiting import poll_until


def running(script: Path) -> list[int]:
    """Live processes running ``script`` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if str(script).encode() in argv and state != b"Z":
            found.append(int(entry))
    return found


def wrapper(path: Path, script: Path) -> Path:
    """An executable at ``path`` running ``script`` with this interpreter (what a launcher setting points at)."""
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    path.chmod(0o755)
    return path


def query_while_the_fake_starts(
    query: Callable[[], object], fakes: Callable[[], list[int]]
) -> tuple[threading.Thread, list[BaseException]]:
    """Runs ``query`` on its own thread and waits (at most 20 s) until a fake runs; returns the thread and the
    list that gets what the query raised."""
    seen: list[BaseException] = []

    def run() -> None:
        try:
            query()
        except BaseException as exc:
            seen.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    poll_until(fakes, stop=lambda: False, timeout_s=20)
    return thread, seen
