"""The LLDB worker: ``python -m rea_plugins.lldb.worker`` launches one debuggee and records calls in slices.

The client asks for the observation slice by slice (``run``), so everything recorded so far is already on
its side when the debuggee crashes, the worker is killed at a deadline or the caller cancels.
"""

from __future__ import annotations

import os
import time
from typing import Any

import msgspec

from rea.plugin import Reporter
from rea.plugin import Route
from rea.plugin import held
from rea.plugin import serve
from rea_plugins.lldb import launching
from rea_plugins.lldb.abi import ABIS
from rea_plugins.lldb.abi import Abi
from rea_plugins.lldb.output import Output
from rea_plugins.lldb.output import read_capped
from rea_plugins.lldb.shapes import AddressBreakpoint
from rea_plugins.lldb.shapes import CallEvent
from rea_plugins.lldb.shapes import Crash
from rea_plugins.lldb.shapes import EntryBreakpoint
from rea_plugins.lldb.shapes import FunctionBreakpoint
from rea_plugins.lldb.shapes import Launched
from rea_plugins.lldb.shapes import LaunchRequest
from rea_plugins.lldb.shapes import ModuleBreakpoint
from rea_plugins.lldb.shapes import ModuleProcedureBreakpoint
from rea_plugins.lldb.shapes import ProgramExit
from rea_plugins.lldb.shapes import RegisterValue
from rea_plugins.lldb.shapes import ReturnUpdate
from rea_plugins.lldb.shapes import RunSlice
from rea_plugins.lldb.shapes import Slice
from rea_plugins.lldb.shapes import StackFrame
from rea_plugins.lldb.shapes import Unresolved

# Signals after which a program cannot go on: the observation ends as a crash.
FATAL_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP"})
OUTPUT_LIMIT = 64 * 1024
POLL_S = 0.003


def _hex(value: int) -> str:
    return hex(value)


