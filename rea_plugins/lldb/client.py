"""The LLDB client: one owned worker per observation, driven slice by slice so nothing observed is lost.

The worker is an ``OwnedProcess``; lldb-server and the debuggee are its descendants in its session, so
terminating the worker's session ends them, and a descendant that left it is reported, never signalled.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec

from rea.plugin import AnalysisClient
from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import Isolation
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import SandboxPolicy
from rea.plugin import Target
from rea.plugin import WorkerChannel
from rea.plugin import cancelled
from rea.plugin import choice_setting
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import memory_limit_setting
from rea.plugin import python_worker_spec
from rea_plugins.lldb.locate import debugserver_path
from rea_plugins.lldb.output import Output
from rea_plugins.lldb.shapes import CallEvent
from rea_plugins.lldb.shapes import Coverage
from rea_plugins.lldb.shapes import Debugger
from rea_plugins.lldb.shapes import Launched
from rea_plugins.lldb.shapes import LaunchRequest
from rea_plugins.lldb.shapes import NativeCallObservation
from rea_plugins.lldb.shapes import RunSlice
from rea_plugins.lldb.shapes import Slice

RESOURCE = "lldb-worker"
LAUNCH_DEADLINE_S = 90.0
SLICE_MS = 200
# A slice answers within SLICE_MS plus one stop's handling; this bounds a debugger that stopped answering.
SLICE_DEADLINE_S = 30.0
STOP_DEADLINE_S = 20.0


def sandbox_policy(mode: str, writable: tuple[str, ...], readable: tuple[str, ...]) -> SandboxPolicy | None:
    if mode == "none":
        return None
    return SandboxPolicy(writable_roots=writable, readable_roots=readable, accept_none=mode == "preferred")


def worker_spec(
    module: str,
    resource: str,
    *,
    executable: str,
    working_directory: str,
    filesystem_roots: Sequence[str] = (),
    sandbox: str = "required",
) -> ProcessSpec:
    """An LLDB worker (``module``) sandboxed as ``sandbox`` asks: the program's folder readable, its working
    directory and ``filesystem_roots`` writable. The debuggee is the worker's descendant, in its sandbox."""
    server = debugserver_path()
    if server is None:
        raise ReaError(
            "provider_unavailable",
            "lldb-server was not found",
            remediation="pip install 'rea-reverse[lldb]', or set LLDB_DEBUGSERVER_PATH.",
            details={"provider_id": "lldb", "reason": "executable_missing"},
        )
    spec = python_worker_spec(
        module,
        resource=resource,
        owner="lldb",
        env={"LLDB_DEBUGSERVER_PATH": server},
        address_space_bytes=MEMORY_LIMIT.read() << 20,
        memory_setting=MEMORY_LIMIT.name,
    )
    writable = (*filesystem_roots, working_directory)
    readable = (os.path.dirname(executable),)
    return msgspec.structs.replace(spec, sandbox=sandbox_policy(sandbox, writable, readable))


