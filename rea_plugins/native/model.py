"""The parsed-binary model the LIEF worker hands back: plain values, no LIEF objects."""

from __future__ import annotations

import msgspec
from msgspec import UNSET
from msgspec import UnsetType


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


class Linkage(msgspec.Struct, frozen=True, kw_only=True):
    """How the binary links: its interpreter, the libraries it needs and where it looks for them; a PE also says
    whether it is a DLL and, with a CLI header, ``clr`` (``il-only`` or ``mixed``). binary_layout sends every field
    but an unset one."""

    interpreter: str | None = None
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    clr: str | UnsetType = UNSET
    dll: bool | UnsetType = UNSET


class Mitigations(msgspec.Struct, frozen=True, kw_only=True):
    """The hardening the container declares; a CET or BTI property is ``"unknown"`` where the binary cannot say, and
    a PE adds its ``cfg`` and ``high_entropy_va`` flags. binary_layout sends every field but an unset one."""

    nx: bool = False
    pie: bool = False
    relro: str = "unknown"
    canary: bool = False
    fortify: bool = False
    cet_ibt: bool | str = "unknown"
    cet_shstk: bool | str = "unknown"
    bti: bool | str = "unknown"
    cfg: bool | UnsetType = UNSET
    high_entropy_va: bool | UnsetType = UNSET


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
    linkage: Linkage
    mitigations: Mitigations
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
        linkage=Linkage(),
        mitigations=Mitigations(),
        limitations=[],
    )
