"""inspect_recorded_crash: threads, signal, faulting address, mapped files and backtraces of an ELF core file,
with the executable's procedures and instructions asked of the provider the kernel selects for it."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import TypeVar

from rea.plugin import AnalysisClient
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import Extents
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import __version__
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import next_offset
from rea.plugin import read_hashed
from rea.plugin import select
from rea.plugin import unwind
from rea_plugins.crash import core as core_mod
from rea_plugins.crash.core import Core
from rea_plugins.crash.core import CoreThread
from rea_plugins.crash.model import Backtrace
from rea_plugins.crash.model import Executable
from rea_plugins.crash.model import Frame
from rea_plugins.crash.model import Location
from rea_plugins.crash.model import Mapping
from rea_plugins.crash.model import MappingPage
from rea_plugins.crash.model import Procedure
from rea_plugins.crash.model import RecordedCrash
from rea_plugins.crash.model import Signal
from rea_plugins.crash.model import Thread
from rea_plugins.crash.model import ThreadPage

PROVIDER = ProviderIdentity(id="crash", name="rea core file reader (LIEF)", version=__version__)
OPERATION = "inspect_recorded_crash"
MAX_CORE_BYTES = 2 << 30
THREAD_LIMIT = 4
MAPPING_LIMIT = 20
MAX_FRAMES = 16
MAX_PAGE = 1000
# How far into a procedure its instruction is looked for (read_function_instructions pages).
MAX_INSTRUCTIONS = 20_000
T = TypeVar("T")
P = TypeVar("P", ThreadPage, MappingPage)


class Code:
    """The executable's procedures and instructions, from the session's provider when the open target is the
    executable, else from a client of the selected provider opened for this call and closed after it."""

    def __init__(self, call: ToolCall, target: Target, bias: int) -> None:
        self.call = call
        self.target = target
        self.bias = bias
        self.client: AnalysisClient | None = None
        session = call.session
        self.bound = session.target is not None and session.target.sha256 == target.sha256
        if self.bound:
            binding = session.binding
            self.provider_id = binding.provider.id if binding is not None else ""
        else:
            selection = select(session.registry, target, None)
            provider = session.registry.providers[selection.provider_id]
            self.provider_id = provider.descriptor.id
            call.ctx.progress(f"inspect_recorded_crash: opening the executable with {self.provider_id}")
            self.client = provider.open(target, session.run_id or "", call.ctx)
        self._cache: dict[int, tuple[Procedure | None, str | None]] = {}

    def run(self, operation: str, params: Arguments) -> JSONObject:
        """The engine's answer to ``operation``, as its JSON object (read key by key with type checks)."""
        if self.client is None:
            return dict(self.call.session.execute(operation, params, self.call.ctx).normalized)
        self.call.ctx.check(operation)
        return dict(self.client.execute(operation, params, self.call.ctx).normalized)

    def at(self, static: int) -> tuple[Procedure | None, str | None]:
        """The procedure holding ``static`` (a link address) and the text of the instruction starting there."""
        if static in self._cache:
            return self._cache[static]
        found: tuple[Procedure | None, str | None] = (None, None)
        try:
            body = self.run("resolve_containing_procedure", {"address": hex(static)})
            proc = body.get("procedure")
            if isinstance(proc, dict) and proc:
                start = int(str(proc["address"]), 16)
                procedure = Procedure(name=str(proc["name"]), address=hex(start), offset=static - start)
                found = (procedure, self._instruction(start, static))
        except ReaError as exc:
            if exc.code in ("cancelled", "timeout"):
                raise
        self._cache[static] = found
        return found

    def _instruction(self, procedure: int, address: int) -> str | None:
        offset: int | None = 0
        while offset is not None and offset < MAX_INSTRUCTIONS:
            page = self.run("read_function_instructions", {"procedure": hex(procedure), "offset": offset, "limit": 500})
            rows = page.get("instructions")
            for row in rows if isinstance(rows, list) else []:
                if not isinstance(row, dict):
                    continue
                at = int(str(row["address"]), 16)
                if at == address:
                    return str(row.get("text", ""))
                if at > address:
                    return None
            nxt = page.get("next_offset")
            offset = nxt if isinstance(nxt, int) else None
        return None

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            finally:
                self.call.session.record_lineage(self.client.lineage())
                self.client = None


def _executable_mapping(core: Core) -> str | None:
    entry = core.auxv.get("ENTRY")
    found = core.mapping_at(entry) if entry is not None else None
    return found.path if found is not None else None


def _load_bias(core: Core, data: bytes) -> tuple[int | None, list[tuple[int, int]]]:
    """How far the executable was moved when loaded (AT_ENTRY less its entry point), and its unwind extents."""
    import lief

    lief.logging.disable()
    binary = lief.ELF.parse(data)
    if binary is None:
        return None, []
    entry = core.auxv.get("ENTRY")
    bias = None if entry is None else entry - int(binary.entrypoint)
    ranges: list[tuple[int, int]] = []
    eh = binary.get_section(".eh_frame")
    if eh is not None:
        try:
            ranges = unwind.fde_ranges(bytes(eh.content), int(eh.virtual_address), core.word, core.little)
        except ValueError:
            ranges = []
    return bias, ranges


