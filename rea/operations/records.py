"""The engine-neutral records an external engine's worker fills, and the source protocol the answers read.

A deep engine (Ghidra through pyghidra, Hopper through its bridge) is asked for these records; the contract's
normalized shapes, pages and selectors are computed from them in one place (``rea.operations.answers``). Addresses are
integers in the default space; ends are exclusive.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from rea.operations.shapes import NameKind
from rea.operations.shapes import ProcedureKind
from rea.operations.shapes import ReferenceKind
from rea.operations.shapes import SegmentKind
from rea.operations.shapes import StringEncoding


class Document(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    format: str
    architecture: str
    sha256: str
    entry: int | None
    bits: int
    endianness: str
    image_base: int = 0
    # The engine's own words for what it loaded (raw result of list_documents).
    engine_format: str = ""
    language: str = ""
    compiler: str = ""


class Segment(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    start: int
    end: int
    permissions: str
    file_offset: int | None
    file_size: int
    kind: SegmentKind = "section"


class Procedure(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    name: str
    end: int
    kind: ProcedureKind
    section: str | None = None
    # The body as address ranges (a function may be split); empty means [address, end).
    ranges: tuple[tuple[int, int], ...] = ()
    signature: str | None = None
    calling_convention: str | None = None
    # For thunks and import stubs: the name of what they jump to.
    thunk_of: str | None = None


class Name(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    name: str
    kind: NameKind
    external: bool = False


class String(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    value: str
    encoding: StringEncoding
    byte_length: int
    truncated: bool = False
    section: str | None = None


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    """What the whole-program queries read; built once when the engine is ready."""

    document: Document
    segments: tuple[Segment, ...]
    procedures: tuple[Procedure, ...]
    names: tuple[Name, ...]
    strings: tuple[String, ...]


class Block(msgspec.Struct, frozen=True, kw_only=True):
    start: int
    end: int
    instruction_count: int
    successors: tuple[int, ...] = ()
    # One edge kind per successor: fallthrough, jump or conditional.
    edge_kinds: tuple[str, ...] = ()


class Instruction(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    bytes: str
    mnemonic: str
    operands: str


class Reference(msgspec.Struct, frozen=True, kw_only=True):
    src: int
    dst: int | None
    kind: ReferenceKind
    from_procedure: int | None = None
    to_name: str | None = None


class CallSite(msgspec.Struct, frozen=True, kw_only=True):
    insn: int
    # None: a computed call whose target the engine did not resolve.
    target: int | None
    name: str | None
    kind: str  # direct | import | indirect


class Detail(msgspec.Struct, frozen=True, kw_only=True):
    """One procedure's blocks, instructions, outgoing references and call sites."""

    blocks: tuple[Block, ...]
    instructions: tuple[Instruction, ...]
    outgoing: tuple[Reference, ...]
    calls: tuple[CallSite, ...]


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A complete recorded model: the inventory, every detail, incoming references and pseudo code.

    The test fakes serve one; ``queries`` reads it through ``SnapshotSource`` exactly as a live engine.
    """

    inventory: Inventory
    details: dict[int, Detail] = {}
    incoming: dict[int, tuple[Reference, ...]] = {}
    pseudo_code: dict[int, str] = {}
    engine_version: str = ""


class Source(Protocol):
    """What ``queries`` needs of an engine; each method may be answered lazily and cached by the engine."""

    def inventory(self) -> Inventory: ...

    def detail(self, procedure: Procedure) -> Detail: ...

    def incoming(self, address: int) -> list[Reference]: ...

    def pseudo_code(self, procedure: Procedure, timeout_s: int) -> str: ...


class SnapshotSource:
    """A ``Source`` over a recorded ``Snapshot``."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def inventory(self) -> Inventory:
        return self.snapshot.inventory

    def detail(self, procedure: Procedure) -> Detail:
        return self.snapshot.details.get(procedure.address, Detail(blocks=(), instructions=(), outgoing=(), calls=()))

    def incoming(self, address: int) -> list[Reference]:
        return list(self.snapshot.incoming.get(address, ()))

    def pseudo_code(self, procedure: Procedure, timeout_s: int) -> str:
        from rea.errors import ReaError

        text = self.snapshot.pseudo_code.get(procedure.address)
        if text is None:
            raise ReaError(
                "execution_failure",
                f"no pseudo code was recorded for {procedure.name}",
                details={"procedure": hex(procedure.address), "reason": "no_output"},
            )
        return text
