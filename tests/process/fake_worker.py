"""A tiny worker for the kernel's process tests: each route provokes one behaviour of a real engine."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from rea.errors import ReaError
from rea.process import frames
from rea.process.worker import Reporter
from rea.process.worker import Result
from rea.process.worker import serve


def echo(params: dict[str, Any], _r: Reporter) -> Any:
    return {
        "echo": params,
        "pid": os.getpid(),
        "home": os.environ.get("HOME"),
        "tmp": os.environ.get("TMPDIR"),
        "cwd": os.getcwd(),
        "cache": os.environ.get("RTDB_BASE"),
    }


def sleep(params: dict[str, Any], r: Reporter) -> Any:
    for i in range(int(params.get("steps", 10))):
        r.progress(f"step {i}")
        time.sleep(float(params.get("step_s", 0.1)))
    return {"slept": True}


def die(params: dict[str, Any], _r: Reporter) -> Any:
    os.kill(os.getpid(), int(params.get("signal", signal.SIGKILL)))
    time.sleep(5)
    return None


def escape(params: dict[str, Any], _r: Reporter) -> Any:
    """Fork a grandchild that leaves the session, as a daemonizing engine would."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(60)
        os._exit(0)
    return {"grandchild": pid}


def child(params: dict[str, Any], _r: Reporter) -> Any:
    """Fork a child that stays in the session and ignores SIGTERM."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
        os._exit(0)
    return {"child": pid}


def fail(params: dict[str, Any], _r: Reporter) -> Any:
    if params.get("typed"):
        raise ReaError("unsupported_target", "the input is not what this engine reads", details={"why": "fake"})
    raise ValueError("internal detail that must not reach the caller")


def garbage(params: dict[str, Any], r: Reporter) -> Any:
    """Write a frame header announcing more than the caller accepts."""
    os.write(r.out_fd, frames.HEADER.pack(0x7FFFFFFF))
    time.sleep(5)
    return None


def threads(params: dict[str, Any], _r: Reporter) -> Any:
    """Start threads until one cannot get a stack, as an engine's thread pool does under an address-space cap."""
    import threading

    started = []
    for _ in range(int(params.get("count", 10_000))):
        t = threading.Thread(target=time.sleep, args=(5,), daemon=True)
        t.start()
        started.append(t)
    return {"started": len(started)}


def big(params: dict[str, Any], _r: Reporter) -> Any:
    return Result(normalized="x" * int(params["size"]), limitations=["big"])


ROUTES = {
    "echo": echo,
    "sleep": sleep,
    "die": die,
    "escape": escape,
    "child": child,
    "fail": fail,
    "garbage": garbage,
    "big": big,
    "threads": threads,
}

if __name__ == "__main__":
    sys.exit(serve(ROUTES))
