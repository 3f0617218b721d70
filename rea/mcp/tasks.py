"""MCP Tasks (protocol 2025-11-25): a long ``tools/call`` answered at once with a task the client polls.

The pinned SDK defines the Tasks types (``mcp_types``) but dispatches none of them, so rea serves them with the SDK's
own mechanisms: ``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/list`` are request handlers added to the
lowlevel ``Server`` (``add_request_handler``), and a task-augmented ``tools/call`` is taken by a ``Server.middleware``
before the per-version result sieve (which admits only a ``CallToolResult`` for ``tools/call``), and answered with a
``CreateTaskResult``. The call itself runs in the MCP session's task group with the very handler a direct call runs
(``ReaServer._call_tool``): the same Evidence, the same cancellation signal (``tasks/cancel`` sets the call's
``CancelSignal``, as ``notifications/cancelled`` does), its progress messages as the task's ``statusMessage``.

Each MCP session (stdio: the one; HTTP: each ``Mcp-Session-Id``) has its own ``SessionTasks``, made in rea's lifespan,
so one session never sees another's tasks; they end with the session. A task's result is kept ``ttl`` ms from its
creation (``DEFAULT_TTL_MS`` unless the client asks for another, at most ``MAX_TTL_MS``) and at least
``KEPT_AFTER_END_S`` after it ends, at most ``MAX_KEPT`` per session; then it is forgotten and a request naming it gets
the typed "no such task" error. Only tools whose definition says so (``ToolFacts.task_support``) take a task.
"""

from __future__ import annotations

import contextvars
import dataclasses
import itertools
import time
import uuid
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from contextlib import asynccontextmanager
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server.context import CallNext
from mcp.server.context import HandlerResult
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from rea.context import CancelSignal
from rea.context import ProgressSink
from rea.errors import ReaError

# The revisions whose wire carries Tasks in the core protocol; 2026-07-28 moved them to an extension (SEP-2663)
# whose types the pinned SDK does not define, so a task-augmented call there runs as a direct call.
TASK_VERSIONS = frozenset({"2025-11-25"})
DEFAULT_TTL_MS = 3_600_000  # an hour: long enough for a client to come back to a minutes-long analysis
MAX_TTL_MS = 24 * 3_600_000
# A result that ends after its ttl is still kept this long, so a run longer than its ttl can be collected.
KEPT_AFTER_END_S = 60.0
MAX_KEPT = 32  # tasks one session keeps, finished ones forgotten oldest first
MAX_WORKING = 8  # tasks one session may have running at once
POLL_INTERVAL_MS = 1000
LIST_PAGE = 50
# A cancelled call that does not stop within this long is abandoned (its thread is left to notice the signal).
CANCEL_GRACE_S = 30.0
RELATED_TASK = "io.modelcontextprotocol/related-task"

TaskSupport = Literal["forbidden", "optional", "required"]
Status = Literal["working", "completed", "failed", "cancelled"]
TERMINAL = frozenset({"completed", "failed", "cancelled"})

CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability())),
)

