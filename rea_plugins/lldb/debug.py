"""Debug sessions: a program stopped under LLDB between calls, driven by the ``debug_*`` tools.

Each session is one owned worker (``rea_plugins.lldb.debugger``) holding LLDB and the debuggee, sandboxed as
``observe_native_calls`` runs its program; the debuggee is the worker's descendant, so ending the worker ends
it, and a server that dies takes its workers with it (owned processes die with their parent). Sessions are kept
per MCP session: ended by ``debug_end``, when idle past their timeout, or when the MCP session closes.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
import weakref
from pathlib import Path
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import Evidence
from rea.plugin import Isolation
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import WorkerChannel
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import procfs
from rea.plugin import runtime_observations
from rea.plugin import typelib
from rea_plugins.lldb.asks import AttachPid
from rea_plugins.lldb.asks import DeleteBreakpoint
from rea_plugins.lldb.asks import Emulator
from rea_plugins.lldb.asks import Launch
from rea_plugins.lldb.asks import Look
from rea_plugins.lldb.asks import MemoryAccess
from rea_plugins.lldb.asks import Resume
from rea_plugins.lldb.asks import SetBreakpoint
from rea_plugins.lldb.asks import SetRegister
from rea_plugins.lldb.asks import Watch
from rea_plugins.lldb.client import LAUNCH_DEADLINE_S
from rea_plugins.lldb.client import worker_spec
from rea_plugins.lldb.debugshapes import Breakpoint
from rea_plugins.lldb.debugshapes import Breakpoints
from rea_plugins.lldb.debugshapes import DebugResult
from rea_plugins.lldb.debugshapes import Memory
from rea_plugins.lldb.debugshapes import Place
from rea_plugins.lldb.debugshapes import Read
from rea_plugins.lldb.debugshapes import Started
from rea_plugins.lldb.debugshapes import State
from rea_plugins.lldb.debugshapes import Stop
from rea_plugins.lldb.debugshapes import Where
from rea_plugins.lldb.debugshapes import Written
from rea_plugins.lldb.provider import lldb_version
from rea_plugins.lldb.tool import ARGUMENTS
from rea_plugins.lldb.tool import ENVIRONMENT
from rea_plugins.lldb.tool import INHERIT_ENVIRONMENT
from rea_plugins.lldb.tool import PROVIDER_ID
from rea_plugins.lldb.tool import _program
from rea_plugins.lldb.tool import environment_of
from rea_plugins.lldb.tool import filesystem_roots
from rea_plugins.lldb.tool import inherited
from rea_plugins.lldb.tool import require_available
from rea_plugins.lldb.tool import working_directory

TOOLSET = "debug"
RESOURCE = "lldb-debug-worker"
STATE_KEY = "lldb.debug_sessions"
MAX_SESSIONS = 4
DEFAULT_IDLE_S = 600
# A request answers within its wait plus this much of LLDB's own work.
REQUEST_SLACK_S = 15.0
MAX_TYPED_BYTES = 64 * 1024
HEX = "^0x[0-9a-fA-F]{1,16}$"
_counter = itertools.count(1)
T = TypeVar("T")
P = TypeVar("P", bound=Place)


class Ended(Record):
    """A debug session that ended, and why (idle_timeout, debug_end): named when a later call asks for it."""

    session: str
    reason: str


class DebugSession:
    def __init__(
        self, ident: str, channel: WorkerChannel, program: Target, idle_s: int, *, foreign: bool = False
    ) -> None:
        self.id = ident
        self.channel = channel
        self.program = program
        self.idle_s = idle_s
        # Attached by pid to a process the operator started: every end detaches from it, none kills it.
        self.foreign = foreign
        self.last_used = time.monotonic()
        self.load_bias: int | None = None
        # The last stop recorded as a hit at a procedure's entry (the worker's stop id): each stop counts once.
        self.last_hit: str | None = None
        self.lock = threading.Lock()


def _release(s: DebugSession) -> CloseOutcome:
    """End a session's worker, and so the program it launched. A process attached by pid is detached first: it
    runs on as it was, without the breakpoints (a debugger that just vanished would leave them in its code)."""
    if s.foreign:
        try:
            s.channel.request("end", {}, CallContext(), deadline_s=REQUEST_SLACK_S, phase="detaching")
        except Exception:  # the worker is gone or stuck: closing it still lets the kernel detach the process
            pass
    return s.channel.close()


def _close_all(sessions: dict[str, DebugSession]) -> None:
    """End every session's worker (and so its debuggee): the MCP session closed or the manager was dropped."""
    for s in list(sessions.values()):
        try:
            _release(s)
        except Exception:  # a finalizer must not raise; the owned process is reaped at server exit anyway
            pass
    sessions.clear()


