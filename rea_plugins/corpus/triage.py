"""triage_corpus: walk the inputs, skip what the index already holds, analyse the rest, record each in a transaction."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from typing import Literal

import msgspec

from rea.plugin import CallContext
from rea.plugin import Evidence
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import __version__
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import leftovers
from rea.plugin import read_regular
from rea_plugins.corpus import schedule
from rea_plugins.corpus.analyse import Options
from rea_plugins.corpus.index import Index
from rea_plugins.corpus.model import BinaryOutcome
from rea_plugins.corpus.model import CorpusTriage
from rea_plugins.corpus.model import FailureRow
from rea_plugins.corpus.walk import Item
from rea_plugins.corpus.walk import Walk

PROVIDER = ProviderIdentity(id="corpus", name="rea corpus triage (Dask, SQLite)", version=__version__)
MAX_FAILURES_LISTED = 50
POLICIES: tuple[Literal["fail", "record-and-continue"], ...] = ("fail", "record-and-continue")
STAGING_PREFIX = ".rea-corpus-"
# A rules file is source text; past this it is refused before it is read (and shipped to every worker).
MAX_RULES_BYTES = 16 * 1024 * 1024


def profile() -> ev_mod.AnalysisProfile:
    from importlib.metadata import version

    return ev_mod.make_profile(PROVIDER, {"dask": version("dask"), "sqlite": __import__("sqlite3").sqlite_version})


def parse_memory(value: str | int | None) -> int | None:
    """``--memory-limit``: bytes, or a size such as ``2GB`` / ``512MiB`` (Dask's parse_bytes)."""
    if value in (None, "", 0, "0"):
        return None
    from dask.utils import parse_bytes

    try:
        limit = int(parse_bytes(value))
    except (ValueError, TypeError):
        limit = 0
    if limit < 64_000_000:
        raise invalid_request(
            f"memory_limit {value!r} is not a size of at least 64MB",
            [issue("memory_limit", "invalid_value", "expected a size such as 2GB")],
        )
    return limit


class Progress:
    """The run's counts as progress updates: MCP progress notifications, and the CLI's terminal bar (rea.cli.progress)
    draws the same updates."""

    def __init__(self, ctx: CallContext, total: int) -> None:
        self.ctx = ctx
        self.total = total
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def step(self, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        rate = self.rate()
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        self.ctx.progress(
            f"triage_corpus: {self.done}/{self.total} binaries, {self.failed} failed, {rate:.1f} files/s, "
            f"ETA {eta:.0f} s",
            done=self.done,
            total=self.total,
        )

    def close(self) -> None:
        """Nothing to release: kept for the run's finally."""


def handle(call: ToolCall) -> Evidence:
    args = call.args
    ctx = call.ctx
    roots = arg_strs(args, "paths") or []  # paths and index are required by the schema
    index_path = arg_str(args, "index", "")
    corpus = arg_str(args, "corpus", "default")
    scheduler = schedule.check_scheduler(arg_str(args, "scheduler", "local"))
    workers = arg_int(args, "workers") or os.cpu_count() or 1
    memory_limit = parse_memory(arg_str(args, "memory_limit"))
    provider = arg_str(args, "analysis_provider", "native")
    yara_rules = arg_str(args, "yara_rules")
    policy = arg_choice(args, "integrity_policy", POLICIES, "fail")
    if provider != "auto" and provider not in call.session.registry.providers:
        raise invalid_request(
            f"no provider {provider!r} is registered",
            [
                issue(
                    "analysis_provider",
                    "invalid_value",
                    "unknown provider",
                    known=sorted(call.session.registry.providers),
                )
            ],
        )
    for root in roots:
        if not os.path.exists(root):
            raise invalid_request(f"{root} does not exist", [issue("paths", "invalid_value", "no such file or folder")])
    yara_source = None
    if yara_rules is not None:
        yara_rules = os.path.abspath(yara_rules)
        yara_source = _read_rules(yara_rules)
    options = Options(
        provider=provider,
        max_strings=arg_int(args, "max_strings", 2000),
        max_procedures=arg_int(args, "max_procedures", 5000),
        yara_rules=yara_rules,
        yara_source=yara_source,
    )
    started = time.monotonic()
    index = Index(index_path, create=True)
    staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=os.path.dirname(os.path.abspath(index_path)) or ".")
    # Archive members are staged here (hundreds of MB for a large corpus): marked and noted as this server's, so a
    # start after it was killed mid-run removes the folder once it proves this process gone.
    leftovers.mark(staging)
    noted = contextlib.ExitStack()
    noted.enter_context(leftovers.staging_noted(staging, STAGING_PREFIX))
    failures: list[FailureRow] = []
    try:
        ctx.progress("triage_corpus: walking the inputs")
        walk = Walk(
            call.session.registry,
            provider,
            staging,
            policy,
            ctx,
            on_file=lambda n: ctx.progress(f"triage_corpus: walking, {n} files seen"),
        )
        for root in roots:
            walk.add(root)
        counts = walk.counts
        index.add_paths(corpus, [(p, it.sha256) for it in walk.items.values() for p in it.paths])
        for prob in walk.problems:
            failures.append(FailureRow(sha256=prob.sha256, paths=[prob.path], code=prob.code, message=prob.message))
        statuses = index.statuses()
        todo = [it for it in walk.items.values() if statuses.get(it.sha256) not in ("done", "failed")]
        counts.already_indexed = len(walk.items) - len(todo)
        # Large files first: the longest tasks start early, the tail is short.
        todo.sort(key=lambda it: -it.size)
        progress = Progress(ctx, len(todo))

        def on_result(item: Item, result: BinaryOutcome) -> None:
            ok = result.status == "done" and result.evidence is not None
            if ok and result.evidence is not None:
                index.record_done(result.evidence)
                counts.analysed += 1
            else:
                index.record_failed(
                    item.sha256, item.format, item.architecture, item.size, str(result.code),
                    str(result.message), result.attempts,
                )  # fmt: skip
                counts.failed += 1
                if len(failures) < MAX_FAILURES_LISTED:
                    failures.append(
                        FailureRow(
                            sha256=item.sha256,
                            paths=list(item.paths),
                            code=str(result.code),
                            message=str(result.message),
                            attempts=result.attempts,
                        )
                    )
            progress.step(not ok)

        def on_retry(item: Item, reason: str) -> None:
            counts.retried += 1
            ctx.progress(f"triage_corpus: retrying {item.paths[0]}: {reason}")

        try:
            schedule.run(
                todo,
                scheduler,
                options,
                ctx,
                on_result,
                on_retry,
                workers=workers,
                memory_limit=memory_limit,
                max_attempts=arg_int(args, "max_attempts", 3),
            )
        finally:
            progress.close()
    finally:
        index.close()
        shutil.rmtree(staging, ignore_errors=True)
        noted.close()
    elapsed = time.monotonic() - started
    done = counts.analysed + counts.failed
    limitations = []
    if scheduler not in ("local", "synchronous"):
        limitations.append(
            "Workers of a distributed scheduler read the files at the paths given: they share this file system."
        )
    result = CorpusTriage(
        index=os.path.abspath(index_path),
        corpus=corpus,
        scheduler=scheduler,
        workers=1 if scheduler == "synchronous" else workers,
        counts=counts,
        elapsed_ms=int(elapsed * 1000),
        files_per_s=round(done / elapsed, 2) if elapsed > 0 else 0.0,
        failures=failures,
        limitations=limitations,
    )
    ctx.finish(f"{counts.analysed} analysed, {counts.failed} failed, {counts.already_indexed} already indexed")
    params = {k: v for k, v in sorted(args.items())}
    return ev_mod.build(
        operation="triage_corpus",
        provider=PROVIDER,
        subject=None,
        analysis_profile=profile(),
        parameters=params,
        normalized_result=msgspec.to_builtins(result),
        limitations=["Each binary's record is its own Evidence in the index (query_corpus names it)."],
    )


def _read_rules(path: str) -> str:
    """The rules file's text, read through rea.files (a FIFO or device is refused, never waited on) and compiled
    once here so a syntax error is the caller's answer rather than every worker's failure."""
    import yara

    try:
        data = read_regular(path, MAX_RULES_BYTES, what="YARA rules file", field="yara_rules")
    except OSError as exc:
        raise _refused(path, f"cannot be read: {exc.strerror or 'unreadable'}", "invalid_value", "unreadable") from None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refused(path, f"is not UTF-8 text (byte {exc.start})", "invalid_format", "UTF-8 YARA source") from None
    try:
        yara.compile(source=source, includes=False)
    except yara.SyntaxError as exc:
        raise _refused(path, f"does not compile: {exc}", "invalid_format", "YARA syntax") from None
    except yara.Error as exc:
        raise _refused(path, f"cannot be read: {exc}", "invalid_value", "unreadable") from None
    return source


def _refused(path: str, why: str, code: Literal["invalid_value", "invalid_format"], problem: str) -> ReaError:
    """The rules file at ``path`` refused: ``why`` in the message, ``code`` and ``problem`` in its issue."""
    return invalid_request(f"yara_rules {path} {why}", [issue("yara_rules", code, problem)])
