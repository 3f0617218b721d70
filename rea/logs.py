"""rea's logs: one ``rea`` logger, written to stderr or a file (``-v``, ``--log-file``) and, during an MCP tool
call, sent to that call's client as MCP ``notifications/message``.

The logger itself is always open at DEBUG so a record can reach an MCP client that asked for debug even when the
terminal shows only warnings; each destination filters by its own level. A tool call's records find their client
through a context variable that the server sets in the call's worker thread (AnyIO copies the context into it),
so two connections never see each other's logs.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

LOGGER = logging.getLogger("rea")

McpLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# Python's levels to the MCP (syslog) levels, and back for a client's setLevel.
_TO_MCP: tuple[tuple[int, McpLevel], ...] = (
    (logging.CRITICAL, "critical"),
    (logging.ERROR, "error"),
    (logging.WARNING, "warning"),
    (logging.INFO, "info"),
    (logging.DEBUG, "debug"),
)
FROM_MCP: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}

# Where this call's records go besides the terminal: (MCP level, logger name, message) -> None.
Forward = Callable[[McpLevel, str, str], None]
_FORWARD: ContextVar[Forward | None] = ContextVar("rea_log_forward", default=None)

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def mcp_level(levelno: int) -> McpLevel:
    for threshold, name in _TO_MCP:
        if levelno >= threshold:
            return name
    return "debug"


class _ForwardHandler(logging.Handler):
    """Hands each record to the forwarder of the call it was logged in (none outside a call)."""

    def emit(self, record: logging.LogRecord) -> None:
        forward = _FORWARD.get()
        if forward is None:
            return
        try:
            forward(mcp_level(record.levelno), record.name, record.getMessage())
        except Exception:  # a client gone away (a cancelled call) must not fail the work that logged
            pass


_FORWARDER = _ForwardHandler(logging.DEBUG)
_OUTPUT: list[logging.Handler] = []


def verbosity_level(verbosity: int) -> int:
    """0: warnings and errors; 1 (-v): info; 2 or more (-vv): debug."""
    return logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG


def configure(verbosity: int = 0, log_file: str | None = None) -> None:
    """Send the ``rea`` logger to stderr (or ``log_file``, appended) at the level ``verbosity`` says.

    Called once per process by the ``rea`` command; calling again replaces the destination."""
    LOGGER.setLevel(logging.DEBUG)
    LOGGER.propagate = False
    if _FORWARDER not in LOGGER.handlers:
        LOGGER.addHandler(_FORWARDER)
    for old in _OUTPUT:
        LOGGER.removeHandler(old)
        old.close()
    _OUTPUT.clear()
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8") if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setLevel(verbosity_level(verbosity))
    handler.setFormatter(logging.Formatter(FORMAT))
    LOGGER.addHandler(handler)
    _OUTPUT.append(handler)


@contextmanager
def forwarding(forward: Forward) -> Iterator[None]:
    """Within this block (and threads started from its context), records also go to ``forward``."""
    if _FORWARDER not in LOGGER.handlers:
        LOGGER.setLevel(logging.DEBUG)
        LOGGER.addHandler(_FORWARDER)
    token = _FORWARD.set(forward)
    try:
        yield
    finally:
        _FORWARD.reset(token)
