"""The result of every ``debug_*`` tool: the session, where its program is, and what the call asked for."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Isolation
from rea.plugin import Record
from rea.plugin import typelib
from rea_plugins.lldb.output import Output


class Place(Record):
    """A code location: loaded ``pc``, static ``address`` (the file address in ``module``), the procedure."""

    pc: str
    address: str | None = None
    module: str | None = None
    main_module: bool | None = None
    function: str | None = None
    function_start: str | None = None
    # The procedure as the notebook names it (a user name first), with the offset into it.
    procedure: str | None = None
    source: str | None = None


class Exit(Record):
    exit_code: int
    description: str | None = None


class Stop(Place):
    """The program's state after the call: stopped (with why and where), still running, or exited."""

    state: Literal["stopped", "running", "exited", "detached"]
    pc: str = ""
    reason: str | None = None
    breakpoint: int | None = None
    watchpoint: int | None = None
    signal: str | None = None
    description: str | None = None
    thread: int | None = None
    exit: Exit | None = None
    # At a procedure's entry: the calling convention's integer argument registers (rdi, rsi, ... or x0 ...).
    arguments: dict[str, str] | None = None


class BreakpointSpec(Record):
    """What a breakpoint was set on (its ``kind`` beside it): a name, a source line, an address (with the notebook
    name it was given as, ``label``), or a watchpoint's access, size and place (loaded ``pc``, static ``address``
    and ``module``, as ``Debuggee.static_of`` gives them) and the variable it watches."""

    name: str | None = None
    source_line: str | None = None
    access: str | None = None
    size: int | None = None
    pc: str | None = None
    address: str | None = None
    module: str | None = None
    variable: str | None = None
    label: str | None = None


class Breakpoint(Record):
    id: int
    kind: str
    spec: BreakpointSpec
    hit_count: int
    ignore_count: int
    enabled: bool
    one_shot: bool
    condition: str | None = None
    locations: list[dict[str, str]]


class Thread(Record):
    index: int
    tid: int
    selected: bool
    reason: str | None = None
    description: str | None = None
    breakpoint: int | None = None
    watchpoint: int | None = None
    signal: str | None = None


class Frame(Place):
    index: int


class Memory(Record):
    """Bytes read from the program: loaded and static address, hex, and the typed view when a type was named."""

    pc: str
    address: str | None = None
    module: str | None = None
    length: int
    hex: str
    type: str | None = None
    values: list[typelib.TypedValue] | None = None
    truncated: bool = False


class Written(Record):
    pc: str | None = None
    address: str | None = None
    written: int | None = None
    register: str | None = None
    old: str | None = None
    new: str | None = None


# -- the debug worker's answers (decoded by the server into DebugResult) --------------------------------------


class Where(Stop):
    """The program's state as the worker reports it: a ``Stop`` with LLDB's count of the stop, by which the server
    records each stop once (not part of the result)."""

    stop_id: str | None = None


class StopReason(Record):
    """Why a thread stopped (a stop's and each thread's)."""

    reason: str
    breakpoint: int | None = None
    watchpoint: int | None = None
    signal: str | None = None
    description: str


class Started(Record):
    """A launch's or an attach's answer: the program's pid, its ASLR slide (an integer), LLDB's version, the stop."""

    pid: int | None = None
    load_bias: int | None
    debugger_version: str
    stop: Where


class Breakpoints(Record):
    breakpoints: list[Breakpoint]


class State(Record):
    """``state``'s answer (threads, registers and the backtrace only while the program is stopped); ``end``'s is
    the stop and the output."""

    stop: Where
    output: dict[str, Output]
    threads: list[Thread] | None = None
    registers: dict[str, str] | None = None
    instruction: str | None = None
    backtrace: list[Frame] | None = None
    frames_total: int | None = None


class Read(Record):
    """Bytes read from the program, at their loaded and static address."""

    pc: str
    address: str | None = None
    module: str | None = None
    data: bytes


class DebugResult(Record):
    """One debug call's answer. ``session`` names the debug session for the next call."""

    session: str
    program: str
    stop: Stop
    pid: int | None = None
    # Loaded address minus static address of the program (ASLR); rea applies it to every address.
    load_bias: str | None = None
    isolation: Isolation | None = None
    debugger_version: str | None = None
    # The emulator a program of another architecture runs under (qemu-user's, e.g. qemu-aarch64).
    emulator: str | None = None
    breakpoint: Breakpoint | None = None
    breakpoints: list[Breakpoint] | None = None
    threads: list[Thread] | None = None
    registers: dict[str, str] | None = None
    instruction: str | None = None
    backtrace: list[Frame] | None = None
    frames_total: int | None = None
    memory: Memory | None = None
    written: Written | None = None
    output: dict[str, Output] | None = None
    ended: bool = False