class Observation:
    """What one observation has gathered so far (kept on the server side, slice by slice)."""

    def __init__(self, params: LaunchRequest) -> None:
        self.params = params
        self.events: list[CallEvent] = []
        self.launch: Launched | None = None
        # The last slice (its events and updates merged here).
        self.last: Slice | None = None
        self.output: dict[str, Output] = {}
        self.isolation: Isolation | None = None
        self.phase = "starting"

    def merge(self, reply: Slice) -> None:
        self.events.extend(reply.events)
        for update in reply.updates:
            if 0 <= update.index < len(self.events):
                event = self.events[update.index]
                self.events[update.index] = msgspec.structs.replace(event, return_value=update.return_value)
        self.last = reply
        if reply.output is not None:
            self.output = reply.output

    def record(self, complete: bool) -> NativeCallObservation:
        last, launch = self.last, self.launch
        dropped = last.dropped if last is not None else 0
        unresolved = launch.unresolved if launch is not None else []
        return NativeCallObservation(
            executable=self.params.executable,
            arguments=self.params.arguments,
            working_directory=self.params.working_directory,
            abi=self.params.abi,
            debugger=Debugger(engine="lldb", version=launch.debugger_version if launch is not None else None),
            isolation=self.isolation,
            pid=launch.pid if launch is not None else None,
            load_bias=_hex_or_none(launch.load_bias if launch is not None else None),
            # Under bubblewrap the debuggee has its own pid namespace: this pid is the one it sees.
            pid_namespace="sandbox" if self.isolation and self.isolation.sandbox == "bubblewrap" else "host",
            stop_reason=(last.stop_reason if last is not None else "") or self.phase,
            elapsed_ms=last.elapsed_ms if last is not None else None,
            exit=last.exit if last is not None else None,
            crash=last.crash if last is not None else None,
            events=self.events,
            output=self.output or None,
            coverage=Coverage(
                complete=complete and not dropped and not unresolved,
                events_recorded=len(self.events),
                events_dropped=dropped,
                limits_hit=list(last.limits_hit) if last is not None else [],
                breakpoints_set=launch.breakpoints if launch is not None else 0,
                unresolved=unresolved,
                phase_reached=self.phase,
            ),
        )


