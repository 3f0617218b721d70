"""The CLI's progress bar: the same ``ctx.progress`` updates an MCP client gets, drawn with rich on stderr.

Every tool command's call context gets this sink, so whatever reports progress (an index, a corpus run, a
comparison) shows a bar with its count, total and ETA, without code of its own. Drawn only on a terminal (or with
``REA_PROGRESS=always``; ``never`` turns it off), so a pipe or a log never holds bar frames; rich honours
``NO_COLOR``. An update without a total (a phase whose size is unknown) shows as a pulsing bar.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from types import TracebackType
from typing import Any
from typing import TextIO

# CallContext appends the call's elapsed time to each message; the bar has its own clock.
_ELAPSED = re.compile(r" \(elapsed \d+ ms\)$")


def wanted(stream: TextIO | None = None) -> bool:
    """Whether to draw: REA_PROGRESS=always|never, else (auto) when the stream is a terminal."""
    setting = os.environ.get("REA_PROGRESS", "auto")
    if setting in ("always", "never"):
        return setting == "always"
    # Decided without importing rich (a short command that draws nothing should not pay for it).
    stream = stream or sys.stderr
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class TerminalProgress:
    """A context manager whose ``sink`` is a ``rea.context.ProgressSink`` drawing one rich task."""

    def __init__(self, stream: TextIO | None = None, *, force: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self.enabled = wanted(self._stream) if force is None else force
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()

    def __enter__(self) -> TerminalProgress:
        if not self.enabled:
            return self
        from rich.console import Console
        from rich.progress import BarColumn
        from rich.progress import MofNCompleteColumn
        from rich.progress import Progress
        from rich.progress import SpinnerColumn
        from rich.progress import TextColumn
        from rich.progress import TimeElapsedColumn
        from rich.progress import TimeRemainingColumn

        always = os.environ.get("REA_PROGRESS") == "always"
        console = Console(file=self._stream, force_terminal=True if always else None)
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            refresh_per_second=4,
        )
        self._bar.start()
        self._task = self._bar.add_task("starting", total=None)
        return self

    def sink(self, progress: float, total: float | None, message: str) -> None:
        if self._bar is None:
            return
        with self._lock:
            text = _ELAPSED.sub("", message)
            self._bar.update(self._task, description=text, completed=progress, total=total)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