class DebugManager:
    """The debug sessions of one MCP session; an idle one is ended by the reaper thread."""

    def __init__(self) -> None:
        self.sessions: dict[str, DebugSession] = {}
        self.lock = threading.Lock()
        self.ended: list[Ended] = []
        weakref.finalize(self, _close_all, self.sessions)
        reaper = threading.Thread(target=_reap, args=(weakref.ref(self),), daemon=True, name="rea-debug-reaper")
        reaper.start()

    def close_with_session(self) -> list[str]:
        """End every debug session (the MCP session is closing); the owned resource kinds left, if any."""
        with self.lock:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        remaining: list[str] = []
        for s in sessions:
            remaining += _release(s).remaining
        return sorted(set(remaining))

    def reap(self) -> None:
        now = time.monotonic()
        with self.lock:
            idle = [s for s in self.sessions.values() if now - s.last_used > s.idle_s and not s.lock.locked()]
            for s in idle:
                del self.sessions[s.id]
        for s in idle:
            _release(s)
            self.ended.append(Ended(session=s.id, reason="idle_timeout"))


def _reap(ref: weakref.ref[DebugManager]) -> None:
    while True:
        time.sleep(1.0)
        manager = ref()
        if manager is None:
            return  # the MCP session closed: its finalizer ended the sessions
        manager.reap()
        del manager


def manager_of(call: ToolCall) -> DebugManager:
    state = call.session.state
    found = state.get(STATE_KEY)
    if isinstance(found, DebugManager):
        return found
    manager = DebugManager()
    state[STATE_KEY] = manager
    return manager


def _unavailable() -> None:
    from rea_plugins.lldb.provider import LldbProvider

    require_available(LldbProvider())


def _session(call: ToolCall) -> DebugSession:
    manager = manager_of(call)
    ident = arg_str(call.args, "session")
    with manager.lock:
        if ident is None and len(manager.sessions) == 1:
            ident = next(iter(manager.sessions))
        found = manager.sessions.get(ident or "")
    if found is None:
        ended = next((e for e in manager.ended if e.session == ident), None)
        raise ReaError(
            "invalid_request",
            f"no debug session {ident}" + (f" (it ended: {ended.reason})" if ended else ""),
            remediation="Start one with debug_launch; several open at once are named by their session id.",
            details={"reason": ended.reason if ended else "unknown_session", "sessions": sorted(manager.sessions)},
        )
    found.last_used = time.monotonic()
    return found


def _request(s: DebugSession, call: ToolCall, op: str, params: Record | None, into: type[T], wait_ms: int = 0) -> T:
    """The worker's answer to ``op`` (asked with the request Struct ``params``), decoded into its Struct here, at
    the boundary."""
    # A request Struct travels as msgpack builtins (bytes stay bytes); the worker converts it back.
    sent = {} if params is None else msgspec.to_builtins(params, builtin_types=(bytes,))
    with s.lock:
        try:
            reply = s.channel.request(op, sent, call.ctx, deadline_s=wait_ms / 1000 + REQUEST_SLACK_S, phase=op)
        finally:
            s.last_used = time.monotonic()
    return msgspec.convert(reply.result(), into)


# -- names and addresses ----------------------------------------------------------------------------------


def _names(call: ToolCall, program: Target) -> dict[int, str]:
    nb = call.session.annotations.load(program.sha256)
    return {int(a, 16): n for a, n in nb.names().items()}


def _name_place(place: P, names: dict[int, str]) -> P:
    """``place`` with its ``procedure``: the notebook's name of the function (else LLDB's) with the offset into it."""
    start = place.function_start
    if start is None or not place.main_module:
        return msgspec.structs.replace(place, procedure=place.function) if place.function else place
    begin = int(start, 16)
    name = names.get(begin) or place.function or f"sub_{begin:x}"
    delta = int(place.address or start, 16) - begin
    return msgspec.structs.replace(place, procedure=name if delta == 0 else f"{name}+0x{delta:x}")


def _stop_of(where: Where) -> Stop:
    """The worker's stop as the result shows it (without the worker's stop id)."""
    return msgspec.convert(msgspec.to_builtins(where), Stop)


def _evidence(call: ToolCall, s: DebugSession, where: Where, **parts: Any) -> Evidence:
    """The Evidence of one debug call: the program's stop (``where``) and the call's own ``parts`` of
    ``DebugResult``, their places named as the notebook names them."""
    names = _names(call, s.program)
    stop = _stop_of(where)
    if stop.pc:
        stop = _name_place(stop, names)
    if parts.get("backtrace"):
        parts["backtrace"] = [_name_place(frame, names) for frame in parts["backtrace"]]
    record = DebugResult(session=s.id, program=s.program.resolved_path, stop=stop, **parts)
    limitations = []
    if record.stop.state == "running":
        limitations.append("The program was still running when the wait ended: call debug_continue to wait again.")
    # A stop in the program is located at its static address and procedure: the stop is evidence about that code.
    stop = record.stop
    locations: list[JSONObject] = []
    if stop.state == "stopped" and stop.main_module and stop.address:
        locations.append({"address": stop.address, "procedure": stop.procedure})
    recorded = call.session.evidence(
        call.tool.name,
        dict(call.args),
        OperationResult(normalized=record, limitations=limitations, locations=locations),
        bound=False,
        target=s.program,
        provider=ProviderIdentity(id=PROVIDER_ID, name="LLDB", version=lldb_version()),
        analysis_profile=None,
    )
    _note_hit(call, s, where, recorded)
    return recorded