_CURRENT: contextvars.ContextVar[TaskRun | None] = contextvars.ContextVar("rea_task", default=None)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskRun:
    """One task: its state as ``tasks/get`` reports it, the call's cancellation signal, and its answer once ended."""

    def __init__(self, task_id: str, tool: str, ttl_ms: int) -> None:
        self.task_id = task_id
        self.tool = tool
        self.ttl_ms = ttl_ms
        self.status: Status = "working"
        self.status_message: str | None = f"{tool}: queued"
        self.created_at = _now()
        self.last_updated_at = self.created_at
        self._created = time.monotonic()
        self._ended: float | None = None
        self.signal: CancelSignal | None = None
        self.cancel_requested = False
        self.scope = anyio.CancelScope()
        # Set when the call has returned (or was abandoned): the result or the error below is final.
        self.done = anyio.Event()
        self.result: types.CallToolResult | None = None
        self.error: MCPError | None = None
        # Sends the client's progress notifications, when its task-augmented request gave a progress token.
        self.notify: ProgressSink | None = None

    def task(self) -> types.Task:
        return types.Task(
            task_id=self.task_id,
            status=self.status,
            status_message=self.status_message,
            created_at=self.created_at,
            last_updated_at=self.last_updated_at,
            ttl=self.ttl_ms,
            poll_interval=POLL_INTERVAL_MS,
        )

    def update(self, status: Status, message: str | None) -> None:
        if self.status in TERMINAL:  # terminal states never change (a cancel is sticky)
            return
        self.status = status
        self.status_message = message
        self.last_updated_at = _now()

    def follow(self, signal: CancelSignal, sink: ProgressSink | None) -> ProgressSink:
        """Bind the call's cancellation signal to this task; the progress sink that also feeds its statusMessage
        (called from the tool's worker threads; ``sink`` is the client's own progress, if it gave a token)."""
        self.signal = signal
        if self.cancel_requested:
            signal.cancel()

        def progress(done: float, total: float | None, message: str) -> None:
            if self.status == "working":
                self.status_message = message
                self.last_updated_at = _now()
            for send in (sink, self.notify):
                if send is not None:
                    send(done, total, message)

        return progress

    def request_cancel(self) -> None:
        self.cancel_requested = True
        self.update("cancelled", f"{self.tool}: cancelled by the client")
        if self.signal is not None:
            self.signal.cancel()

    def end(self) -> None:
        self._ended = time.monotonic()
        self.done.set()

    def expired(self, now: float) -> bool:
        if self._ended is None:
            return False
        return now >= max(self._created + self.ttl_ms / 1000, self._ended + KEPT_AFTER_END_S)


def current() -> TaskRun | None:
    """The task the running ``tools/call`` belongs to (None for a direct call)."""
    return _CURRENT.get()


def _no_task(task_id: str) -> MCPError:
    err = ReaError(
        "invalid_request",
        f"no task {task_id!r} in this session: unknown, or its result was kept for its ttl and forgotten",
        remediation="Call tasks/list for this session's tasks; run the tool again for a forgotten result.",
        details={"task_id": task_id, "kept": {"default_ttl_ms": DEFAULT_TTL_MS, "max_tasks": MAX_KEPT}},
    )
    return MCPError(types.INVALID_PARAMS, err.message, {"error": err.projection_dict()})


def _refusal(code: int, err: ReaError) -> MCPError:
    return MCPError(code, err.message, {"error": err.projection_dict()})


