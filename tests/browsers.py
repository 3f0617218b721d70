"""Browser processes the tests started and left behind, found in /proc by the private HOME rea gives a browser.

Used as a module-scoped check wherever tests launch Chromium (the browser tests, the server shutdown tests), so
a leak fails the module that caused it, naming each process, rather than the end of the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rea.process import procfs
from tests.waiting import WaitTimeout
from tests.waiting import wait_for

MARK = b"/rea-chromium-"
# Long enough for a browser tree killed on a loaded two-core machine to finish exiting.
SETTLE_S = 30.0


def _line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read(240).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def browser_processes() -> dict[tuple[int, int], str]:
    """Live processes whose HOME is a private directory rea.process made for a browser: (pid, start) -> a
    description (state, parent, session and command line)."""
    found: dict[tuple[int, int], str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if any(v.startswith(b"HOME=") and MARK in v for v in env.split(b"\0")):
            info = procfs.read(int(entry))
            if info is not None and info.state != "Z":
                found[(info.pid, info.start)] = (
                    f"pid {info.pid} state {info.state} ppid {info.ppid} sid {info.sid}: {_line(info.pid)}"
                )
    return found


def check_none_left(before: dict[tuple[int, int], str], where: str) -> None:
    """Wait until no browser process started since ``before`` remains; fail naming those that do."""
    try:
        wait_for(lambda: not browser_processes().keys() - before.keys(), "no browser process left", timeout_s=SETTLE_S)
    except WaitTimeout:
        left = browser_processes()
        named = [left[k] for k in sorted(left.keys() - before.keys())]
        pytest.fail(f"{where} left {len(named)} browser process(es) after {SETTLE_S:g} s:\n" + "\n".join(named))


@pytest.fixture(scope="module")
def no_browser_left() -> Iterator[None]:
    """After this module's tests, no Chromium process they started remains."""
    before = browser_processes()
    yield
    check_none_left(before, "this module")