def _note_hit(call: ToolCall, s: DebugSession, stop: Where, recorded: Evidence) -> None:
    """A new stop at a procedure's entry of the program counts as a hit there, for procedure_info to show."""
    if stop.arguments is None or not stop.function_start:
        return
    stop_id = stop.stop_id
    with s.lock:
        if stop_id is None or stop_id == s.last_hit:
            return
        s.last_hit = stop_id
    runtime_observations.record_hit(
        call.session.state,
        s.program.sha256,
        stop.function_start,
        arguments=stop.arguments,
        debug_session=s.id,
        evidence_id=recorded.evidence_id,
    )


def _static_address(call: ToolCall, s: DebugSession, text: str, path: str) -> str:
    """A notebook name of the program, or hex, as a static address."""
    if text.lower().startswith("0x"):
        return text
    nb = call.session.annotations.load(s.program.sha256)
    found = nb.address_of(text)
    if found is None:
        raise invalid_request(f"{text} is not an address nor a notebook name", [issue(path, "invalid_value", text)])
    return found


# -- the tools ----------------------------------------------------------------------------------------------


def _room(call: ToolCall) -> DebugManager:
    """The session's debug sessions, when one more may open."""
    manager = manager_of(call)
    with manager.lock:
        if len(manager.sessions) >= MAX_SESSIONS:
            raise ReaError(
                "resource_constraint",
                f"{MAX_SESSIONS} debug sessions are open",
                remediation="End one with debug_end first.",
                details={"resource": "debug_sessions", "sessions": sorted(manager.sessions)},
            )
    return manager


def _emulator(program: Target) -> Emulator | None:
    """How the program runs here: natively (None), or under qemu-user for another architecture's Linux ELF."""
    from rea_plugins.lldb.abi import EMULATOR_PACKAGE
    from rea_plugins.lldb.abi import emulator_for
    from rea_plugins.lldb.abi import host_mismatch

    reason = host_mismatch(program.format, program.architecture)
    if reason is None:
        return None
    emulator = emulator_for(program.format, program.architecture)
    details = {"format": program.format, "architecture": program.architecture}
    if emulator is None:
        raise ReaError(
            "unsupported_target",
            f"lldb cannot run this program here: {reason}",
            details={"reason": "unsupported_host", **details},
        )
    path = shutil.which(emulator.command)
    if path is None:
        raise ReaError(
            "capability_unavailable",
            f"a {program.architecture} program runs here under {emulator.command}, which is not installed",
            remediation=f"Install qemu-user (apt-get install {EMULATOR_PACKAGE}) so {emulator.command} is on PATH.",
            details={"reason": "emulator_missing", "emulator": emulator.command, **details},
        )
    sysroot = next((r for r in emulator.sysroots if os.path.isdir(r)), "")
    return Emulator(path=os.path.realpath(path), architecture=emulator.lldb_architecture, sysroot=sysroot)


def _open(
    call: ToolCall,
    manager: DebugManager,
    program: Target,
    params: Launch | AttachPid,
    op: str,
    phase: str,
    event: str,
    *,
    foreign: bool = False,
) -> tuple[DebugSession, Started]:
    """A new debug session: its worker started and asked to ``op`` (launch, attach_pid); kept once it answers,
    with a lineage snapshot named ``event``. A worker that fails is closed, its lineage recorded."""
    spec = worker_spec(
        "rea_plugins.lldb.debugger",
        RESOURCE,
        executable=params.executable,
        working_directory=params.working_directory,
        filesystem_roots=params.filesystem_roots if isinstance(params, Launch) else (),
        sandbox=params.sandbox,
    )
    channel = WorkerChannel(spec, label="lldb", stateful=True)
    ident = f"dbg-{next(_counter)}"
    idle_s = arg_int(call.args, "idle_timeout_s", DEFAULT_IDLE_S)
    s = DebugSession(ident, channel, program, idle_s, foreign=foreign)
    try:
        reply = channel.request(
            op,
            msgspec.to_builtins(params, builtin_types=(bytes,)),
            call.ctx,
            deadline_s=LAUNCH_DEADLINE_S,
            phase=phase,
            announce=True,
        )
        started = msgspec.convert(reply.result(), Started)
    except BaseException:
        channel.close()
        call.session.record_lineage(channel.lineage())
        raise
    s.load_bias = started.load_bias
    with manager.lock:
        manager.sessions[ident] = s
    if channel.proc is not None:
        call.session.record_lineage([channel.proc.observe(event)])
    return s, started