class LldbClient(AnalysisClient):
    """Observes the program of ``target`` (or the executable a request names) under LLDB."""

    def __init__(self, target: Target, run_id: str) -> None:
        self.target = target
        self.run_id = run_id
        # The kernel's lineage snapshots (OwnedProcess.observe, WorkerChannel.lineage): JSON objects of its shape.
        self._lineage: list[JSONObject] = []
        self._channel: WorkerChannel | None = None

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        if operation != "observe_native_calls":
            raise ReaError(
                "capability_unavailable",
                f"lldb does not offer {operation}",
                details={"operation": operation, "provider_id": "lldb"},
            )
        try:
            request = msgspec.convert({"executable": self.target.resolved_path, **params}, LaunchRequest)
        except msgspec.ValidationError as exc:
            raise invalid_request(
                f"observe_native_calls: {exc}", [issue("params", "invalid_value", str(exc))]
            ) from None
        return self.observe(request, ctx)

    def _spec(self, params: LaunchRequest) -> ProcessSpec:
        return worker_spec(
            "rea_plugins.lldb.worker",
            RESOURCE,
            executable=params.executable,
            working_directory=params.working_directory,
            filesystem_roots=params.filesystem_roots,
            sandbox=params.sandbox,
        )

    def observe(self, params: LaunchRequest, ctx: CallContext) -> OperationResult:
        observation = Observation(params)
        channel = WorkerChannel(self._spec(params), label="lldb", stateful=True)
        self._channel = channel
        quiet = CallContext()  # slices are never cut short; cancellation is checked between them
        failure: ReaError | None = None
        launched_snapshot: JSONObject | None = None
        try:
            observation.phase = "launching"
            launch = channel.request(
                "launch",
                msgspec.to_builtins(msgspec.structs.replace(params, environment=self._environment(params))),
                ctx,
                deadline_s=LAUNCH_DEADLINE_S,
                phase="launching the program under LLDB",
                announce=True,
            )
            # The worker's replies are decoded into their Structs here, at the boundary.
            observation.launch = msgspec.convert(launch.result(), Launched)
            proc = channel.proc
            if proc is not None:
                observation.isolation = proc.isolation
                launched_snapshot = proc.observe("debuggee_launched")
            observation.phase = "observing"
            while True:
                if ctx.cancelled:
                    failure = cancelled("observing native calls")
                    break
                reply = msgspec.convert(
                    channel.request(
                        "run",
                        msgspec.to_builtins(RunSlice(slice_ms=SLICE_MS)),
                        quiet,
                        deadline_s=SLICE_DEADLINE_S,
                        phase="observing calls",
                    ).result(),
                    Slice,
                )
                observation.merge(reply)
                ctx.progress(
                    f"lldb: observing, {len(observation.events)} calls recorded, "
                    f"{reply.elapsed_ms} ms of the program's run"
                )
                if reply.done:
                    break
            observation.phase = "stopping"
            stopped = channel.request("stop", {}, quiet, deadline_s=STOP_DEADLINE_S, phase="stopping the program")
            observation.merge(msgspec.convert(stopped.result(), Slice))
            observation.phase = "finished"
        except ReaError as exc:
            failure = exc
        outcome = self._close_channel(channel, launched_snapshot)
        crash = observation.last.crash if observation.last is not None else None
        if failure is None and crash is not None:
            what = crash.signal or "an exception"
            failure = ReaError(
                "process_capture_failed",
                f"the program crashed ({what}) after {len(observation.events)} recorded calls",
                remediation="Read details.partial_observation for the calls recorded before the "
                "crash and the crashing thread's backtrace.",
                details={"reason": "target_crashed", "signal": crash.signal},
            )
        cleanup = {"cleanup": "incomplete" if outcome.remaining else "complete", "resources": sorted(outcome.remaining)}
        if failure is not None:
            partial = msgspec.to_builtins(observation.record(complete=False))
            failure.details.update({"partial_observation": partial, **cleanup})
            if outcome.remaining:
                raise self._incomplete(failure, outcome, partial)
            raise failure
        observed = observation.record(complete=True)
        record = msgspec.to_builtins(observed)
        if outcome.remaining:
            err = ReaError("execution_failure", "the observation finished but owned processes remain")
            raise self._incomplete(err, outcome, record)
        limitations = []
        if observed.coverage.limits_hit:
            limitations.append(
                "The observation stopped at a limit ("
                + ", ".join(observed.coverage.limits_hit)
                + "); later calls were not observed."
            )
        if observed.coverage.unresolved:
            limitations.append("Some requested breakpoints could not be set; see coverage.unresolved.")
        limitations.append(
            "Arguments are the integer argument registers at entry per the ABI; their meaning "
            "(pointer, value, unused) depends on the function's signature."
        )
        return OperationResult(normalized=record, limitations=limitations)

    @staticmethod
    def _incomplete(err: ReaError, outcome: CloseOutcome, partial: JSONObject) -> ReaError:
        # ``partial``: the observation so far as JSON, for the error's details.
        out = err.with_cleanup_incomplete(list(outcome.remaining), outcome.reason)
        out.details["partial_observation"] = partial
        return out

    @staticmethod
    def _environment(params: LaunchRequest) -> dict[str, str]:
        env = {k: os.environ[k] for k in params.inherit_environment if k in os.environ}
        env.update(params.environment)
        return env

    def _close_channel(self, channel: WorkerChannel, launched: JSONObject | None) -> CloseOutcome:
        outcome = channel.close()
        observations = channel.lineage()
        if launched is not None:
            observations.insert(1, launched)
        self._lineage.extend(observations)
        self._channel = None
        return outcome

    def close(self) -> CloseOutcome:
        channel = self._channel
        if channel is not None:
            outcome = self._close_channel(channel, None)
            return outcome
        return CloseOutcome()

    def lineage(self) -> list[JSONObject]:
        out = list(self._lineage)
        channel = self._channel
        if channel is not None:
            out.extend(channel.lineage())
        return out


# The address-space bound of the LLDB worker and what it debugs (LLDB, lldb-server and the program).
MEMORY_LIMIT = memory_limit_setting("REA_LLDB_MEMORY_LIMIT_MB", "LLDB")

ATTACH_MODES = ("own", "same-user")
# Which processes debug_attach may stop: the operator's choice when starting rea, never the agent's.
ATTACH = choice_setting(
    "REA_DEBUG_ATTACH",
    ATTACH_MODES,
    "own",
    "Processes debug_attach may attach to: own (default), only programs its debug sessions launched; "
    "same-user, also a process of the server's user given by pid (never rea's own processes).",
)


def _hex_or_none(value: int | None) -> str | None:
    return hex(value) if isinstance(value, int) else None
