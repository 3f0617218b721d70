"""Parsing in parallel: an owned worker process parses batches of scripts while this process parses others.

Both take scripts from the front of the list; results are admitted strictly in list order (``take``), so the graph is
the serial one byte for byte. Each side reads its scripts without accounting them; ``take`` accounts them in order,
as the serial path reads them (a script beyond max_modules is parsed and dropped, never accounted). A worker that
fails, hangs or answers something else costs nothing but time: its batch and the rest are parsed here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea_plugins.javascript import inputs
from rea_plugins.javascript import syntax
from rea_plugins.javascript.inputs import InputFile
from rea_plugins.javascript.model import Integrity
from rea_plugins.javascript.model import Limits
from rea_plugins.javascript.model import Skipped
from rea_plugins.javascript.parsed import ParsedFile
from rea_plugins.javascript.parsed import parse_file
from rea_plugins.javascript.settings import WORKERS

# Below this much script a worker's start (about 0.3 s: Python, tree-sitter and three grammars) is not repaid.
MIN_BYTES = 4 << 20
# A worker's batch: enough to keep its round trip (a frame each way) negligible, small enough that the last one
# does not leave this process waiting long and that a failed one costs little to parse again here.
BATCH_BYTES = 256 << 10
BATCH_FILES = 64
# A batch's deadline: far above the serial rate (about 3 MiB/s on the npm tree), so only a hung worker meets it.
DEADLINE_S = 30.0
DEADLINE_BYTES_PER_S = 128 << 10
MAX_FRAME_BYTES = 1 << 30

WORKER_MODULE = "rea_plugins.javascript.worker"

# What a script's turn finds: why it could not be read, or its size and records; None: parse it when its turn comes.
Done = Skipped | tuple[int, ParsedFile] | None
Take = Callable[[InputFile, syntax.Language, Done], None]


class ScriptIn(msgspec.Struct, frozen=True, array_like=True):
    """One script a worker reads (``source``, a directory's file) or is given (``data``, an archive's) and parses."""

    path: str
    integrity: Integrity
    language: syntax.Language
    source: str | None
    size: int
    data: bytes


class ScriptOut(msgspec.Struct, frozen=True, array_like=True):
    """What a worker made of one script: why it could not be read, or the size it read and the records."""

    skipped: Skipped | None
    read: int
    parsed: ParsedFile | None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers_for(scripts: list[tuple[InputFile, syntax.Language]]) -> int:
    """How many parse workers pay: one a free processor, none for an input too small to repay their start."""
    workers = min(int(WORKERS.read()), _cpus() - 1)
    if workers <= 0:
        return 0
    total = 0
    for f, _ in scripts:
        total += _size(f)
        if total >= MIN_BYTES:
            return workers
    return 0


def _size(f: InputFile) -> int:
    return f.size if f.source is not None else len(f.data)


class _Parallel:
    def __init__(
        self, scripts: list[tuple[InputFile, syntax.Language]], limits: Limits, ctx: CallContext, take: Take
    ) -> None:
        self.scripts = scripts
        self.limits = limits
        self.ctx = ctx
        self.take = take
        self.lock = threading.Lock()
        self.next = 0  # the first script nobody has claimed
        self.done = 0  # scripts admitted (in order) so far
        # index -> what its turn finds (None: its worker batch failed; it is read and parsed at its turn).
        self.results: dict[int, Done] = {}
        self.stopped = False
        self.changed = threading.Event()

    def claim(self, files: int, budget: int) -> range:
        """The next scripts nobody has claimed: at most ``files``, and ``budget`` bytes unless one is larger."""
        with self.lock:
            start = end = self.next
            size = 0
            while end < len(self.scripts) and end - start < files:
                size += _size(self.scripts[end][0])
                if end > start and size > budget:
                    break
                end += 1
            self.next = end
            return range(start, end)

    def progress(self, _elapsed: float = 0.0) -> str:
        return f"parsing: {self.done}/{len(self.scripts)} files done"

    def admit_ready(self) -> None:
        """Admit the scripts whose results are in, in order; parse here any a worker failed."""
        while True:
            with self.lock:
                if self.done not in self.results:
                    return
                result = self.results.pop(self.done)
            f, language = self.scripts[self.done]
            self.scripts[self.done] = (_DONE, language)  # its bytes (an archive's) go with it
            self.ctx.check("parsing JavaScript")
            self.take(f, language, result)
            self.done += 1
            self.ctx.progress(self.progress(), done=self.done, total=len(self.scripts))

    # -- this process's share -------------------------------------------------------------

    def run_here(self, helpers: list[threading.Thread]) -> None:
        """Parse scripts here, one at a time, admitting results as they come; then wait for the workers' last."""
        while True:
            self.admit_ready()
            batch = self.claim(1, 0)
            if not batch:
                break
            index = batch.start
            f, language = self.scripts[index]
            fetched = inputs.fetch(f, self.limits)
            done: Done = (
                fetched
                if isinstance(fetched, Skipped)
                else (len(fetched), parse_file(f.path, f.integrity, language, fetched, self.ctx))
            )
            del fetched
            with self.lock:
                self.results[index] = done
        while any(h.is_alive() for h in helpers):
            self.changed.wait(0.05)
            self.changed.clear()
            self.admit_ready()
        self.admit_ready()

    # -- the worker's share ---------------------------------------------------------------

    def run_worker(self, channel: Any) -> None:
        """Send batches to a worker until none is left or it fails; a failed batch is parsed here instead."""
        batch = range(0)
        try:
            while not self.stopped:
                batch = self.claim(BATCH_FILES, BATCH_BYTES)
                if not batch:
                    return
                self.ctx.check("parsing JavaScript")
                results = self.extract(channel, batch)
                with self.lock:
                    self.results.update(results)
                self.changed.set()
                batch = range(0)
        except Exception:  # a crash, a hang, a reply that does not decode: this batch is parsed here instead
            pass
        finally:
            with self.lock:
                for index in batch:
                    self.results.setdefault(index, None)
            self.changed.set()

    def extract(self, channel: Any, batch: range) -> dict[int, Done]:
        """Have the worker read and parse a batch's scripts: what each one's turn finds."""
        sent = [
            ScriptIn(path=f.path, integrity=f.integrity, language=language, source=f.source, size=f.size, data=f.data)
            for f, language in (self.scripts[index] for index in batch)
        ]
        size = sum(_size(self.scripts[index][0]) for index in batch)
        reply = channel.request(
            "extract",
            {"limits": self.limits, "scripts": sent},
            self.ctx,
            deadline_s=DEADLINE_S + size / DEADLINE_BYTES_PER_S,
            phase="parsing JavaScript",
            heartbeat=self.progress,
        )
        del sent
        answers = reply.result(list[ScriptOut])
        if len(answers) != len(batch):
            raise ValueError("the worker answered for other scripts")
        out: dict[int, Done] = {}
        for index, answer in zip(batch, answers, strict=True):
            path = self.scripts[index][0].path
            if answer.skipped is not None and answer.skipped.path == path:
                out[index] = answer.skipped
            elif answer.parsed is not None and answer.parsed.path == path and answer.parsed.units:
                out[index] = (answer.read, answer.parsed)
            else:
                raise ValueError("the worker answered for other scripts")
        return out