def _launch(call: ToolCall) -> Evidence:
    _unavailable()
    program = _program(call)
    emulator = _emulator(program)
    manager = _room(call)
    args = call.args
    cwd = working_directory(call, program)
    environment = {k: os.environ[k] for k in inherited(args) if k in os.environ}
    environment.update(environment_of(args))
    params = Launch(
        executable=program.resolved_path,
        arguments=arg_strs(args, "arguments") or [],
        working_directory=cwd,
        environment=environment,
        stdin=arg_str(args, "stdin", "").encode("utf-8"),
        stop_at=arg_str(args, "stop_at", "main"),
        wait_ms=arg_int(args, "wait_ms", 5000),
        architecture=program.architecture or "",
        filesystem_roots=filesystem_roots(args),
        sandbox=arg_str(args, "sandbox", "required"),
        emulator=emulator,
    )
    # The worker with LLDB, lldb-server and the debuggee below it: what debug_end must leave nothing of.
    s, launched = _open(call, manager, program, params, "launch", "launching under LLDB", "debuggee_launched")
    proc = s.channel.proc
    return _evidence(
        call,
        s,
        launched.stop,
        # Under qemu-user's gdb stub LLDB sees no real pid (the stub reports 1): the lineage has the emulator's.
        pid=None if emulator else launched.pid,
        emulator=os.path.basename(emulator.path) if emulator else None,
        load_bias=None if s.load_bias is None else f"0x{s.load_bias:x}",
        debugger_version=launched.debugger_version,
        isolation=proc.isolation if proc is not None else None,
    )


def _breakpoint(call: ToolCall) -> Evidence:
    s = _session(call)
    args = call.args
    action = arg_str(args, "action", "set")
    if action == "list":
        listed = _request(s, call, "breakpoint_list", None, Breakpoints)
        return _evidence(call, s, _stop(call, s), breakpoints=listed.breakpoints)
    if action == "delete":
        ident = arg_int(args, "id")
        if ident is None:
            raise invalid_request("delete needs the id", [issue("id", "missing_argument", "which breakpoint")])
        deleting = DeleteBreakpoint(id=ident, watch=args.get("watch") is not None)
        listed = _request(s, call, "breakpoint_delete", deleting, Breakpoints)
        return _evidence(call, s, _stop(call, s), breakpoints=listed.breakpoints)
    params = SetBreakpoint(
        condition=arg_str(args, "condition"),
        ignore_count=arg_int(args, "ignore_count"),
        one_shot=arg_bool(args, "one_shot"),
    )
    watch = arg_object(args, "watch")
    procedure = arg_str(args, "procedure")
    if watch is not None:
        watched = arg_str(watch, "address")
        asked = Watch(
            variable=arg_str(watch, "variable"),
            address=None if watched is None else _static_address(call, s, watched, "watch/address"),
            size=arg_int(watch, "size"),
            access=arg_str(watch, "access", "write"),
        )
        params = msgspec.structs.replace(params, watch=asked)
    elif procedure is not None:
        nb = call.session.annotations.load(s.program.sha256)
        noted = nb.address_of(procedure)
        if procedure.lower().startswith("0x") or noted is not None:
            params = msgspec.structs.replace(
                params, address=noted or procedure, address_space="static", label=procedure
            )
        else:
            params = msgspec.structs.replace(params, name=procedure)
    elif "address" in args:
        address = arg_str(args, "address", "")
        params = msgspec.structs.replace(
            params, address=address, address_space=arg_str(args, "address_space", "static")
        )
    elif "source_line" in args:
        params = msgspec.structs.replace(params, source_line=arg_str(args, "source_line"))
    else:
        raise invalid_request(
            "name a procedure, an address, a source_line or a watch",
            [issue("procedure", "missing_argument", "what to break on")],
        )
    row = _request(s, call, "breakpoint_set", params, Breakpoint)
    return _evidence(call, s, _stop(call, s), breakpoint=row)


def _stop(call: ToolCall, s: DebugSession) -> Where:
    return _request(s, call, "where", None, Where)


def _continue(call: ToolCall) -> Evidence:
    s = _session(call)
    wait_ms = arg_int(call.args, "wait_ms", 2000)
    params = Resume(wait_ms=wait_ms, interrupt=arg_bool(call.args, "interrupt"))
    return _evidence(call, s, _request(s, call, "continue", params, Where, wait_ms))


def _step(call: ToolCall) -> Evidence:
    s = _session(call)
    wait_ms = arg_int(call.args, "wait_ms", 2000)
    params = Resume(kind=arg_str(call.args, "kind", "over"), wait_ms=wait_ms)
    return _evidence(call, s, _request(s, call, "step", params, Where, wait_ms))