class SessionTasks:
    """One MCP session's tasks, run in its task group."""

    def __init__(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg
        self._runs: dict[str, TaskRun] = {}
        self._order = itertools.count()

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for tid in [tid for tid, run in self._runs.items() if run.expired(now)]:
            del self._runs[tid]

    def get(self, task_id: str) -> TaskRun:
        self._forget_expired()
        run = self._runs.get(task_id)
        if run is None:
            raise _no_task(task_id)
        return run

    def runs(self) -> list[TaskRun]:
        self._forget_expired()
        return list(self._runs.values())

    def start(
        self, tool: str, ttl_ms: int | None, call: Callable[[], Awaitable[types.CallToolResult]], cancelled: Any
    ) -> TaskRun:
        """A new task running ``call`` in the background; ``cancelled`` builds the answer of a cancelled call."""
        self._forget_expired()
        working = sum(1 for r in self._runs.values() if not r.done.is_set())
        if working >= MAX_WORKING:
            raise _refusal(
                types.INVALID_PARAMS,
                ReaError(
                    "resource_constraint",
                    f"{working} tasks of this session are running, the most one session may run at once",
                    remediation="Wait for a task to end (tasks/get) or cancel one (tasks/cancel), then call again.",
                    details={"resource": "tasks", "reported_limits": {"max_working_tasks": MAX_WORKING}},
                ),
            )
        while len(self._runs) >= MAX_KEPT:
            oldest = next(tid for tid, r in self._runs.items() if r.done.is_set())
            del self._runs[oldest]
        ttl = DEFAULT_TTL_MS if ttl_ms is None else max(1000, min(int(ttl_ms), MAX_TTL_MS))
        run = TaskRun(uuid.uuid4().hex, tool, ttl)
        self._runs[run.task_id] = run
        self._tg.start_soon(self._run, run, call, cancelled)
        return run

    async def _run(
        self, run: TaskRun, call: Callable[[], Awaitable[types.CallToolResult]], cancelled: Callable[[], Any]
    ) -> None:
        _CURRENT.set(run)  # this task's own context (start_soon copied it): the call's hooks find their task
        run.update("working", f"{run.tool}: started")
        try:
            with run.scope:
                result = await call()
                run.result = result
                if run.cancel_requested:
                    if not result.is_error:  # it finished before it saw the signal: the client asked to drop it
                        run.result = cancelled()
                elif result.is_error:
                    # MCP: a task wrapping a tool call whose result is an error ends failed.
                    run.update("failed", f"{run.tool}: failed")
                else:
                    run.update("completed", f"{run.tool}: completed")
            if run.scope.cancelled_caught:  # abandoned after CANCEL_GRACE_S, or the session ended
                run.result = cancelled()
                run.update("cancelled", f"{run.tool}: cancelled")
        except MCPError as err:
            run.error = err
            run.update("failed", f"{run.tool}: failed ({err.error.message})")
        except Exception as exc:  # a server fault in one task must not end the session
            run.error = MCPError(types.INTERNAL_ERROR, f"{run.tool}: {type(exc).__name__}")
            run.update("failed", f"{run.tool}: failed ({type(exc).__name__})")
        finally:
            run.end()

    async def cancel(self, run: TaskRun) -> None:
        run.request_cancel()
        self._tg.start_soon(self._abandon_after_grace, run)

    async def _abandon_after_grace(self, run: TaskRun) -> None:
        with anyio.move_on_after(CANCEL_GRACE_S):
            await run.done.wait()
        if not run.done.is_set():
            run.scope.cancel()


@asynccontextmanager
async def session_tasks() -> AsyncIterator[SessionTasks]:
    """The tasks of one MCP session: its running calls are cancelled when the session ends."""
    async with anyio.create_task_group() as tg:
        try:
            yield SessionTasks(tg)
        finally:
            tg.cancel_scope.cancel()


def _progress_sender(ctx: ServerRequestContext[Any], token: str | int, task_id: str) -> ProgressSink:
    """The task's progress as notifications/progress on the session's channel (its request has been answered),
    marked with the related task as MCP asks; sent from the tool's worker threads through the event loop."""
    loop = anyio.lowlevel.current_token()
    session = ctx.session

    def send(done: float, total: float | None, message: str) -> None:
        note = types.ProgressNotification(
            params=types.ProgressNotificationParams(
                progress_token=token,
                progress=done,
                total=total,
                message=message,
                _meta={RELATED_TASK: {"taskId": task_id}},
            )
        )
        try:
            anyio.from_thread.run(session.send_notification, note, token=loop)
        except Exception:  # a client that went away: the task's statusMessage still has it
            pass

    return send


class Tasks:
    """The Tasks methods of one server, installed on its lowlevel ``Server``.

    ``support(name)`` says whether a tool takes a task (None: no such tool); ``cancelled(ctx)`` builds the answer
    of a call cancelled as a task (rea's typed ``cancelled`` error, as the direct call reports one).
    """

    def __init__(
        self,
        support: Callable[[str], TaskSupport | None],
        cancelled: Callable[[ServerRequestContext[Any]], types.CallToolResult],
    ) -> None:
        self._support = support
        self._cancelled = cancelled
        self._call_tool: Any = None

    def install(self, server: Server[Any]) -> None:
        """Add the Tasks methods and the task-augmented ``tools/call`` to ``server`` (after its tools/call handler)."""
        entry = server.get_request_handler("tools/call")
        assert entry is not None
        # The very handler a direct call runs: a task's answer is the direct call's answer.
        self._call_tool = entry.handler
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)
        server.middleware.append(self._middleware)

    @staticmethod
    def store(ctx: ServerRequestContext[Any]) -> SessionTasks:
        found: SessionTasks = ctx.lifespan_context.tasks
        return found

    async def _middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """A task-augmented ``tools/call`` of a tool that takes tasks: its ``CreateTaskResult`` at once. Here, before
        the runner's result sieve, which would refuse any answer to ``tools/call`` but a ``CallToolResult``."""
        raw = ctx.params
        if (
            ctx.method != "tools/call"
            or not isinstance(raw, Mapping)
            or raw.get("task") is None
            or ctx.protocol_version not in TASK_VERSIONS
            or ctx.session.client_params is None  # not initialized: the runner answers as it does for any call
        ):
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            return await call_next(ctx)  # the runner's own validation answers it
        support = self._support(params.name)
        if support is None:
            return await call_next(ctx)  # no such tool: the direct call's typed error says so
        if support == "forbidden":
            raise _refusal(
                types.METHOD_NOT_FOUND,
                ReaError(
                    "invalid_request",
                    f"{params.name} does not run as a task (its execution.taskSupport is forbidden)",
                    remediation="Call it without task metadata; tools/list marks the tools that take tasks.",
                    details={"tool": params.name},
                ),
            )
        handler = self._call_tool
        direct = params.model_copy(update={"task": None})
        # The call outlives this request: no progress token (its progress is the task's statusMessage) and no
        # request id (log records go to the session, not to a request already answered).
        background = dataclasses.replace(
            ctx, request_id=None, meta=None, request=None, close_sse_stream=None, close_standalone_sse_stream=None
        )

        async def call() -> types.CallToolResult:
            result = await handler(background, direct)
            assert isinstance(result, types.CallToolResult)
            return result

        assert params.task is not None
        run = self.store(ctx).start(params.name, params.task.ttl, call, lambda: self._cancelled(ctx))
        token = ctx.meta.get("progress_token", ctx.meta.get("progressToken")) if ctx.meta else None
        # Set before the run starts: it starts once this request yields to the event loop.
        if isinstance(token, str | int):
            run.notify = _progress_sender(ctx, token, run.task_id)
        return types.CreateTaskResult(task=run.task()).model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _get(self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> types.GetTaskResult:
        run = self.store(ctx).get(params.task_id)
        return types.GetTaskResult(**run.task().model_dump())

    async def _result(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> types.CallToolResult:
        """What the call itself answers (its CallToolResult, or its JSON-RPC error), once it has ended."""
        run = self.store(ctx).get(params.task_id)
        await run.done.wait()
        if run.error is not None:
            raise run.error
        assert run.result is not None
        meta = {**(run.result.meta or {}), RELATED_TASK: {"taskId": run.task_id}}
        return run.result.model_copy(update={"meta": meta})

    async def _cancel(
        self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> types.CancelTaskResult:
        tasks = self.store(ctx)
        run = tasks.get(params.task_id)
        if run.status in TERMINAL:
            raise _refusal(
                types.INVALID_PARAMS,
                ReaError(
                    "invalid_request",
                    f"task {run.task_id!r} has already ended ({run.status})",
                    remediation="Fetch its answer with tasks/result.",
                    details={"task_id": run.task_id, "status": run.status},
                ),
            )
        await tasks.cancel(run)
        return types.CancelTaskResult(**run.task().model_dump())

    async def _list(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListTasksResult:
        runs = self.store(ctx).runs()
        cursor = params.cursor
        start = 0
        if cursor is not None:
            if not cursor.isdigit() or int(cursor) > len(runs):
                raise _refusal(
                    types.INVALID_PARAMS,
                    ReaError(
                        "invalid_request",
                        f"not a tasks/list cursor of this session: {cursor[:64]!r}",
                        remediation="Pass the nextCursor of the previous page, or none for the first.",
                        details={"cursor": cursor[:64]},
                    ),
                )
            start = int(cursor)
        page = runs[start : start + LIST_PAGE]
        after = start + len(page)
        return types.ListTasksResult(
            tasks=[r.task() for r in page], next_cursor=str(after) if after < len(runs) else None
        )
