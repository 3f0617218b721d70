"""The results of ``emulate_procedure`` and ``emulate_range``: where the run stopped and what it did."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Record

StopReason = Literal[
    "returned",
    "reached_end",
    "instruction_limit",
    "time_limit",
    "unmodelled_import",
    "memory_fault",
    "invalid_instruction",
    "interrupt",
    "stack_check_failed",
    "exit_called",
    "heap_misuse",
    "import_fault",
    "emulator_error",
]


class StopInfo(Record):
    """Why the run ended, at which address (static inside the image) and in which procedure."""

    reason: StopReason
    detail: str
    pc: str
    procedure: str | None = None
    # unmodelled_import: the import to set in import_returns.
    import_name: str | None = None
    # memory_fault: the address touched and how.
    fault_address: str | None = None
    access: str | None = None
    exit_status: int | None = None
    number: int | None = None
    address: str | None = None


class Pointed(Record):
    """The memory a returned pointer points at (its first bytes, as text when they read as text)."""

    address: str
    region: str
    hex: str | None = None
    text: str | None = None


class ReturnValue(Record):
    # The whole result register as the emulator holds it (a pointer into the image is at its loaded address).
    hex: str
    signed: int
    int32: int
    points_to: Pointed | None = None


class Buffer(Record):
    """A buffer the caller supplied, after the run: its final bytes (hex, and text up to a NUL)."""

    label: str
    address: str
    size: int
    hex: str
    text: str | None = None
    truncated: bool = False


class ImportCall(Record):
    name: str
    arguments: list[str]
    # Where the call returns to (static): the call site's next instruction.
    return_address: str
    return_value: str | None = None
    # import_returns: the value came from the caller's import_returns, not a model.
    stubbed: str | None = None


class WrittenRun(Record):
    address: str
    region: str
    length: int
    hex: str
    text: str | None = None
    truncated: bool = False


class MemoryWritten(Record):
    """Bytes outside the stack that differ after the run (the image's writable pages, live heap blocks)."""

    runs: list[WrittenRun]
    total_runs: int
    total_bytes: int
    truncated: bool


class Heap(Record):
    allocations: int
    live: int
    live_bytes: int
    # malloc calls answered NULL because the heap bound was reached.
    failed: int


class Limits(Record):
    max_instructions: int
    timeout_ms: int
    max_memory_bytes: int
    stack_bytes: int
    heap_bytes: int


class Run(Record):
    """What the emulation worker answers: one run, before the server adds what it knows of the request."""

    architecture: str
    load_bias: str
    stop: StopInfo
    elapsed_ms: float
    return_value: ReturnValue | None = None
    registers: dict[str, str] | None = None
    buffers: list[Buffer]
    calls: list[ImportCall]
    calls_total: int
    memory_written: MemoryWritten
    heap: Heap


class Emulation(Record):
    """One emulated run of a procedure or a range of the open binary."""

    procedure: str | None = None
    start: str
    end: str | None = None
    architecture: str
    # Loaded address minus static address of the image (a PIE is loaded away from page 0).
    load_bias: str
    stop: StopInfo
    elapsed_ms: float
    return_value: ReturnValue | None = None
    # emulate_range: the general registers when it stopped.
    registers: dict[str, str] | None = None
    buffers: list[Buffer]
    calls: list[ImportCall]
    calls_total: int
    memory_written: MemoryWritten
    heap: Heap
    limits: Limits
    engine: str