class Observer:
    """One debuggee under LLDB: entry breakpoints, return breakpoints, recorded hits."""

    def __init__(self, params: LaunchRequest) -> None:
        import lldb

        self.lldb = lldb
        self.params = params
        self.abi: Abi = ABIS[params.architecture]
        self.max_events = params.max_events
        self.duration_s = params.duration_ms / 1000
        self.argument_count = min(params.argument_count, len(self.abi.argument_registers))
        self.return_values = params.return_values
        self.max_frames = params.max_backtrace_frames
        self.debugger = launching.open_debugger(lldb)
        self.target: Any = None
        self.process: Any = None
        self.listener = self.debugger.GetListener()
        self.entries: dict[int, EntryBreakpoint] = {}  # breakpoint id -> requested spec
        self.returns: dict[int, int] = {}  # return address -> breakpoint id
        self.return_ids: set[int] = set()
        self.pending: dict[int, list[tuple[int, int]]] = {}  # thread id -> [(event index, expected sp)]
        self.events: list[CallEvent] = []
        self.sent = 0
        self.updates: list[ReturnUpdate] = []
        self.recorded = 0
        self.dropped = 0
        self.limits_hit: list[str] = []
        self.unresolved: list[Unresolved] = []
        self.started = 0.0
        self.done = False
        self.stop_reason = ""
        self.exit: ProgramExit | None = None
        self.crash: Crash | None = None
        self.out_dir = os.environ.get("TMPDIR") or "."

    # -- launch ---------------------------------------------------------------------------------

    def launch(self) -> Launched:
        lldb = self.lldb
        p = self.params
        self.target = launching.create_target(lldb, self.debugger, p.executable)
        self._set_breakpoints()
        info = launching.launch_info(lldb, p.arguments, p.working_directory, p.environment, self.out_dir, "/dev/null")
        self.started = time.monotonic()
        self.process = launching.launch(lldb, self.target, info)
        return Launched(
            pid=self.process.GetProcessID(),
            breakpoints=len(self.entries),
            unresolved=self.unresolved,
            debugger_version=launching.debugger_version(lldb),
            # Where the program was loaded relative to its link-time addresses (ASLR), stated once per capture.
            load_bias=launching.load_bias(lldb, self.target, self.target.GetModuleAtIndex(0)),
        )

    def _function_name(self, frame: Any) -> str | None:
        """The name rea gives the frame's function: its symbol's, else ``sub_<start>`` in the file's address
        space (LLDB calls a stripped function ``___lldb_unnamed_symbol...``)."""
        name = frame.GetFunctionName()
        if name and not name.startswith("___lldb_unnamed_symbol"):
            return str(name)
        start = frame.GetSymbol().GetStartAddress() if frame.GetSymbol().IsValid() else None
        if start is not None and start.IsValid() and start.GetSection().IsValid():
            return f"sub_{start.GetFileAddress():x}"
        return str(name) if name else None

    def _entry(self, bp: Any, spec: EntryBreakpoint) -> None:
        if bp.IsValid():
            self.entries[bp.GetID()] = spec
        else:
            self.unresolved.append(msgspec.structs.replace(spec, reason="LLDB refused the breakpoint"))

    def _set_breakpoints(self) -> None:
        lldb = self.lldb
        target = self.target
        for name in self.params.functions:
            self._entry(target.BreakpointCreateByName(name), FunctionBreakpoint(name=name))
        for item in self.params.addresses:
            spec = AddressBreakpoint(address=item.address, name=item.name, evidence_id=item.evidence_id)
            address = target.ResolveFileAddress(int(item.address, 16))
            if not address.IsValid() or not address.GetSection().IsValid():
                self.unresolved.append(msgspec.structs.replace(spec, reason="no section of the program holds it"))
                continue
            self._entry(target.BreakpointCreateBySBAddress(address), spec)
        module_spec = self.params.module_procedures
        if module_spec:
            wanted = module_spec.module
            module = target.GetModuleAtIndex(0) if not wanted else target.FindModule(lldb.SBFileSpec(wanted))
            if not module.IsValid():
                self.unresolved.append(ModuleBreakpoint(module=wanted, reason="no such module is loaded before launch"))
                return
            symbols: dict[int, str] = {}
            for sym in module:
                if sym.GetType() != lldb.eSymbolTypeCode or sym.IsSynthetic():
                    continue
                start = sym.GetStartAddress()
                if start.IsValid() and sym.GetName():
                    symbols.setdefault(start.GetFileAddress(), sym.GetName())
            limit = module_spec.max_functions
            if len(symbols) > limit:
                self.limits_hit.append("max_functions")
            for address in sorted(symbols)[:limit]:
                resolved = target.ResolveFileAddress(address)
                self._entry(
                    target.BreakpointCreateBySBAddress(resolved),
                    ModuleProcedureBreakpoint(name=symbols[address], address=_hex(address)),
                )

    # -- observation ----------------------------------------------------------------------------

    def run(self, slice_s: float, reporter: Reporter) -> Slice:
        lldb = self.lldb
        deadline = time.monotonic() + slice_s
        event = lldb.SBEvent()
        while not self.done and time.monotonic() < deadline:
            if time.monotonic() - self.started >= self.duration_s:
                self.limits_hit.append("duration_ms")
                self._finish("duration")
                break
            if not self.listener.GetNextEvent(event):
                time.sleep(POLL_S)
                continue
            if not lldb.SBProcess.EventIsProcessEvent(event) or lldb.SBProcess.GetRestartedFromEvent(event):
                continue
            state = lldb.SBProcess.GetStateFromEvent(event)
            if state == lldb.eStateStopped:
                self._on_stop()
            elif state == lldb.eStateExited or state in (lldb.eStateCrashed, lldb.eStateDetached):
                self._exited()
        reporter.progress(f"{self.recorded} calls recorded")
        return self._slice()

    def _slice(self, output: dict[str, Output] | None = None) -> Slice:
        out = Slice(
            events=self.events[self.sent :],
            updates=self.updates,
            done=self.done,
            stop_reason=self.stop_reason,
            exit=self.exit,
            crash=self.crash,
            dropped=self.dropped,
            limits_hit=sorted(set(self.limits_hit)),
            elapsed_ms=int((time.monotonic() - self.started) * 1000),
            output=output,
        )
        self.sent = len(self.events)
        self.updates = []
        return out

    def _on_stop(self) -> None:
        lldb = self.lldb
        crash = None
        for thread in self.process:
            reason = thread.GetStopReason()
            if reason == lldb.eStopReasonBreakpoint:
                bp_id = thread.GetStopReasonDataAtIndex(0)
                if bp_id in self.return_ids:
                    self._returned(thread)
                spec = self.entries.get(bp_id)
                if spec is not None:
                    self._hit(thread, spec)
            elif reason == lldb.eStopReasonSignal:
                name = self.process.GetUnixSignals().GetSignalAsCString(thread.GetStopReasonDataAtIndex(0))
                if name in FATAL_SIGNALS:
                    crash = self._crash(thread, name)
            elif reason == lldb.eStopReasonException:
                crash = self._crash(thread, None)
        if crash is not None:
            self.crash = crash
            self._finish("crashed")
        elif self.recorded >= self.max_events:
            self.limits_hit.append("max_events")
            self._finish("max_events")
        else:
            self.process.Continue()

    def _frames(self, thread: Any) -> list[StackFrame]:
        frames = []
        for index in range(min(thread.GetNumFrames(), self.max_frames)):
            frame = thread.GetFrameAtIndex(index)
            module = frame.GetModule().GetFileSpec().GetFilename() if frame.GetModule().IsValid() else None
            address = frame.GetPCAddress()
            frames.append(
                StackFrame(
                    pc=_hex(frame.GetPC()),
                    function=self._function_name(frame),
                    module=module,
                    file_address=_hex(address.GetFileAddress()) if address.IsValid() else None,
                )
            )
        return frames

    def _register(self, frame: Any, name: str) -> int:
        return int(frame.FindRegister(name).GetValueAsUnsigned())

    def _hit(self, thread: Any, spec: EntryBreakpoint) -> None:
        if self.recorded >= self.max_events:
            self.dropped += 1
            return
        frame = thread.GetFrameAtIndex(0)
        pc = frame.GetPC()
        address = frame.GetPCAddress()
        module = frame.GetModule()
        arguments = [
            RegisterValue(register=reg, value=_hex(self._register(frame, reg)))
            for reg in self.abi.argument_registers[: self.argument_count]
        ]
        event = CallEvent(
            index=len(self.events),
            t_ms=int((time.monotonic() - self.started) * 1000),
            function=self._function_name(frame) or (spec.name if isinstance(spec.name, str) else None),
            module=module.GetFileSpec().GetFilename() if module.IsValid() else None,
            address=_hex(pc),
            file_address=_hex(address.GetFileAddress()) if address.IsValid() else None,
            thread=thread.GetThreadID(),
            thread_index=thread.GetIndexID(),
            arguments=arguments,
            backtrace=self._frames(thread),
            breakpoint=spec,
            # Null until the call returns (the key is left out when return values were not asked for).
            return_value=None if self.return_values else msgspec.UNSET,
        )
        if self.return_values:
            self._watch_return(thread, frame, event.index)
        self.events.append(event)
        self.recorded += 1

    def _watch_return(self, thread: Any, frame: Any, index: int) -> None:
        sp = self._register(frame, self.abi.stack_pointer)
        if self.abi.return_address == "stack":
            error = self.lldb.SBError()
            ret = self.process.ReadPointerFromMemory(sp, error)
            if not error.Success():
                return
        else:
            ret = self._register(frame, self.abi.return_address)
        if ret not in self.returns:
            bp = self.target.BreakpointCreateByAddress(ret)
            if not bp.IsValid():
                return
            self.returns[ret] = bp.GetID()
            self.return_ids.add(bp.GetID())
        self.pending.setdefault(thread.GetThreadID(), []).append((index, sp + self.abi.sp_delta_on_return))

    def _returned(self, thread: Any) -> None:
        frame = thread.GetFrameAtIndex(0)
        sp = self._register(frame, self.abi.stack_pointer)
        waiting = self.pending.get(thread.GetThreadID(), [])
        for position in range(len(waiting) - 1, -1, -1):
            index, expected = waiting[position]
            if expected == sp:
                del waiting[position]
                value = _hex(self._register(frame, self.abi.return_register))
                self.events[index] = msgspec.structs.replace(self.events[index], return_value=value)
                if index < self.sent:
                    self.updates.append(ReturnUpdate(index=index, return_value=value))
                return

    def _crash(self, thread: Any, signal_name: str | None) -> Crash:
        frame = thread.GetFrameAtIndex(0)
        return Crash(
            signal=signal_name,
            description=(thread.GetStopDescription(256) or "")[:256],
            thread=thread.GetThreadID(),
            pc=_hex(frame.GetPC()),
            function=self._function_name(frame),
            backtrace=self._frames(thread),
            t_ms=int((time.monotonic() - self.started) * 1000),
        )

    def _exited(self) -> None:
        self.done = True
        self.stop_reason = self.stop_reason or "exited"
        description = self.process.GetExitDescription()
        self.exit = ProgramExit(
            exit_code=self.process.GetExitStatus(), description=description[:200] if description else None
        )

    def _finish(self, reason: str) -> None:
        """End the observation: the debuggee is killed (LLDB reaps it) and its end recorded."""
        self.stop_reason = reason
        self._kill()

    def _kill(self) -> None:
        lldb = self.lldb
        if self.process is None or not self.process.IsValid():
            self.done = True
            return
        if self.process.GetState() not in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
            self.process.Kill()
        deadline = time.monotonic() + 5.0
        event = lldb.SBEvent()
        while time.monotonic() < deadline and self.process.GetState() != lldb.eStateExited:
            if not self.listener.GetNextEvent(event):
                time.sleep(POLL_S)
        self.done = True
        if self.exit is None:
            description = self.process.GetExitDescription()
            self.exit = ProgramExit(
                exit_code=self.process.GetExitStatus(),
                description=description[:200] if description else None,
                killed_by_observer=True,
            )

    def stop(self) -> Slice:
        if not self.done:
            self.stop_reason = self.stop_reason or "stopped"
            self._kill()
        out = self._slice(
            {
                name: read_capped(os.path.join(self.out_dir, name), OUTPUT_LIMIT, from_end=False)
                for name in ("stdout", "stderr")
            }
        )
        self.debugger.DeleteTarget(self.target)
        self.lldb.SBDebugger.Destroy(self.debugger)
        return out


class _State:
    observer: Observer | None = None


STATE = _State()


def _observer() -> Observer:
    return held(STATE.observer, "LLDB", "launched program", "launches the program before observing it")


def launch(request: LaunchRequest, reporter: Reporter) -> Launched:
    reporter.progress("loading LLDB")
    STATE.observer = Observer(request)
    reporter.progress("launching the program")
    return STATE.observer.launch()


# The routes take the worker protocol's request, the client's Struct as msgpack decodes it: converted back here.
ROUTES: dict[str, Route] = {
    "launch": lambda params, reporter: launch(msgspec.convert(params, LaunchRequest), reporter),
    "run": lambda params, reporter: _observer().run(msgspec.convert(params, RunSlice).slice_ms / 1000, reporter),
    "stop": lambda params, reporter: _observer().stop(),
}

if __name__ == "__main__":
    raise SystemExit(serve(ROUTES))