def _offset_in(mapping: core_mod.CoreMapping | None, address: int) -> int | None:
    """The file offset ``address`` maps to (None past what JSON carries exactly: a damaged mapping)."""
    if mapping is None:
        return None
    offset = address - mapping.start + mapping.offset
    return offset if offset < core_mod.SAFE_INTEGER else None


class Locator:
    def __init__(self, core: Core, exe_path: str | None, code: Code | None, extents: Extents | None) -> None:
        self.core = core
        self.exe_path = exe_path
        self.code = code
        self.extents = extents

    def static(self, address: int) -> int | None:
        if self.code is None:
            return None
        mapping = self.core.mapping_at(address)
        if mapping is None or mapping.path != self.exe_path:
            return None
        return address - self.code.bias

    def locate(self, address: int) -> Location:
        mapping = self.core.mapping_at(address)
        static = self.static(address)
        procedure, instruction = self.code.at(static) if self.code is not None and static is not None else (None, None)
        return Location(
            mapping=mapping.path if mapping is not None else None,
            mapping_offset=_offset_in(mapping, address),
            static_address=hex(static) if static is not None else None,
            procedure=procedure,
            instruction=instruction,
        )

    def at_procedure_start(self, address: int) -> bool:
        """Whether ``address`` is the first instruction of a function (its frame not yet built), by the unwind
        tables of the executable."""
        static = self.static(address)
        return static is not None and self.extents is not None and static in self.extents.start_set


def backtrace(core: Core, thread: CoreThread, locator: Locator, max_frames: int) -> Backtrace:
    """Frames by the frame-pointer chain ([fp] = caller's fp, [fp + word] = return address on x86 and AArch64;
    ARM's layout varies by compiler, so only the PC frame there), reading the stack bytes the core holds."""
    frames = [Frame(pc=hex(thread.pc), found_by="registers", location=locator.locate(thread.pc))]
    word = core.word
    fp = thread.fp
    if core.architecture == "arm":
        return Backtrace(status="partial", stopped="frame-pointer walking is not done on 32-bit ARM", frames=frames)
    if locator.at_procedure_start(thread.pc):
        # The crash hit a function's first instruction: its caller's return address is on the stack top.
        ret = core.pointer(thread.sp)
        if ret is None:
            return Backtrace(status="partial", stopped=f"the stack at {thread.sp:#x} is not in the core", frames=frames)
        frames.append(Frame(pc=hex(ret), found_by="stack-top", location=locator.locate(ret)))
    while len(frames) < max_frames:
        if not fp:
            return Backtrace(status="complete", frames=frames)
        saved, ret = core.pointer(fp), core.pointer(fp + word)
        if saved is None or ret is None:
            return Backtrace(
                status="partial",
                stopped=f"the frame at {fp:#x} is not in the core's memory (or is no frame: code without frame "
                "pointers)",
                frames=frames,
            )
        if ret == 0:
            return Backtrace(status="complete", frames=frames)
        frames.append(Frame(pc=hex(ret), found_by="frame-pointer", location=locator.locate(ret)))
        if saved != 0 and saved <= fp:
            return Backtrace(
                status="partial",
                stopped=f"the frame chain does not grow toward the stack base at {fp:#x} (code without frame pointers)",
                frames=frames,
            )
        fp = saved
    return Backtrace(status="partial", stopped=f"max_frames ({max_frames}) reached", frames=frames)


def _signal(number: int, code: int | None = None, fault: int | None = None) -> Signal:
    return Signal(
        number=number,
        name=core_mod.signal_name(number),
        code=code,
        code_name=core_mod.code_name(number, code) if code is not None else None,
        fault_address=hex(fault) if fault is not None else None,
    )


def _process_signal(core: Core, notes: list[str]) -> Signal | None:
    """The signal of the thread that took it, with NT_SIGINFO's code and address when they describe that signal."""
    stopped = core.threads[0].signal if core.threads else 0
    if core.signo is not None and (core.signo == stopped or not stopped):
        return _signal(core.signo, core.code, core.fault_address)
    if core.signo is not None:
        notes.append(
            f"NT_SIGINFO describes {core_mod.signal_name(core.signo)}, not the thread's "
            f"{core_mod.signal_name(stopped)} (a core a debugger wrote): the faulting address is not recorded."
        )
    return _signal(stopped) if stopped else None


def _paged(kind: Callable[..., P], items: list[T], offset: int, limit: int, total: int) -> P:
    """The page ``kind`` (ThreadPage, MappingPage) of ``items``, those shown from ``offset`` of ``total``."""
    return kind(
        total=total, offset=offset, limit=limit, next_offset=next_offset(offset, len(items), total), items=items
    )


