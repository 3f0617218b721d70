"""What the host's process table says about a process: parent, group, session, start time (Linux /proc)."""

from __future__ import annotations

import os
from typing import NamedTuple


class ProcInfo(NamedTuple):
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    # Clock ticks since boot at which the process started: with the pid, it names one process for good.
    start: int


def available() -> bool:
    return os.path.isdir("/proc/self")


def read(pid: int) -> ProcInfo | None:
    """One process's entry, or None when it is gone (or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses; the fields after the last ")" are fixed.
    fields = raw[raw.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return ProcInfo(
        pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]), state=fields[0], start=int(fields[19])
    )


def scan() -> dict[int, ProcInfo]:
    """Every visible process, keyed by pid."""
    table: dict[int, ProcInfo] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            info = read(int(entry))
            if info is not None:
                table[info.pid] = info
    return table


def descendants(pid: int, table: dict[int, ProcInfo], limit: int = 4096) -> list[ProcInfo]:
    """The live process tree under ``pid`` (children, their children, ...), at most ``limit`` entries."""
    children: dict[int, list[ProcInfo]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info)
    out: list[ProcInfo] = []
    stack = list(children.get(pid, []))
    while stack and len(out) < limit:
        info = stack.pop()
        out.append(info)
        stack.extend(children.get(info.pid, []))
    return out


def same_process(info: ProcInfo) -> bool:
    """True while the process ``info`` describes is alive (same pid and start time) and not a zombie."""
    now = read(info.pid)
    return now is not None and now.start == info.start and now.state != "Z"