def _state(call: ToolCall) -> Evidence:
    s = _session(call)
    params = Look(
        max_frames=arg_int(call.args, "max_frames", 16),
        all_registers=arg_bool(call.args, "all_registers"),
        output_bytes=arg_int(call.args, "output_bytes", 1024),
    )
    # Every field of the worker's State is DebugResult's own (threads, registers, backtrace, output...).
    found = msgspec.structs.asdict(_request(s, call, "state", params, State))
    return _evidence(call, s, found.pop("stop"), **found)


def _read_memory(call: ToolCall) -> Evidence:
    s = _session(call)
    args = call.args
    address = _static_address(call, s, arg_str(args, "address", ""), "address")  # address: required
    type_name = arg_str(args, "type")
    layout = None
    length = arg_int(args, "length", 64)
    if type_name is not None:
        nb = call.session.annotations.load(s.program.sha256)
        layout = typelib.Layout(nb.types, typelib.abi_for(s.program.format, s.program.architecture))
        size = layout.of_name(type_name, "type").size
        if not size:
            raise invalid_request(f"{type_name} has no size", [issue("type", "invalid_value", "incomplete type")])
        length = min(size, MAX_TYPED_BYTES)
    params = MemoryAccess(address=address, length=length, address_space=arg_str(args, "address_space", "auto"))
    read = _request(s, call, "read_memory", params, Read)
    data = read.data
    memory = Memory(pc=read.pc, address=read.address, module=read.module, length=len(data), hex=data.hex())
    if layout is not None and type_name is not None:
        values, truncated = typelib.typed_view(layout, type_name, data, int(read.pc, 16))
        memory = msgspec.structs.replace(memory, type=type_name, values=values, truncated=truncated)
    return _evidence(call, s, _stop(call, s), memory=memory)


def _write_memory(call: ToolCall) -> Evidence:
    s = _session(call)
    args = call.args
    if "register" in args:
        if "value" not in args:
            raise invalid_request("a register write needs value", [issue("value", "missing_argument", "the value")])
        register = SetRegister(register=arg_str(args, "register", ""), value=_int(args["value"]))
        written = _request(s, call, "write_register", register, Written)
    else:
        if "address" not in args or "hex" not in args:
            raise invalid_request(
                "a memory write needs address and hex", [issue("address", "missing_argument", "address and hex")]
            )
        address = _static_address(call, s, arg_str(args, "address", ""), "address")
        data = MemoryAccess(
            address=address,
            data=bytes.fromhex(arg_str(args, "hex", "")),
            address_space=arg_str(args, "address_space", "auto"),
        )
        written = _request(s, call, "write_memory", data, Written)
    return _evidence(call, s, _stop(call, s), written=written)


