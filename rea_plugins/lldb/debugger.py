"""The debug-session worker: ``python -m rea_plugins.lldb.debugger`` holds one debuggee stopped between requests.

Every request answers within its bounded wait: a resumed program that has not stopped by then is reported as
running, and the next request may wait again or interrupt it. Addresses in replies carry both the loaded
address (``pc``) and the static one (``address``: the file address in its module), so the server and the agent
never apply the ASLR slide themselves.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import Route
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import serve
from rea_plugins.lldb import asks
from rea_plugins.lldb import launching
from rea_plugins.lldb.abi import ABIS
from rea_plugins.lldb.debugshapes import Breakpoint
from rea_plugins.lldb.debugshapes import Breakpoints
from rea_plugins.lldb.debugshapes import BreakpointSpec
from rea_plugins.lldb.debugshapes import Exit
from rea_plugins.lldb.debugshapes import Frame
from rea_plugins.lldb.debugshapes import Place
from rea_plugins.lldb.debugshapes import Read
from rea_plugins.lldb.debugshapes import Started
from rea_plugins.lldb.debugshapes import State
from rea_plugins.lldb.debugshapes import StopReason
from rea_plugins.lldb.debugshapes import Thread
from rea_plugins.lldb.debugshapes import Where
from rea_plugins.lldb.debugshapes import Written
from rea_plugins.lldb.output import Output
from rea_plugins.lldb.output import read_capped

T = TypeVar("T")
POLL_S = 0.0005
OUTPUT_LIMIT = 16 * 1024
MAX_READ = 64 * 1024
FILE_LIMIT = 64 << 20
# The integer registers debug_state reports by default (all of the general set on request).
MAIN_REGISTERS = {
    "x86_64": (
        *("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"),
        *("r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags"),
    ),
    # qemu-user's gdb stub names the frame pointer and link register x29 and x30.
    "arm64": (*(f"x{i}" for i in range(31)), "fp", "lr", "sp", "pc", "cpsr"),
}


def _hex(value: int) -> str:
    return f"0x{value:x}"


class Debuggee:
    """One program under LLDB, driven request by request."""

    def __init__(self, architecture: str) -> None:
        import lldb

        self.lldb = lldb
        self.architecture = architecture
        # How the program was launched (where it first stops; under qemu-user or not): how its stops read.
        self.stop_at = ""
        self.emulated = False
        self.debugger = launching.open_debugger(lldb)
        self.listener = self.debugger.GetListener()
        self.target: Any = None
        self.process: Any = None
        self.module: Any = None
        self.out_dir = os.environ.get("TMPDIR") or "."
        # Breakpoint id -> its kind and what it was set on; watchpoint id -> what it watches.
        self.breakpoints: dict[int, tuple[str, BreakpointSpec]] = {}
        self.watchpoints: dict[int, BreakpointSpec] = {}
        self.last_state = "not launched"
        self.exit: Exit | None = None
        # The signal the program last stopped with (number, name): LLDB reports a death by a signal passed on to the
        # program as an exit whose status is the signal's number, with no description.
        self.last_signal: tuple[int, str] | None = None
        # The pid of the program debug_end detached from (it runs on in the sandbox until debug_attach).
        self.detached_pid: int | None = None
        # Attaches so far: LLDB counts stops per process, so a stop is named by both.
        self.attaches = 0
        # Attached by pid to a process the operator started: ending detaches from it instead of killing it.
        self.foreign = False
        # LLDB's stop id of the stop at entry (launched with stop_at entry), else 0.
        self.entry_stop = 0

    # -- launch -----------------------------------------------------------------------------------

    def launch(self, p: asks.Launch) -> Started:
        lldb = self.lldb
        self.target = launching.create_target(lldb, self.debugger, p.executable, self.platform(p.emulator))
        self.module = self.target.GetModuleAtIndex(0)
        stdin = os.path.join(self.out_dir, "stdin")
        with open(stdin, "wb") as fh:
            fh.write(p.stdin)
        info = launching.launch_info(lldb, p.arguments, p.working_directory, p.environment, self.out_dir, stdin)
        stop_at = self.stop_at = p.stop_at
        self.emulated = p.emulator is not None
        main_bp = None
        if stop_at == "entry":
            info.SetLaunchFlags(info.GetLaunchFlags() | lldb.eLaunchFlagStopAtEntry)
        elif stop_at == "main":
            main_bp = self.target.BreakpointCreateByName("main", self.module.GetFileSpec().GetFilename())
            if not main_bp.IsValid() or main_bp.GetNumLocations() == 0:
                raise ReaError(
                    "unsupported_target",
                    "the program has no main symbol to stop at",
                    remediation="Launch with stop_at 'entry' and set a breakpoint by address.",
                    details={"reason": "no_main"},
                )
            main_bp.SetOneShot(True)
        # A program that floods its output fills a file of the private directory, never a pipe the server reads:
        # each file it writes is capped (lldb-server and the program inherit the limit; past it, SIGXFSZ).
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
        self.process = launching.launch(lldb, self.target, info)
        stop = self.wait(p.wait_ms / 1000)
        if stop_at == "entry" and stop.state == "stopped":
            self.entry_stop = int(self.process.GetStopID())
            stop = self.describe()
        return Started(
            pid=self.process.GetProcessID(),
            load_bias=self.load_bias(),
            debugger_version=launching.debugger_version(lldb),
            stop=stop,
        )

    def platform(self, emulator: asks.Emulator | None) -> str | None:
        """LLDB's platform for the program: the host's, or qemu-user (the emulator, started by LLDB as its child,
        serves its gdb stub on a Unix socket of the private directory) for another architecture."""
        if not emulator:
            return None
        name = self.debugger.GetInstanceName()
        settings = {"architecture": emulator.architecture, "emulator-path": emulator.path}
        if emulator.sysroot:
            # Where qemu finds the program's dynamic loader and libraries.
            settings["emulator-env-vars"] = f"QEMU_LD_PREFIX={emulator.sysroot}"
        for key, value in settings.items():
            self.lldb.SBDebugger.SetInternalVariable(f"platform.plugin.qemu-user.{key}", value, name)
        return "qemu-user"

    def load_bias(self) -> int | None:
        return launching.load_bias(self.lldb, self.target, self.module)

    # -- waiting and stops ------------------------------------------------------------------------

    def wait(self, timeout_s: float) -> Where:
        """Pump LLDB's events until the program stops or ends, or ``timeout_s`` passes (then: running)."""
        lldb = self.lldb
        event = lldb.SBEvent()
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            if self.listener.GetNextEvent(event):
                if lldb.SBProcess.EventIsProcessEvent(event) and not lldb.SBProcess.GetRestartedFromEvent(event):
                    state = lldb.SBProcess.GetStateFromEvent(event)
                    if state in (lldb.eStateStopped, lldb.eStateExited, lldb.eStateCrashed, lldb.eStateDetached):
                        break
                continue
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        return self.describe()

    def describe(self) -> Where:
        lldb = self.lldb
        if self.detached_pid is not None:
            return Where(state="detached")
        process = self.process
        state = process.GetState() if process is not None and process.IsValid() else lldb.eStateInvalid
        if state in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
            self.last_state = "exited"
            if self.exit is None and process is not None and process.IsValid():
                description = process.GetExitDescription()
                status = process.GetExitStatus()
                if not description and self.last_signal is not None and self.last_signal[0] == status:
                    description = f"ended by {self.last_signal[1]}, the signal it last stopped with"
                self.exit = Exit(exit_code=status, description=description[:200] if description else None)
            return Where(state="exited", exit=self.exit)
        if state in (lldb.eStateRunning, lldb.eStateStepping, lldb.eStateLaunching, lldb.eStateAttaching):
            self.last_state = "running"
            return Where(state="running")
        self.last_state = "stopped"
        thread = process.GetSelectedThread()
        frame = thread.GetFrameAtIndex(0)
        place = self.place(frame)
        return Where(
            state="stopped",
            **msgspec.structs.asdict(self.reason(thread)),
            thread=thread.GetIndexID(),
            **msgspec.structs.asdict(place),
            # LLDB's count of the process's stops: the server records each stop once, whichever calls describe it.
            stop_id=f"{self.attaches}:{process.GetStopID()}",
            # At a procedure's entry the calling convention's argument registers hold its arguments.
            arguments=self.arguments(frame)
            if place.main_module and place.address and place.address == place.function_start
            else None,
        )

    def arguments(self, frame: Any) -> dict[str, str]:
        abi = ABIS.get(self.architecture)
        out: dict[str, str] = {}
        for name in abi.argument_registers if abi else ():
            reg = frame.FindRegister(name)
            if reg.IsValid():
                out[name] = _hex(reg.GetValueAsUnsigned())
        return out

    def reason(self, thread: Any) -> StopReason:
        lldb = self.lldb
        kind = thread.GetStopReason()
        description = (thread.GetStopDescription(200) or "").strip()
        if kind == lldb.eStopReasonBreakpoint:
            bp_id = int(thread.GetStopReasonDataAtIndex(0))
            return StopReason(reason="breakpoint", breakpoint=bp_id, description=description)
        if kind == lldb.eStopReasonWatchpoint:
            wp_id = int(thread.GetStopReasonDataAtIndex(0))
            return StopReason(reason="watchpoint", watchpoint=wp_id, description=description)
        if kind == lldb.eStopReasonSignal:
            number = int(thread.GetStopReasonDataAtIndex(0))
            name = self.process.GetUnixSignals().GetSignalAsCString(number)
            self.last_signal = (number, name)
            if name == "SIGTRAP" and self.emulated and self.process.GetStopID() == self.entry_stop:
                # qemu's gdb stub reports the stop at the first instruction as a SIGTRAP.
                return StopReason(reason="entry", description=description)
            return StopReason(reason="signal", signal=name, description=description)
        if kind in (lldb.eStopReasonPlanComplete, lldb.eStopReasonTrace):
            return StopReason(reason="step", description=description)
        if kind == lldb.eStopReasonException:
            return StopReason(reason="exception", description=description)
        return StopReason(reason="entry" if self.stop_at == "entry" else "stopped", description=description)

    def place(self, frame: Any) -> Place:
        """Where ``frame`` is: loaded pc, static address in its module, module, function and its static start."""
        address = frame.GetPCAddress()
        module = frame.GetModule()
        symbol = frame.GetSymbol()
        name = frame.GetFunctionName()
        function_start = None
        if symbol.IsValid():
            start = symbol.GetStartAddress()
            if start.IsValid() and start.GetSection().IsValid():
                function_start = _hex(start.GetFileAddress())
                if not name or name.startswith("___lldb_unnamed_symbol"):
                    name = f"sub_{start.GetFileAddress():x}"
        line = frame.GetLineEntry()
        return Place(
            pc=_hex(frame.GetPC()),
            address=_hex(address.GetFileAddress()) if address.IsValid() and address.GetSection().IsValid() else None,
            module=module.GetFileSpec().GetFilename() if module.IsValid() else None,
            main_module=module == self.module if module.IsValid() else None,
            function=str(name) if name else None,
            function_start=function_start,
            source=f"{line.GetFileSpec().GetFilename()}:{line.GetLine()}"
            if line.IsValid() and line.GetFileSpec().IsValid()
            else None,
        )

    def require_stopped(self) -> Any:
        if self.process is None or not self.process.IsValid():
            raise ReaError("execution_failure", "no program is launched", details={"reason": "not_launched"})
        state = self.describe().state
        if state != "stopped":
            raise ReaError(
                "invalid_request",
                f"the program is {state}: this needs it stopped",
                remediation="Call debug_continue with interrupt true to stop it, or launch it again."
                if state == "running"
                else "Launch it again with debug_launch.",
                details={"reason": f"program_{state}", "state": state},
            )
        return self.process.GetSelectedThread()

    # -- addresses --------------------------------------------------------------------------------

    def load_address(self, value: int, space: str) -> int:
        """The loaded address of ``value``: a static address of the program is slid; a runtime one is kept.
        ``auto`` takes an address inside the program's sections as static."""
        if space == "runtime":
            return value
        resolved = self.target.ResolveFileAddress(value)
        inside = resolved.IsValid() and resolved.GetSection().IsValid() and resolved.GetModule() == self.module
        if space == "static" and not inside:
            raise invalid_request(
                f"{_hex(value)} is not a static address of the program",
                [issue("address", "invalid_value", "outside every section of the program")],
            )
        if not inside:
            return value
        loaded = resolved.GetLoadAddress(self.target)
        if loaded == self.lldb.LLDB_INVALID_ADDRESS:
            raise ReaError(
                "invalid_request",
                f"{_hex(value)} is not loaded yet",
                remediation="Launch with stop_at 'main' or later, so the program is mapped.",
                details={"reason": "not_loaded"},
            )
        return int(loaded)

    def static_of(self, loaded: int) -> Place:
        """The loaded address ``loaded`` with its static address and module (where a section of one holds it)."""
        address = self.lldb.SBAddress(loaded, self.target)
        if not address.IsValid() or not address.GetSection().IsValid():
            return Place(pc=_hex(loaded))
        module = address.GetModule()
        return Place(
            pc=_hex(loaded),
            address=_hex(address.GetFileAddress()),
            module=module.GetFileSpec().GetFilename() if module.IsValid() else None,
        )

    # -- breakpoints and watchpoints ----------------------------------------------------------------

    def breakpoint_set(self, p: asks.SetBreakpoint) -> Breakpoint:
        target = self.target
        if p.watch:
            return self._watch(p.watch)
        if p.name:
            bp = target.BreakpointCreateByName(p.name, self.module.GetFileSpec().GetFilename())
            kind, spec = "name", BreakpointSpec(name=p.name)
        elif p.source_line:
            file, _, line = p.source_line.rpartition(":")
            bp = target.BreakpointCreateByLocation(file, int(line))
            kind, spec = "source_line", BreakpointSpec(source_line=p.source_line)
        else:
            space = p.address_space
            value = int(p.address or "", 16)
            if space != "runtime" and self.process is not None:
                resolved = target.ResolveFileAddress(value)
                bp = target.BreakpointCreateBySBAddress(resolved)
            else:
                bp = target.BreakpointCreateByAddress(value)
            kind, spec = "address", BreakpointSpec(address=p.address)
        if not bp.IsValid() or bp.GetNumLocations() == 0:
            if bp.IsValid():
                target.BreakpointDelete(bp.GetID())
            raise invalid_request(
                "LLDB found no location for the breakpoint",
                [issue("procedure" if kind == "name" else "address", "invalid_value", "no location")],
            )
        if p.condition:
            bp.SetCondition(p.condition)
        if p.ignore_count:
            bp.SetIgnoreCount(p.ignore_count)
        if p.one_shot:
            bp.SetOneShot(True)
        if p.label:
            spec = msgspec.structs.replace(spec, label=p.label)
        self.breakpoints[bp.GetID()] = (kind, spec)
        return self._bp_row(bp)

    def _bp_row(self, bp: Any) -> Breakpoint:
        kind, spec = self.breakpoints.get(bp.GetID(), ("address", BreakpointSpec()))
        locations = []
        for i in range(min(bp.GetNumLocations(), 16)):
            loc = bp.GetLocationAtIndex(i)
            address = loc.GetAddress()
            row: dict[str, str] = {}
            if address.IsValid() and address.GetSection().IsValid():
                row["address"] = _hex(address.GetFileAddress())
            load = loc.GetLoadAddress()
            if load != self.lldb.LLDB_INVALID_ADDRESS:
                row["pc"] = _hex(load)
            locations.append(row)
        return Breakpoint(
            id=bp.GetID(),
            kind=kind,
            spec=spec,
            hit_count=bp.GetHitCount(),
            ignore_count=bp.GetIgnoreCount(),
            enabled=bp.IsEnabled(),
            one_shot=bp.IsOneShot(),
            condition=bp.GetCondition() or None,
            locations=locations,
        )

    def _watch(self, w: asks.Watch) -> Breakpoint:
        lldb = self.lldb
        if self.process is None:
            raise ReaError("execution_failure", "no program is launched", details={"reason": "not_launched"})
        size = w.size or 0
        if w.variable:
            value = self.target.FindFirstGlobalVariable(w.variable)
            if not value.IsValid():
                symbols = self.target.FindSymbols(w.variable)
                if symbols.GetSize() == 0:
                    raise invalid_request(
                        f"no global named {w.variable}", [issue("watch/variable", "invalid_value", "not found")]
                    )
                start = symbols.GetContextAtIndex(0).GetSymbol().GetStartAddress()
                loaded = int(start.GetLoadAddress(self.target))
                size = size or int(symbols.GetContextAtIndex(0).GetSymbol().GetSize() or 4)
            else:
                loaded = int(value.GetLoadAddress())
                size = size or int(value.GetByteSize())
        else:
            loaded = self.load_address(int(w.address or "", 16), w.address_space)
            size = size or 4
        access = w.access
        error = lldb.SBError()
        wp = self.target.WatchAddress(loaded, size, access in ("read", "read_write"), access != "read", error)
        if not error.Success() or not wp.IsValid():
            raise ReaError(
                "capability_unavailable",
                f"LLDB could not set the watchpoint: {(error.GetCString() or '')[:200]}",
                remediation="Hardware watchpoints watch 1, 2, 4 or 8 aligned bytes, a few at a time.",
                details={"reason": "watchpoint_refused"},
            )
        at = self.static_of(loaded)
        self.watchpoints[wp.GetID()] = BreakpointSpec(
            access=access, size=size, pc=at.pc, address=at.address, module=at.module, variable=w.variable or None
        )
        return self._wp_row(wp)

    def _wp_row(self, wp: Any) -> Breakpoint:
        return Breakpoint(
            id=wp.GetID(),
            kind="watch",
            spec=self.watchpoints.get(wp.GetID(), BreakpointSpec()),
            hit_count=wp.GetHitCount(),
            ignore_count=wp.GetIgnoreCount(),
            enabled=wp.IsEnabled(),
            one_shot=False,
            locations=[],
        )

    def breakpoint_list(self) -> Breakpoints:
        rows = [self._bp_row(self.target.FindBreakpointByID(i)) for i in sorted(self.breakpoints)]
        rows += [self._wp_row(self.target.FindWatchpointByID(i)) for i in sorted(self.watchpoints)]
        return Breakpoints(breakpoints=rows)

    def breakpoint_delete(self, p: asks.DeleteBreakpoint) -> Breakpoints:
        ident = p.id
        if p.watch or (ident in self.watchpoints and ident not in self.breakpoints):
            if ident not in self.watchpoints:
                raise invalid_request(f"no watchpoint {ident}", [issue("id", "invalid_value", "unknown watchpoint")])
            self.target.DeleteWatchpoint(ident)
            del self.watchpoints[ident]
        else:
            if ident not in self.breakpoints:
                raise invalid_request(f"no breakpoint {ident}", [issue("id", "invalid_value", "unknown breakpoint")])
            self.target.BreakpointDelete(ident)
            del self.breakpoints[ident]
        return self.breakpoint_list()

    # -- running ----------------------------------------------------------------------------------

    def detach(self) -> Where:
        """Let the program run on without the debugger (in the same sandbox, so debug_attach can come back)."""
        if self.process is None or not self.process.IsValid() or self.detached_pid is not None:
            raise ReaError("invalid_request", "no attached program to detach from", details={"reason": "not_attached"})
        pid = int(self.process.GetProcessID())
        error = self.process.Detach()
        if not error.Success():
            raise ReaError(
                "execution_failure",
                f"LLDB could not detach: {(error.GetCString() or '')[:200]}",
                details={"reason": "detach_failed"},
            )
        self.wait(1.0)
        self.detached_pid = pid
        return self.describe()

    def attach_to(self, p: asks.AttachPid) -> Started:
        """Attach to a process the operator started (the server checked that it may); it stops where it runs."""
        lldb = self.lldb
        self.target = self.debugger.CreateTarget(p.executable, None, None, True, lldb.SBError())
        if not self.target.IsValid():
            raise ReaError(
                "unsupported_target",
                "LLDB could not load the process's executable",
                details={"reason": "target_not_loaded"},
            )
        self.module = self.target.GetModuleAtIndex(0)
        self.foreign = True
        self.detached_pid = p.pid
        self.attaches = -1  # attach() counts this first one as 0
        stop = self.attach(asks.Resume(wait_ms=p.wait_ms))
        return Started(
            load_bias=self.load_bias(),
            debugger_version=launching.debugger_version(lldb),
            stop=stop,
        )

    def attach(self, p: asks.Resume) -> Where:
        """Attach again to the program this session launched and detached from; it stops where it is."""
        lldb = self.lldb
        pid = self.detached_pid
        if pid is None:
            raise ReaError(
                "invalid_request",
                "the session's program is attached already",
                remediation="debug_attach follows a debug_end with detach true.",
                details={"reason": "not_detached"},
            )
        error = lldb.SBError()
        process = self.target.AttachToProcessWithID(self.listener, pid, error)
        if not error.Success() or not process.IsValid():
            raise ReaError(
                "process_capture_failed",
                f"LLDB could not attach to the program: {(error.GetCString() or '')[:200]}",
                remediation="The program may have exited since it was detached; launch it again.",
                details={"reason": "attach_failed"},
            )
        self.process = process
        self.attaches += 1
        self.detached_pid = None
        self.exit = None
        # An attach stops the program without the stop event a resume waits for: poll its state instead.
        event = lldb.SBEvent()
        deadline = time.monotonic() + p.wait_ms / 1000
        while process.GetState() != lldb.eStateStopped and time.monotonic() < deadline:
            if not self.listener.GetNextEvent(event):
                time.sleep(POLL_S)
        return self.describe()

    def cont(self, p: asks.Resume) -> Where:
        lldb = self.lldb
        if self.detached_pid is not None:
            raise ReaError(
                "invalid_request",
                "the program is detached",
                remediation="Call debug_attach first.",
                details={"reason": "program_detached", "state": "detached"},
            )
        wait_s = p.wait_ms / 1000
        if self.process is None or not self.process.IsValid():
            raise ReaError("execution_failure", "no program is launched", details={"reason": "not_launched"})
        state = self.process.GetState()
        if p.interrupt:
            if state == lldb.eStateRunning:
                self.process.Stop()
            return self.wait(max(wait_s, 1.0))
        if state == lldb.eStateStopped:
            self.process.Continue()
        return self.wait(wait_s)

    def step(self, p: asks.Resume) -> Where:
        thread = self.require_stopped()
        kind = p.kind
        wait_s = p.wait_ms / 1000
        error = self.lldb.SBError()
        if kind == "into":
            thread.StepInto()
        elif kind == "over":
            thread.StepOver(self.lldb.eOnlyDuringStepping, error)
        elif kind == "out":
            thread.StepOut(error)
        elif kind == "instruction":
            thread.StepInstruction(False, error)
        else:  # instruction_over
            thread.StepInstruction(True, error)
        if not error.Success():
            raise ReaError(
                "execution_failure",
                f"LLDB could not step: {(error.GetCString() or '')[:200]}",
                details={"reason": "step_failed"},
            )
        return self.wait(wait_s)

    # -- looking ----------------------------------------------------------------------------------

    def state(self, p: asks.Look) -> State:
        summary = self.describe()
        output = self.output(p.output_bytes)
        if summary.state != "stopped":
            return State(stop=summary, output=output)
        process = self.process
        selected = process.GetSelectedThread()
        threads = [
            Thread(
                index=t.GetIndexID(),
                tid=t.GetThreadID(),
                selected=t == selected,
                **msgspec.structs.asdict(self.reason(t)),
            )
            for t in list(process)[:64]
        ]
        frame = selected.GetFrameAtIndex(0)
        registers = self.registers(frame, p.all_registers)
        instruction = None
        instructions = self.target.ReadInstructions(frame.GetPCAddress(), 1)
        if instructions.GetSize():
            ins = instructions.GetInstructionAtIndex(0)
            instruction = f"{ins.GetMnemonic(self.target)} {ins.GetOperands(self.target)}".strip()
        frames = [
            Frame(index=i, **msgspec.structs.asdict(self.place(selected.GetFrameAtIndex(i))))
            for i in range(min(selected.GetNumFrames(), p.max_frames))
        ]
        return State(
            stop=summary,
            output=output,
            threads=threads,
            registers=registers,
            instruction=instruction,
            backtrace=frames,
            frames_total=selected.GetNumFrames(),
        )

    def registers(self, frame: Any, everything: bool) -> dict[str, str]:
        sets = frame.GetRegisters()
        general = sets.GetValueAtIndex(0)
        wanted = None if everything else set(MAIN_REGISTERS.get(self.architecture, ()))
        out = {}
        for i in range(general.GetNumChildren()):
            reg = general.GetChildAtIndex(i)
            name = reg.GetName()
            if wanted is None or name in wanted:
                out[name] = _hex(reg.GetValueAsUnsigned())
        return out

    def read_memory(self, p: asks.MemoryAccess) -> Read:
        self.require_stopped()
        loaded = self.load_address(int(p.address, 16), p.address_space)
        length = min(p.length, MAX_READ)
        error = self.lldb.SBError()
        data = self.process.ReadMemory(loaded, length, error)
        if not error.Success() or data is None:
            raise ReaError(
                "invalid_request",
                f"the program's memory at {_hex(loaded)} cannot be read",
                details={"reason": "unreadable", "pc": _hex(loaded)},
            )
        where = self.static_of(loaded)
        return Read(pc=where.pc, address=where.address, module=where.module, data=bytes(data))

    def write_memory(self, p: asks.MemoryAccess) -> Written:
        self.require_stopped()
        loaded = self.load_address(int(p.address, 16), p.address_space)
        data = p.data
        error = self.lldb.SBError()
        written = self.process.WriteMemory(loaded, data, error)
        if not error.Success():
            raise ReaError(
                "invalid_request",
                f"the program's memory at {_hex(loaded)} cannot be written",
                details={"reason": "unwritable", "pc": _hex(loaded)},
            )
        where = self.static_of(loaded)
        return Written(pc=where.pc, address=where.address, written=int(written))

    def write_register(self, p: asks.SetRegister) -> Written:
        thread = self.require_stopped()
        frame = thread.GetFrameAtIndex(0)
        reg = frame.FindRegister(p.register)
        if not reg.IsValid():
            raise invalid_request(f"no register {p.register}", [issue("register", "invalid_value", "unknown register")])
        error = self.lldb.SBError()
        old = reg.GetValueAsUnsigned()
        if not reg.SetValueFromCString(_hex(p.value), error):
            raise ReaError(
                "invalid_request",
                f"LLDB could not write {p.register}: {(error.GetCString() or '')[:200]}",
                details={"reason": "register_write_failed"},
            )
        return Written(
            register=p.register,
            old=_hex(old),
            new=_hex(frame.FindRegister(p.register).GetValueAsUnsigned()),
        )

    def output(self, limit: int = 1024) -> dict[str, Output]:
        """The last ``limit`` bytes of what the program wrote to stdout and stderr, with the sizes."""
        limit = min(limit, OUTPUT_LIMIT)
        return {
            name: read_capped(os.path.join(self.out_dir, name), limit, from_end=True) for name in ("stdout", "stderr")
        }

    def end(self) -> State:
        lldb = self.lldb
        if self.detached_pid is not None and not self.foreign:
            # Detached: the program is killed with the worker's sandbox when the channel closes.
            self.detached_pid = None
            self.exit = Exit(exit_code=-1, description="killed with the debug session (it was detached)")
        live = self.process is not None and self.process.IsValid()
        if live and self.process.GetState() not in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
            if self.foreign:
                # Detach removes the breakpoints from its code first; the process runs on as it was.
                if self.process.GetState() == lldb.eStateRunning:
                    self.process.Stop()
                    self.wait(2.0)
                self.process.Detach()
                self.wait(1.0)
                self.detached_pid = int(self.process.GetProcessID())
            else:
                self.process.Kill()
                self.wait(5.0)
        out = State(stop=self.describe(), output=self.output())
        self.debugger.DeleteTarget(self.target)
        lldb.SBDebugger.Destroy(self.debugger)
        return out


