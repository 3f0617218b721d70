"""The debug worker's requests: the server sends each as one of these Structs (msgpack builtins, a buffer's bytes
as bytes) and the worker (``rea_plugins.lldb.debugger``) converts it back. None of it reaches the agent."""

from __future__ import annotations

from rea.plugin import Record


class Emulator(Record):
    """qemu-user, which runs a program of another architecture: its path, LLDB's name of the architecture and the
    sysroot holding the program's loader and libraries ("" where none is installed)."""

    path: str
    architecture: str
    sysroot: str


class Launch(Record):
    executable: str
    arguments: list[str]
    working_directory: str
    environment: dict[str, str]
    stdin: bytes
    stop_at: str
    wait_ms: int
    architecture: str
    filesystem_roots: list[str]
    sandbox: str
    emulator: Emulator | None


class AttachPid(Record):
    executable: str
    pid: int
    architecture: str
    working_directory: str
    sandbox: str
    wait_ms: int


class Watch(Record):
    """A watchpoint asked for: on a global ``variable`` or at an ``address`` (static, by then)."""

    variable: str | None = None
    address: str | None = None
    address_space: str = "auto"
    size: int | None = None
    access: str = "write"


class SetBreakpoint(Record):
    """A breakpoint on a ``name``, a ``source_line`` or an ``address`` (``label``: the notebook name it was given
    as), or a ``watch``."""

    name: str | None = None
    source_line: str | None = None
    address: str | None = None
    address_space: str = "auto"
    label: str | None = None
    condition: str | None = None
    ignore_count: int | None = None
    one_shot: bool = False
    watch: Watch | None = None


class DeleteBreakpoint(Record):
    id: int
    watch: bool


class Resume(Record):
    """``continue`` (or ``interrupt`` a running program), ``step`` (``kind``) and ``attach``: each waits for a stop
    at most ``wait_ms``."""

    wait_ms: int
    interrupt: bool = False
    kind: str = "over"


class Look(Record):
    """``state``: how much of the backtrace, the registers and the program's output to answer."""

    max_frames: int
    all_registers: bool
    output_bytes: int


class MemoryAccess(Record):
    """``read_memory`` (``length`` bytes) or ``write_memory`` (``data``) at ``address``."""

    address: str
    address_space: str
    length: int = 0
    data: bytes = b""


class SetRegister(Record):
    register: str
    value: int
