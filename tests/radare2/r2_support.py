"""Helpers for the radare2 provider tests: operations through their tools, worker processes."""

from __future__ import annotations

import os
from typing import Any

from rea.context import CallContext
from rea.session import Session
from rea.testing import call_tool, result_of


def op(session: Session, operation: str, **params: Any) -> Any:
    """The normalized result of one operation: through its tool when one is registered, else the provider."""
    if operation in session.registry.tools:
        return result_of(session, operation, params)
    return session.execute(operation, params, CallContext()).normalized


def open_r2(session: Session, path: str) -> None:
    call_tool(session, "open_binary", {"path": path, "provider_id": "radare2"})


def owned_alive(pid: int) -> bool:
    """Whether ``pid`` is still a child of this test process (zombies included)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return False
    return int(stat[stat.rfind(")") + 2 :].split()[1]) == os.getpid()


def worker_pid(session: Session) -> int | None:
    client: Any = session._client
    return None if client is None else client.worker_pid


def cancel_on(phase: str) -> CallContext:
    """A context whose caller cancels as soon as the provider reports ``phase``."""

    def sink(_: float, _total: float | None, message: str) -> None:
        if phase in message:
            ctx.signal.cancel()

    ctx = CallContext(sink=sink)
    return ctx