_DONE = InputFile(path="", data=b"", integrity="not-declared")


def parse(
    scripts: list[tuple[InputFile, syntax.Language]],
    limits: Limits,
    ctx: CallContext,
    take: Take,
    workers: int,
    lineage: list[JSONObject] | None = None,
) -> None:
    """Parse ``scripts`` here and in ``workers`` workers, admitting each through ``take`` in order (as the serial
    path does); ``lineage`` receives the workers' observations."""
    from rea.plugin import WorkerChannel
    from rea.plugin import python_worker_spec

    run = _Parallel(scripts, limits, ctx, take)
    spec = python_worker_spec(WORKER_MODULE, resource="javascript-parse-worker", owner="javascript")
    channels = [
        WorkerChannel(spec, label="javascript", max_frame_bytes=MAX_FRAME_BYTES, stateful=False) for _ in range(workers)
    ]
    helpers = [
        threading.Thread(target=run.run_worker, args=(channel,), name="rea-javascript-parse", daemon=True)
        for channel in channels
    ]
    for helper in helpers:
        helper.start()
    try:
        run.run_here(helpers)
        if run.done != len(scripts):
            # Only a bug leaves a script unadmitted: never return a graph that silently lacks it.
            raise ReaError(
                "execution_failure",
                f"parsing in parallel admitted {run.done} of {len(scripts)} scripts",
                details={"phase": "parsing JavaScript"},
            )
    finally:
        run.stopped = True
        for channel in channels:
            channel.close()
        for helper in helpers:
            helper.join()
        if lineage is not None:
            for channel in channels:
                lineage.extend(channel.lineage())