def _int(value: JSONValue) -> int:
    """A register value: hex text or an integer (the input schema allows either), as 64 bits."""
    if isinstance(value, str):
        return int(value, 16) & ((1 << 64) - 1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value & ((1 << 64) - 1)
    raise invalid_request("value must be hex text or an integer", [issue("value", "invalid_type", "a register value")])


def _end(call: ToolCall) -> Evidence:
    s = _session(call)
    if arg_bool(call.args, "detach"):
        return _evidence(call, s, _request(s, call, "detach", None, Where, 1000))
    manager = manager_of(call)
    with manager.lock:
        manager.sessions.pop(s.id, None)
    try:
        ended = _request(s, call, "end", None, State, 5000)
        where, output = ended.stop, ended.output
    except ReaError:
        where, output = Where(state="exited"), None
    outcome = s.channel.close()
    call.session.record_lineage(s.channel.lineage())
    manager.ended.append(Ended(session=s.id, reason="debug_end"))
    if outcome.remaining:
        raise ReaError(
            "execution_failure", "the debug session ended but owned processes remain"
        ).with_cleanup_incomplete(list(outcome.remaining), outcome.reason)
    return _evidence(call, s, where, output=output, ended=True)


def _attach(call: ToolCall) -> Evidence:
    pid = arg_int(call.args, "pid")
    if pid is not None:
        return _attach_process(call, pid)
    s = _session(call)
    wait_ms = arg_int(call.args, "wait_ms", 5000)
    return _evidence(call, s, _request(s, call, "attach", Resume(wait_ms=wait_ms), Where, wait_ms))


def _attach_process(call: ToolCall, pid: int) -> Evidence:
    """A new session attached to a process of the server's user that the operator started (REA_DEBUG_ATTACH)."""
    from rea_plugins.lldb.abi import host_mismatch
    from rea_plugins.lldb.client import ATTACH

    mode = ATTACH.read()
    if mode != "same-user":
        raise ReaError(
            "access_denied",
            f"debug_attach may not attach to process {pid}: {ATTACH.name} is {mode}",
            remediation=f"The operator may start rea with {ATTACH.name}=same-user to allow attaching to processes of "
            "the server's user; debug_launch starts a program in a debug session instead.",
            details={"reason": "attach_not_allowed", "setting": ATTACH.name, "value": mode, "pid": pid},
        )
    _unavailable()
    executable = _attachable(pid)
    program = identify(executable, call.ctx)
    reason = host_mismatch(program.format, program.architecture)
    if reason is not None:
        raise ReaError(
            "unsupported_target",
            f"lldb cannot attach to this process here: {reason}",
            details={"reason": "unsupported_host", "format": program.format, "architecture": program.architecture},
        )
    manager = _room(call)
    params = AttachPid(
        executable=executable,
        pid=pid,
        architecture=program.architecture or "",
        working_directory=os.path.dirname(executable),
        # LLDB must see the process to trace it: a sandbox's own pid namespace would hide it. The process runs
        # outside rea as the operator started it; the worker only reads and stops it.
        sandbox="none",
        wait_ms=arg_int(call.args, "wait_ms", 5000),
    )
    s, attached = _open(
        call, manager, program, params, "attach_pid", "attaching under LLDB", "debugger_attached", foreign=True
    )
    return _evidence(
        call,
        s,
        attached.stop,
        pid=pid,
        load_bias=None if s.load_bias is None else f"0x{s.load_bias:x}",
        debugger_version=attached.debugger_version,
        isolation=Isolation(
            sandbox="none",
            reason=f"attached to process {pid}, which the operator started outside rea ({ATTACH.name}=same-user)",
        ),
    )


def _attachable(pid: int) -> str:
    """The executable of ``pid`` when rea may attach to it: alive, the server's uid, not traced, and none of
    rea's own processes (the server, what it started) nor its ancestors (the client waiting for this answer)."""
    info = procfs.read(pid)
    if info is None or info.state in ("Z", "X"):
        raise ReaError(
            "target_unavailable", f"no process {pid} is running", details={"reason": "no_such_process", "pid": pid}
        )
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
        executable = os.readlink(f"/proc/{pid}/exe")
    except OSError as exc:
        raise ReaError(
            "access_denied",
            f"process {pid} cannot be inspected: {exc.strerror}",
            details={"reason": "not_inspectable", "pid": pid},
        ) from None
    if uid != os.getuid():
        raise ReaError(
            "access_denied",
            f"process {pid} belongs to another user",
            remediation="debug_attach reaches processes of the server's own user only.",
            details={"reason": "other_user", "pid": pid},
        )
    if _lineage_of(pid) & {os.getpid()} or pid in _lineage_of(os.getpid()):
        raise ReaError(
            "access_denied",
            f"process {pid} is rea's own, or the server's parent",
            remediation="debug_launch starts a program under a debug session; rea never stops itself or its client.",
            details={"reason": "rea_process", "pid": pid},
        )
    tracer = next((line.split()[1] for line in status.splitlines() if line.startswith("TracerPid:")), "0")
    if tracer != "0":
        raise ReaError(
            "target_unavailable",
            f"process {pid} is being debugged already (by pid {tracer})",
            details={"reason": "already_traced", "pid": pid},
        )
    if executable.endswith(" (deleted)"):
        raise ReaError(
            "target_unavailable",
            f"the program of process {pid} was deleted from disk",
            details={"reason": "executable_deleted", "pid": pid},
        )
    return executable


def _lineage_of(pid: int) -> set[int]:
    """``pid`` and its ancestors."""
    out: set[int] = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        info = procfs.read(pid)
        if info is None:
            break
        pid = info.ppid
    return out


# -- schemas ------------------------------------------------------------------------------------------------

# The input schemas' pieces are JSON Schema (its vocabulary, not rea records), hence JSONObject.
_SESSION: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "Debug session id; omitted: the only one open.",
}
_WAIT: JSONObject = {
    "type": "integer",
    "minimum": 0,
    "maximum": 60_000,
    "default": 2000,
    "description": "How long to wait for a stop before answering running.",
}
_SPACE: JSONObject = {
    "type": "string",
    "enum": ["auto", "static", "runtime"],
    "default": "auto",
    "description": "static: a file address, slid by rea; runtime: as loaded; auto: static inside the program.",
}


_IDLE: JSONObject = {
    "type": "integer",
    "minimum": 10,
    "maximum": 3600,
    "default": DEFAULT_IDLE_S,
    "description": "The session ends after this long without a call.",
}


def _schema(properties: JSONObject, required: tuple[str, ...] = ()) -> JSONObject:
    out: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


