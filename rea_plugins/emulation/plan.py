"""What the server asks the emulation worker to run: the load image, the entry, the arguments and the bounds.

The server builds a ``Plan`` from the open target and the call's arguments; the worker protocol carries it as
msgpack builtins and the worker converts it back (``worker.py``). None of it reaches the agent.
"""

from __future__ import annotations

import msgspec


class Segment(msgspec.Struct, frozen=True, kw_only=True):
    """A loadable segment: static addresses, permissions ("rwx" letters) and the file bytes behind it."""

    name: str
    start: int
    end: int
    permissions: str
    file_offset: int
    file_size: int


class Section(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    start: int
    end: int


class FileRange(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes of the file: a symbol or string table."""

    file_offset: int
    size: int


class RelocationTable(FileRange, frozen=True, kw_only=True):
    """A dynamic relocation table: rela, rel or relr."""

    kind: str


class Image(msgspec.Struct, frozen=True, kw_only=True):
    """The target's load image as the emulator maps it (cached per target in the session)."""

    path: str
    segments: list[Segment]
    sections: list[Section]
    relocations: list[RelocationTable]
    # ELF's dynsym, dynstr, symtab and strtab by name (without the dot).
    symbols: dict[str, FileRange]
    # (static address, import name, "code" for a stub called in place or "slot" for a pointer the code loads).
    imports: list[tuple[int, str, str]]


class PlanLimits(msgspec.Struct, frozen=True, kw_only=True):
    max_instructions: int
    timeout_ms: int
    max_memory_bytes: int
    stack_bytes: int
    heap_bytes: int
    max_calls: int
    max_written_bytes: int
    max_buffer_bytes: int


class Value(msgspec.Struct, frozen=True, kw_only=True):
    """An argument or register value: an ``integer``, a static ``address`` of the image, a NULL-terminated array of
    ``pointers`` to values, or else a buffer of ``data`` in ``capacity`` bytes, passed by its address."""

    integer: int | None = None
    address: int | None = None
    pointers: list[Value] | None = None
    data: bytes = b""
    capacity: int = 0


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """One run: a procedure (``mode`` "procedure", called with ``arguments``) or a range (from ``entry`` until
    ``until``), on ``arch`` code, from the ``registers`` given."""

    image: Image
    arch: str
    mode: str
    limits: PlanLimits
    entry: int
    thumb: bool = False
    until: int = 0
    import_returns: dict[str, int] = {}
    registers: dict[str, Value] = {}
    arguments: list[Value] = []
