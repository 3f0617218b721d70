"""Pointer slots in data: where a data section holds the address of code or data (worker process only).

Found from the image's relocations as cle applied them (ELF ``R_*_RELATIVE``/``R_*_64``/``R_*_GLOB_DAT`` of
local symbols, PE base relocations, Mach-O rebases and chained fixups), from ``.init_array``/``.fini_array``,
and, in an image that is not relocated (a fixed-address executable), from aligned words equal to an address
the analysis already knows (a procedure start, a datum it saw referenced, a symbol).
"""

from __future__ import annotations

from typing import Any

from rea.plugin import INIT_ARRAYS
from rea.plugin import METADATA_SECTIONS

# Sections that hold metadata, never the program's own pointers.
MAX_SCANNED_BYTES = 64 << 20


def _word(a: Any, slot: int) -> int | None:
    try:
        return int(a.proj.loader.memory.unpack_word(slot))
    except (KeyError, ValueError, TypeError):
        return None


def _data_section(a: Any, sec: Any) -> bool:
    name = str(getattr(sec, "name", "") or "")
    if sec.is_executable or any(name.startswith(p) for p in METADATA_SECTIONS):
        return False
    return not getattr(sec, "only_contains_uninitialized_data", False) and name not in a.nobits()


def data_slots(a: Any) -> dict[int, int]:
    """``slot -> value`` (angr addresses) of every pointer slot in data that points into the image."""
    main = a.main
    word = a.arch.bytes
    out: dict[int, int] = {}

    def keep(slot: int, value: int | None) -> None:
        if value is not None and slot not in out and a.mapped(value) and main.contains_addr(value):
            out[slot] = value

    relocated = False
    for reloc in getattr(main, "relocs", []) or []:
        slot = int(reloc.rebased_addr)
        if not a.mapped(slot) or a.executable(slot):
            continue
        relocated = True
        keep(slot, _word(a, slot))
    sections = [s for s in a.alloc_sections() if _data_section(a, s)]
    for sec in sections:
        if str(sec.name) in INIT_ARRAYS:
            for slot in range(sec.vaddr, sec.vaddr + sec.memsize - word + 1, word):
                keep(slot, _word(a, slot))
    if relocated and main.pic:
        return dict(sorted(out.items()))
    # A fixed image carries no relocation for its pointers: a word is a pointer when it equals an address the
    # analysis knows, which keeps numbers that merely look like addresses out.
    known = set(a.by_addr) | {int(d.addr) for d in a.cfg.memory_data.values()} | {n.addr for n in a.names()}
    scanned = 0
    for sec in sections:
        size = min(sec.memsize, MAX_SCANNED_BYTES - scanned)
        if size <= 0:
            break
        scanned += size
        try:
            data = a.proj.loader.memory.load(sec.vaddr, size)
        except KeyError:
            continue
        big = a.arch.memory_endness != "Iend_LE"
        start = (-sec.vaddr) % word
        for off in range(start, len(data) - word + 1, word):
            value = int.from_bytes(data[off : off + word], "big" if big else "little")
            if value in known:
                keep(sec.vaddr + off, value)
    return dict(sorted(out.items()))