LAUNCH_SCHEMA = _schema(
    {
        "executable": {"type": "string", "minLength": 1, "description": "Program to launch; omitted: the open target."},
        "arguments": ARGUMENTS,
        "environment": ENVIRONMENT,
        "inherit_environment": INHERIT_ENVIRONMENT,
        "stdin": {"type": "string", "maxLength": 1 << 20, "description": "Text the program reads on stdin."},
        "working_directory": {
            "type": "string",
            "minLength": 1,
            "description": "Working directory of the program; default: its folder.",
        },
        "stop_at": {
            "type": "string",
            "enum": ["entry", "main", "run"],
            "default": "main",
            "description": "Stop at the first instruction, at main, or run until a breakpoint or exit.",
        },
        "wait_ms": {**_WAIT, "default": 5000},
        "idle_timeout_s": _IDLE,
        "filesystem_roots": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 64,
            "description": "Folders the sandboxed program may write, besides its working directory.",
        },
        "sandbox": {
            "type": "string",
            "enum": ["required", "preferred", "none"],
            "default": "required",
            "description": "required: under bubblewrap or fail; preferred: without it where the host cannot.",
        },
    }
)
BREAKPOINT_SCHEMA = _schema(
    {
        "session": _SESSION,
        "action": {
            "type": "string",
            "enum": ["set", "list", "delete"],
            "default": "set",
            "description": "Set one, list all, or delete one by id.",
        },
        "procedure": {"type": "string", "minLength": 1, "description": "Procedure name, notebook name or address."},
        "address": {"type": "string", "pattern": HEX, "description": "Static address to break at."},
        "address_space": {**_SPACE, "default": "static"},
        "source_line": {"type": "string", "pattern": "^.+:[0-9]+$", "description": "file.c:LINE (debug info)."},
        "condition": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "C expression."},
        "ignore_count": {"type": "integer", "minimum": 0, "maximum": 1 << 31, "description": "Hits to skip."},
        "one_shot": {"type": "boolean", "default": False, "description": "Delete it at its first stop."},
        "watch": {
            "type": "object",
            "properties": {
                "variable": {"type": "string", "minLength": 1, "description": "A global's name."},
                "address": {"type": "string", "minLength": 1, "description": "Static address or notebook name."},
                "size": {"type": "integer", "enum": [1, 2, 4, 8]},
                "access": {"type": "string", "enum": ["write", "read", "read_write"], "default": "write"},
            },
            "additionalProperties": False,
            "description": "A hardware watchpoint on data instead of a breakpoint.",
        },
        "id": {"type": "integer", "minimum": 0, "description": "Breakpoint (or watchpoint) to delete."},
    }
)
CONTINUE_SCHEMA = _schema(
    {
        "session": _SESSION,
        "wait_ms": _WAIT,
        "interrupt": {"type": "boolean", "default": False, "description": "Stop a running program instead."},
    }
)
STEP_SCHEMA = _schema(
    {
        "session": _SESSION,
        "kind": {
            "type": "string",
            "enum": ["into", "over", "out", "instruction", "instruction_over"],
            "default": "over",
            "description": "Source-line into/over (by instruction without line info), out, or one instruction.",
        },
        "wait_ms": _WAIT,
    }
)
STATE_SCHEMA = _schema(
    {
        "session": _SESSION,
        "max_frames": {
            "type": "integer",
            "minimum": 0,
            "maximum": 256,
            "default": 16,
            "description": "Backtrace frames shown.",
        },
        "all_registers": {"type": "boolean", "default": False, "description": "Every general register."},
        "output_bytes": {
            "type": "integer",
            "minimum": 0,
            "maximum": 16384,
            "default": 1024,
            "description": "Bytes shown of the end of stdout and stderr each.",
        },
    }
)
READ_SCHEMA = _schema(
    {
        "session": _SESSION,
        "address": {"type": "string", "minLength": 1, "description": "Address (hex) or notebook name."},
        "address_space": _SPACE,
        "length": {
            "type": "integer",
            "minimum": 1,
            "maximum": 4096,
            "default": 64,
            "description": "Bytes to read (a type reads its size instead).",
        },
        "type": {"type": "string", "minLength": 1, "description": "A type of the notebook: struct X, typedef..."},
    },
    ("address",),
)
WRITE_SCHEMA = _schema(
    {
        "session": _SESSION,
        "address": {"type": "string", "minLength": 1, "description": "Address (hex) or notebook name."},
        "address_space": _SPACE,
        "hex": {"type": "string", "pattern": "^([0-9a-fA-F]{2}){1,4096}$", "description": "Bytes to write."},
        "register": {"type": "string", "minLength": 1, "maxLength": 32, "description": "Register to set instead."},
        "value": {
            "anyOf": [{"type": "integer", "minimum": -((1 << 53) - 1), "maximum": (1 << 53) - 1}, {"type": "string"}],
            "description": "The register's new value (integer or hex text).",
        },
    }
)
END_SCHEMA = _schema(
    {
        "session": _SESSION,
        "detach": {
            "type": "boolean",
            "default": False,
            "description": "Detach and let the program run on instead (debug_attach returns to it).",
        },
    }
)
ATTACH_SCHEMA = _schema(
    {
        "session": _SESSION,
        "pid": {
            "type": "integer",
            "minimum": 2,
            "maximum": (1 << 31) - 1,
            "description": "A process of the server's user to attach a new session to (REA_DEBUG_ATTACH=same-user).",
        },
        "wait_ms": {**_WAIT, "default": 5000},
        "idle_timeout_s": _IDLE,
    }
)

