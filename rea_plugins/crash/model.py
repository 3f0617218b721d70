"""The result of inspect_recorded_crash, defined once: its output schema is generated from these Structs."""

from __future__ import annotations

from typing import Literal

from rea.plugin import PageOf
from rea.plugin import Record

SCHEMA_VERSION = 1


class Signal(Record):
    """The signal a thread stopped with: number, name, si_code (and its name), the faulting address if any."""

    number: int
    name: str
    code: int | None = None
    code_name: str | None = None
    fault_address: str | None = None


class Mapping(Record):
    """A file mapped into the process (NT_FILE): ``[start, end)`` and the file offset it maps."""

    path: str
    start: str
    end: str
    file_offset: int


class Procedure(Record):
    """The executable's procedure holding an address, from the provider that read the executable."""

    name: str
    address: str
    offset: int


class Location(Record):
    """Where an address lies: the mapped file and offset into it, and in the executable its procedure and the
    instruction there (the executable's link address, not the process's)."""

    mapping: str | None = None
    mapping_offset: int | None = None
    static_address: str | None = None
    procedure: Procedure | None = None
    instruction: str | None = None


class Frame(Record):
    """One frame of a backtrace: its program counter, how it was found, and where it lies."""

    pc: str
    found_by: Literal["registers", "frame-pointer", "stack-top"]
    location: Location


class Backtrace(Record):
    """Frames from the thread's registers outward; ``partial`` with the reason when the walk stopped early."""

    status: Literal["complete", "partial"]
    stopped: str = ""
    frames: list[Frame]


class Thread(Record):
    """One thread of the core: id, signal, the registers (hex), its program counter's location and a backtrace."""

    tid: int
    crashed: bool
    signal: Signal
    pc: str
    sp: str
    registers: dict[str, str] = {}
    location: Location
    backtrace: Backtrace


class ThreadPage(PageOf[Thread]):
    pass


class MappingPage(PageOf[Mapping]):
    pass


class Executable(Record):
    """The program that crashed: its path as the core maps it, and the file rea read its code from (when one
    was given or is open and matches the core: its entry point lands where the core's auxiliary vector says)."""

    path: str | None = None
    command: str = ""
    read_from: str | None = None
    load_bias: str | None = None
    provider: str | None = None


class RecordedCrash(Record):
    """A recorded crash: the process, the signal, the faulting address, every thread and the mapped files."""

    schema_version: int = SCHEMA_VERSION
    architecture: str
    pid: int | None = None
    signal: Signal | None = None
    executable: Executable
    threads: ThreadPage
    mappings: MappingPage
    notes: list[str] = []
