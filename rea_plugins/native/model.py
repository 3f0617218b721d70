"""The parsed-binary model the LIEF worker hands back: plain values, no LIEF objects."""

from __future__ import annotations

from typing import Any

import msgspec


class Region(msgspec.Struct, frozen=True, kw_only=True):
    """A segment or section: ``start`` inclusive, ``start + size`` exclusive."""

    name: str
    start: int
    size: int
    perms: str
    file_offset: int
    file_size: int
    kind: str

    @property
    def end(self) -> int:
        return self.start + self.size

    @property
    def executable(self) -> bool:
        return "x" in self.perms


class Symbol(msgspec.Struct, frozen=True, kw_only=True):
    """A defined symbol; ``kind`` is function, data or label."""

    name: str
    address: int
    size: int
    kind: str
    exported: bool = False
    source: str = "symtab"


class Import(msgspec.Struct, frozen=True, kw_only=True):
    """An external symbol; ``slot`` is its GOT/IAT/lazy-pointer address when known."""

    name: str
    library: str | None = None
    slot: int | None = None
    # An imported variable (ELF OBJECT, or NOTYPE reached through a GOT slot only: stdin, _ITM_*): a name with
    # its slot, never a procedure.
    data: bool = False


class Model(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the provider needs from the container format of one binary (or one fat slice)."""

    format: str
    arch: str
    bits: int
    endianness: str
    entry: int | None
    image_base: int
    file_base: int
    slices: list[str]
    slice_arch: str | None
    segments: list[Region]
    sections: list[Region]
    symbols: list[Symbol]
    imports: list[Import]
    unwind: list[tuple[int, int]]
    linkage: dict[str, Any]
    mitigations: dict[str, Any]
    limitations: list[str]
    plt_locals: list[Import] = []  # PLT/GOT slots bound to symbols this binary defines (ELF)


class WorkerRequest(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    prefer_arch: str | None = None
    max_symbols: int = 2_000_000
    max_sections: int = 65_536
    # The server will send this target's work too (``assist``): the worker loads capstone once the parse is done.
    warm: bool = False


class WorkerReply(msgspec.Struct, frozen=True, kw_only=True):
    model: Model | None = None
    error_code: str | None = None
    error_message: str = ""


def regions_only(arch: str, bits: int, sections: list[Region], segments: list[Region]) -> Model:
    """A model of regions only: what an ``Image`` reads (a job the parse worker is sent carries no more)."""
    return Model(
        format="",
        arch=arch,
        bits=bits,
        endianness="little",
        entry=None,
        image_base=0,
        file_base=0,
        slices=[],
        slice_arch=None,
        segments=segments,
        sections=sections,
        symbols=[],
        imports=[],
        unwind=[],
        linkage={},
        mitigations={},
        limitations=[],
    )