_DRIVES = ToolEffects(records_evidence=True, launches_process=True, executes_foreign_code=True, idempotent=False)
_LOOKS = ToolEffects(records_evidence=True, idempotent=False)
_SETS = ToolEffects(records_evidence=True, mutates_session=True, idempotent=False)
_WRITES = ToolEffects(records_evidence=True, may_discard_data=True, executes_foreign_code=True, idempotent=False)


def _tool(
    name: str,
    description: str,
    schema: JSONObject,
    handler: Any,
    effects: ToolEffects,
    # Each example is the tool's arguments: JSON its input schema shapes.
    examples: tuple[JSONObject, ...],
) -> ToolDef:
    return ToolDef(
        examples=examples,
        result_type=DebugResult,
        name=name,
        family="debug",
        toolset=TOOLSET,
        description=description,
        input_schema=schema,
        handler=handler,
        effects=effects,
    )


TOOLS = (
    _tool(
        "debug_launch",
        "Launch a program (default: the open target; another architecture's Linux program under qemu-user) under "
        "LLDB, sandboxed, and keep it stopped at entry or main for the other debug tools. Returns the session id, "
        "the stop, the pid and the ASLR slide; every address the debug tools take or show is static (file) unless "
        "said otherwise.",
        LAUNCH_SCHEMA,
        _launch,
        _DRIVES,
        ({"stop_at": "main"}, {"executable": "/tmp/build/app", "arguments": ["--fast"], "stdin": "input\n"}),
    ),
    _tool(
        "debug_breakpoint",
        "Set, list or delete breakpoints of a debug session: by procedure name, notebook name, static address or "
        "file:line, with a condition, a hit count to skip or one-shot; or a hardware watchpoint on a global.",
        BREAKPOINT_SCHEMA,
        _breakpoint,
        _SETS,
        (
            {"session": "dbg-1", "procedure": "parse_header"},
            {"session": "dbg-1", "address": "0x1139", "condition": "len > 16"},
            {"session": "dbg-1", "watch": {"variable": "counter"}},
            {"session": "dbg-1", "action": "list"},
        ),
    ),
    _tool(
        "debug_continue",
        "Resume a debug session's program and wait (bounded) for it to stop: returns why and where it stopped "
        "(breakpoint, watchpoint, signal, exit) or that it is still running; interrupt stops a running one.",
        CONTINUE_SCHEMA,
        _continue,
        _DRIVES,
        ({"session": "dbg-1"}, {"session": "dbg-1", "interrupt": True}),
    ),
    _tool(
        "debug_step",
        "Step a stopped debug session's selected thread into, over or out of a call, or by one instruction, and "
        "wait (bounded) for the stop.",
        STEP_SCHEMA,
        _step,
        _DRIVES,
        ({"session": "dbg-1", "kind": "over"}, {"session": "dbg-1", "kind": "out"}),
    ),
    _tool(
        "debug_state",
        "The state of a debug session: threads, the selected frame's registers, the instruction and procedure at "
        "the PC, and the backtrace with static addresses and notebook names; the program's output so far.",
        STATE_SCHEMA,
        _state,
        _LOOKS,
        ({"session": "dbg-1"},),
    ),
    _tool(
        "debug_read_memory",
        "Read a stopped debug session's memory (bounded) as hex, or as a type of the notebook's type library "
        "(struct X at an address). Static addresses are slid by rea.",
        READ_SCHEMA,
        _read_memory,
        _LOOKS,
        (
            {"session": "dbg-1", "address": "0x4010", "length": 32},
            {"session": "dbg-1", "address": "0x7ffc0010", "type": "struct point"},
        ),
    ),
    _tool(
        "debug_write_memory",
        "Write bytes into a stopped debug session's memory, or set one of its registers (changes the program's state).",
        WRITE_SCHEMA,
        _write_memory,
        _WRITES,
        (
            {"session": "dbg-1", "address": "0x4010", "hex": "01000000"},
            {"session": "dbg-1", "register": "rdi", "value": 7},
        ),
    ),
    _tool(
        "debug_attach",
        "Attach a debug session again to the program it launched and detached from (debug_end with detach), "
        "stopping it where it runs; with pid, a new session attaches to a process of the server's user when the "
        "operator started rea with REA_DEBUG_ATTACH=same-user (debug_end then detaches, never kills).",
        ATTACH_SCHEMA,
        _attach,
        _DRIVES,
        ({"session": "dbg-1"}, {"pid": 4242}),
    ),
    _tool(
        "debug_end",
        "End a debug session: the program is killed (one attached by pid is detached), LLDB's worker ends, and no "
        "process is left; or detach from the program and let it run on (the session stays, for debug_attach).",
        END_SCHEMA,
        _end,
        ToolEffects(records_evidence=True, mutates_session=True, may_discard_data=True, idempotent=False),
        ({"session": "dbg-1"}, {"session": "dbg-1", "detach": True}),
    ),
)