class _State:
    debuggee: Debuggee | None = None


STATE = _State()


def _debuggee() -> Debuggee:
    if STATE.debuggee is None:
        raise ReaError("execution_failure", "the debug worker has no program", details={"reason": "not_launched"})
    return STATE.debuggee


def _launch(request: asks.Launch, reporter: Reporter) -> Started:
    reporter.progress("launching the program under LLDB")
    STATE.debuggee = Debuggee(request.architecture)
    return STATE.debuggee.launch(request)


def _attach_pid(request: asks.AttachPid, reporter: Reporter) -> Started:
    reporter.progress(f"attaching LLDB to process {request.pid}")
    STATE.debuggee = Debuggee(request.architecture)
    return STATE.debuggee.attach_to(request)


# The routes take the worker protocol's request, the server's Struct as msgpack decodes it: converted back here.
def _asked(method: Callable[[Debuggee, T], object], request: type[T]) -> Route:
    """The route of a request the program's debuggee answers: ``method`` with the request converted."""
    return lambda params, reporter: method(_debuggee(), msgspec.convert(params, request))


def _told(method: Callable[[Debuggee], object]) -> Route:
    """The route of a request without parameters."""
    return lambda params, reporter: method(_debuggee())


ROUTES: dict[str, Route] = {
    "launch": lambda params, reporter: _launch(msgspec.convert(params, asks.Launch), reporter),
    "breakpoint_set": _asked(Debuggee.breakpoint_set, asks.SetBreakpoint),
    "breakpoint_list": _told(Debuggee.breakpoint_list),
    "breakpoint_delete": _asked(Debuggee.breakpoint_delete, asks.DeleteBreakpoint),
    "continue": _asked(Debuggee.cont, asks.Resume),
    "step": _asked(Debuggee.step, asks.Resume),
    "state": _asked(Debuggee.state, asks.Look),
    "where": _told(Debuggee.describe),
    "read_memory": _asked(Debuggee.read_memory, asks.MemoryAccess),
    "write_memory": _asked(Debuggee.write_memory, asks.MemoryAccess),
    "write_register": _asked(Debuggee.write_register, asks.SetRegister),
    "end": _told(Debuggee.end),
    "detach": _told(Debuggee.detach),
    "attach": _asked(Debuggee.attach, asks.Resume),
    "attach_pid": lambda params, reporter: _attach_pid(msgspec.convert(params, asks.AttachPid), reporter),
}

if __name__ == "__main__":
    raise SystemExit(serve(ROUTES))
