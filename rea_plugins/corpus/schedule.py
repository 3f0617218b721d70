"""Run the per-binary analysis over Dask: the local process pool, one process (synchronous), or a cluster.

Each item's outcome is handed to ``on_result`` in this process as soon as it is known (the one writer of the
index). A worker that dies takes the items it was running with it: those are run again, up to ``max_attempts``,
then recorded failed with the reason. Nothing here builds a command line: workers get a path and options.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing
import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import msgspec

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import cancelled
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.corpus.analyse import Options
from rea_plugins.corpus.analyse import analyse
from rea_plugins.corpus.analyse import start_pool_worker
from rea_plugins.corpus.model import BinaryOutcome
from rea_plugins.corpus.walk import Item

ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")
ResultSink = Callable[[Item, BinaryOutcome], None]
RetrySink = Callable[[Item, str], None]


def check_scheduler(value: str) -> str:
    if value in ("local", "synchronous") or ADDRESS.match(value):
        return value
    raise invalid_request(
        f"scheduler must be local, synchronous or tcp://HOST:PORT, not {value!r}",
        [issue("scheduler", "invalid_value", "expected local, synchronous or a scheduler address")],
    )


def died(attempts: int, detail: str) -> BinaryOutcome:
    return BinaryOutcome(
        status="failed",
        code="execution_failure",
        message=f"the worker running it died {attempts} time(s) ({detail})",
        attempts=attempts,
    )


def run(
    items: list[Item],
    scheduler: str,
    options: Options,
    ctx: CallContext,
    on_result: ResultSink,
    on_retry: RetrySink,
    *,
    workers: int = 2,
    memory_limit: int | None = None,
    max_attempts: int = 3,
) -> None:
    if not items:
        return
    if scheduler == "synchronous":
        _run_dask(items, options, ctx, on_result, on_retry, None, 1, max_attempts, processes=False)
    elif scheduler == "local":
        _run_dask(items, options, ctx, on_result, on_retry, memory_limit, workers, max_attempts, processes=True)
    else:
        _run_distributed(items, scheduler, options, ctx, on_result)


# -- Dask's local schedulers: no server, no port -------------------------------------------------------------


def _run_dask(
    items: list[Item],
    options: Options,
    ctx: CallContext,
    on_result: ResultSink,
    on_retry: RetrySink,
    memory_limit: int | None,
    workers: int,
    max_attempts: int,
    *,
    processes: bool,
) -> None:
    # Dask's local schedulers are typed loosely: reached as Any.
    dask: Any = importlib.import_module("dask")
    Callback: Any = importlib.import_module("dask.callbacks").Callback
    dask_processes: Any = importlib.import_module("dask.multiprocessing")

    # Keys sort in the order given (largest first): Dask runs independent tasks in key order.
    by_key = {f"rea-corpus-{i:07d}-{it.sha256}": it for i, it in enumerate(items)}
    attempts = dict.fromkeys(by_key, 0)
    pending = list(by_key)
    barren = 0  # rounds in a row whose pool broke before any item ran
    while pending:
        ctx.check("corpus triage")
        started: set[str] = set()
        finished: set[str] = set()

        def pretask(key: Any, _dsk: Any, _state: Any, started: set[str] = started) -> None:
            if ctx.cancelled:
                raise cancelled("corpus triage")
            started.add(str(key))

        def posttask(key: Any, result: Any, _dsk: Any, _state: Any, _id: Any, finished: set[str] = finished) -> None:
            finished.add(str(key))
            attempts[str(key)] += 1
            on_result(by_key[str(key)], msgspec.structs.replace(result, attempts=attempts[str(key)]))

        graph = {key: (analyse, by_key[key].path, options) for key in pending}
        pool: ProcessPoolExecutor | None = None
        try:
            with Callback(pretask=pretask, posttask=posttask), dask.config.set({"chunksize": 1}):
                if processes:
                    pool = ProcessPoolExecutor(
                        max_workers=workers,
                        mp_context=multiprocessing.get_context("spawn"),
                        initializer=start_pool_worker,
                        initargs=(os.getpid(), memory_limit),
                    )
                    ctx.signal.on_cancel(functools.partial(_kill, pool))
                    dask_processes.get(graph, list(graph), num_workers=workers, pool=pool, chunksize=1)
                else:
                    dask.get(graph, list(graph))
            pending = []
        except BrokenProcessPool:
            if ctx.cancelled:
                raise cancelled("corpus triage") from None
            lost = started - finished
            barren = 0 if (lost or finished) else barren + 1
            if barren >= max_attempts:
                for key in pending:
                    if key not in finished:
                        on_result(by_key[key], died(barren, "the local pool's worker processes end as they start"))
                return
            retry: list[str] = []
            for key in pending:
                if key in finished:
                    continue
                if key in lost:
                    attempts[key] += 1
                    if attempts[key] >= max_attempts:
                        on_result(by_key[key], died(attempts[key], "a worker process of the local pool ended"))
                        continue
                    on_retry(by_key[key], "a worker process ended while analysing it")
                retry.append(key)
            pending = retry
        finally:
            if pool is not None:
                _kill(pool)


def _kill(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes (only this pool's) and release it without waiting for queued work."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.join(5)


# -- a running dask.distributed scheduler ------------------------------------------------------------------


def _run_distributed(
    items: list[Item], address: str, options: Options, ctx: CallContext, on_result: ResultSink
) -> None:
    try:
        distributed: Any = importlib.import_module("distributed")
        KilledWorker: Any = importlib.import_module("distributed.scheduler").KilledWorker
    except ImportError:
        raise ReaError(
            "capability_unavailable",
            "dask.distributed is not installed",
            remediation="pip install distributed (rea's dependency) in the environment that runs rea.",
        ) from None
    try:
        client = distributed.Client(address, timeout="5s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ReaError(
            "provider_unavailable",
            f"no Dask scheduler answers at {address} ({type(exc).__name__})",
            remediation="Start one (dask scheduler; dask worker ADDRESS), or use --scheduler local.",
            details={"scheduler": address},
        ) from None
    try:
        futures = {
            client.submit(analyse, it.path, options, key=f"rea-corpus-{it.sha256}", pure=False): it for it in items
        }
        remaining = set(futures)
        ctx.signal.on_cancel(lambda: client.cancel(list(remaining)))
        for fut in distributed.as_completed(list(futures), loop=client.loop):
            ctx.check("corpus triage")
            remaining.discard(fut)
            item = futures[fut]
            try:
                result = fut.result()
            except KilledWorker as exc:
                result = died(_failures(client), f"{type(exc).__name__}: {exc}"[:300])
            except Exception as exc:
                if ctx.cancelled:
                    raise cancelled("corpus triage") from None
                result = BinaryOutcome(status="failed", code="execution_failure", message=f"{type(exc).__name__}")
            on_result(item, result)
    finally:
        client.close(timeout=10)


def _failures(client: Any) -> int:
    """The scheduler's bound on worker deaths per task (distributed.scheduler.allowed-failures), plus one."""
    try:
        return int(client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures)) + 1
    except Exception:
        return 0
