"""The normalized result of ``observe_native_calls``: the calls observed and how completely."""

from __future__ import annotations

import msgspec

from rea.plugin import Isolation
from rea.plugin import Record
from rea_plugins.lldb.output import Output


class AddressRequest(Record):
    """A static address to break on: as hex text, or taken from Evidence (then with its name and evidence id)."""

    address: str
    name: str | msgspec.UnsetType | None = msgspec.UNSET
    evidence_id: str | msgspec.UnsetType = msgspec.UNSET


class ModuleRequest(Record):
    """Every code symbol of one module (None: the program itself), up to ``max_functions``."""

    module: str | None
    max_functions: int


class ObserveRequest(Record):
    """What ``observe_native_calls`` asks the provider for (its Evidence's parameters, without ``architecture``)."""

    arguments: list[str]
    working_directory: str
    environment: dict[str, str]
    inherit_environment: list[str]
    functions: list[str]
    addresses: list[AddressRequest]
    module_procedures: ModuleRequest | None
    max_events: int
    duration_ms: int
    argument_count: int
    return_values: bool
    max_backtrace_frames: int
    filesystem_roots: list[str]
    sandbox: str
    architecture: str
    abi: str | None


class LaunchRequest(ObserveRequest):
    """The observing worker's ``launch``: the request, with the program and its whole environment."""

    executable: str


class RunSlice(Record):
    """The observing worker's ``run``: observe for at most ``slice_ms`` and answer what was recorded."""

    slice_ms: int = 250


# The breakpoints an observation sets, tagged by ``kind``; one LLDB could not set carries the ``reason``.
class FunctionBreakpoint(Record, tag_field="kind", tag="function"):
    name: str
    reason: str | msgspec.UnsetType = msgspec.UNSET


class AddressBreakpoint(Record, tag_field="kind", tag="address"):
    address: str
    name: str | msgspec.UnsetType | None = msgspec.UNSET
    evidence_id: str | msgspec.UnsetType = msgspec.UNSET
    reason: str | msgspec.UnsetType = msgspec.UNSET


class ModuleProcedureBreakpoint(Record, tag_field="kind", tag="module_procedure"):
    name: str
    address: str
    reason: str | msgspec.UnsetType = msgspec.UNSET


class ModuleBreakpoint(Record, tag_field="kind", tag="module"):
    """A module_procedures request whose module was not loaded: nothing of it could be set."""

    module: str | None
    reason: str


EntryBreakpoint = FunctionBreakpoint | AddressBreakpoint | ModuleProcedureBreakpoint
Unresolved = FunctionBreakpoint | AddressBreakpoint | ModuleProcedureBreakpoint | ModuleBreakpoint


class StackFrame(Record):
    pc: str
    function: str | None
    module: str | None
    # The address in the file's own (link-time) space: the runtime address minus the load bias.
    file_address: str | None


class RegisterValue(Record):
    register: str
    value: str


class CallEvent(Record):
    """One entry of a watched function, with its argument registers and backtrace."""

    index: int
    t_ms: int
    function: str | None
    module: str | None
    address: str
    file_address: str | None
    thread: int
    thread_index: int
    arguments: list[RegisterValue]
    backtrace: list[StackFrame]
    # The breakpoint that fired: kind (function, address, module_procedure) and what it named.
    breakpoint: EntryBreakpoint
    # Present when return values were asked for (null: the function had not returned when it stopped).
    return_value: str | msgspec.UnsetType | None = msgspec.UNSET


class Crash(Record):
    signal: str | None
    description: str
    thread: int
    pc: str
    function: str | None
    backtrace: list[StackFrame]
    t_ms: int


class ProgramExit(Record):
    exit_code: int
    description: str | None
    killed_by_observer: bool = False


class Debugger(Record):
    engine: str
    version: str | None


class Coverage(Record):
    """Complete only when the run finished with no dropped event and every breakpoint set."""

    complete: bool
    events_recorded: int
    events_dropped: int
    limits_hit: list[str]
    breakpoints_set: int
    # Requested breakpoints LLDB could not set, each with the reason.
    unresolved: list[Unresolved]
    phase_reached: str


class Launched(Record):
    """The observing worker's answer to ``launch``: the program started, with its breakpoints set."""

    pid: int | None
    # Breakpoints set, and those requested that LLDB could not set (each with the reason).
    breakpoints: int
    unresolved: list[Unresolved]
    debugger_version: str | None
    load_bias: int | None


class ReturnUpdate(Record):
    """The return value of a call sent in an earlier slice."""

    index: int
    return_value: str


class Slice(Record):
    """The observing worker's answer to ``run`` and ``stop``: the calls recorded since the last slice and where
    the observation stands (``stop`` adds the program's output)."""

    events: list[CallEvent]
    updates: list[ReturnUpdate]
    done: bool
    stop_reason: str
    exit: ProgramExit | None
    crash: Crash | None
    dropped: int
    limits_hit: list[str]
    elapsed_ms: int
    output: dict[str, Output] | None = None


class NativeCallObservation(Record):
    executable: str
    arguments: list[str]
    working_directory: str
    abi: str | None
    debugger: Debugger
    isolation: Isolation | None
    pid: int | None
    # Runtime address minus link-time address of the program: events' file_address is in the file's space.
    load_bias: str | None
    # Under bubblewrap the debuggee has its own pid namespace: pid is the one it sees.
    pid_namespace: str
    stop_reason: str
    elapsed_ms: int | None
    exit: ProgramExit | None
    crash: Crash | None
    events: list[CallEvent]
    output: dict[str, Output] | None
    coverage: Coverage