def _window(args: Arguments, prefix: str, default: int) -> tuple[int, int]:
    return arg_int(args, f"{prefix}offset", 0), min(arg_int(args, f"{prefix}limit", default), MAX_PAGE)


def _executable_target(call: ToolCall, core: Core, exe_mapping: str | None) -> Target | None:
    given = arg_str(call.args, "executable_path")
    if given:
        return identify(given, call.ctx)
    open_target = call.session.target
    if (
        open_target is not None
        and exe_mapping is not None
        and os.path.basename(open_target.resolved_path) == os.path.basename(exe_mapping)
    ):
        return open_target
    return None


def inspect(call: ToolCall, core: Core) -> RecordedCrash:
    args = call.args
    notes = list(core.notes)
    exe_mapping = _executable_mapping(core)
    exe = Executable(path=exe_mapping, command=core.command)
    code: Code | None = None
    extents: Extents | None = None
    target = _executable_target(call, core, exe_mapping)
    try:
        if target is not None:
            data = read_hashed(target, MAX_CORE_BYTES, field="executable_path")
            bias, ranges = _load_bias(core, data)
            if bias is None or bias % 4096:
                if arg_str(call.args, "executable_path"):
                    raise invalid_request(
                        f"{target.path} is not the program this core recorded (its entry point does not land where "
                        "the core's auxiliary vector puts it)",
                        [issue("executable_path", "invalid_value", "not the crashed program")],
                    )
                notes.append(f"The open binary {target.name} is not the crashed program; no procedures are named.")
            else:
                code = Code(call, target, bias)
                extents = Extents(ranges)
                exe = Executable(
                    path=exe_mapping,
                    command=core.command,
                    read_from=target.path,
                    load_bias=hex(bias),
                    provider=code.provider_id,
                )
        elif exe_mapping is not None:
            notes.append("Give executable_path (or open the program) to name the procedure at each thread's PC.")
        locator = Locator(core, exe_mapping, code, extents)
        t_off, t_lim = _window(args, "thread_", THREAD_LIMIT)
        max_frames = min(arg_int(args, "max_frames", MAX_FRAMES), 256)
        with_registers = arg_bool(args, "registers", default=True)
        threads: list[Thread] = []
        chosen = core.threads[t_off : t_off + t_lim]
        for n, t in enumerate(chosen):
            call.ctx.check("reading threads")
            call.ctx.progress(f"inspect_recorded_crash: thread {n + 1} of {len(chosen)}", done=n, total=len(chosen))
            first = t is core.threads[0]
            threads.append(
                Thread(
                    tid=t.tid,
                    # The kernel writes the thread that took the signal first.
                    crashed=first and t.signal != 0,
                    signal=_signal(t.signal, core.code, core.fault_address)
                    if first and core.signo == t.signal
                    else _signal(t.signal),
                    pc=hex(t.pc),
                    sp=hex(t.sp),
                    registers={k: hex(v) for k, v in t.registers.items()} if with_registers else {},
                    location=locator.locate(t.pc),
                    backtrace=backtrace(core, t, locator, max_frames),
                )
            )
    finally:
        if code is not None:
            code.close()
    m_off, m_lim = _window(args, "mapping_", MAPPING_LIMIT)
    mappings = core.mappings[m_off : m_off + m_lim]
    return RecordedCrash(
        architecture=core.architecture,
        pid=core.pid,
        signal=_process_signal(core, notes),
        executable=exe,
        threads=_paged(ThreadPage, threads, t_off, t_lim, len(core.threads)),
        mappings=_paged(
            MappingPage,
            [Mapping(path=m.path, start=hex(m.start), end=hex(m.end), file_offset=m.offset) for m in mappings],
            m_off,
            m_lim,
            len(core.mappings),
        ),
        notes=notes,
    )


def handle(call: ToolCall) -> Evidence:
    target = identify(arg_str(call.args, "path", ""), call.ctx)  # required by the schema
    data = read_hashed(target, MAX_CORE_BYTES, field="path")
    call.ctx.progress("inspect_recorded_crash: reading the core's notes", done=0, total=1)
    try:
        core = core_mod.parse(data)
    except ReaError:
        raise
    except (RecursionError, MemoryError, ValueError, TypeError, struct.error) as exc:
        raise core_mod.malformed(type(exc).__name__) from None
    result = inspect(call, core)
    import lief

    profile = ev_mod.make_profile(PROVIDER, {"lief": str(getattr(lief, "__version__", ""))})
    params = {k: v for k, v in sorted(call.args.items()) if k not in ("path", "executable_path")}
    limitations = ["Static reading of the recorded process: nothing was run."]
    return call.session.evidence(
        OPERATION,
        params,
        OperationResult(normalized=result, limitations=limitations),
        bound=False,
        target=target,
        provider=PROVIDER,
        analysis_profile=profile,
    )
