"""Pointer slots in data for the radare2 provider: where a data section holds the address of code or data.

radare2 lists relocations (``irj``) without their addends and does not list PE base relocations, so the
tables are read here from the loaded image: ELF ``.rela.dyn``/``.rel.dyn``/``.relr.dyn`` (``R_*_RELATIVE``, and
``R_*_64``/``R_*_GLOB_DAT`` of symbols the binary defines), PE ``.reloc`` and the slots radare2 lists for Mach-O.
``.init_array``/``.fini_array`` are read word by word; an image without relocations (a fixed-address
executable) has its data words taken as pointers when they equal an address the analysis knows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rea.plugin import INIT_ARRAYS
from rea.plugin import METADATA_SECTIONS
from rea.plugin import chained_rebase_target
from rea.plugin import elf_relocations
from rea.plugin import pe_base_relocations
from rea.plugin import relr_slots
from rea.plugin import words
from rea_plugins.radare2.engine import integer
from rea_plugins.radare2.engine import list_of

# ELF relocation types whose target is base + addend (RELATIVE), and those of a symbol's address.
_RELATIVE = {62: {8}, 183: {1027}, 40: {23}, 3: {8}}  # x86-64, aarch64, arm, i386
_SYMBOLIC = {62: {1, 6}, 183: {257, 1025}, 40: {2, 21}, 3: {1, 6}}
_MACHINES = {"x86_64": 62, "arm64": 183, "arm": 40, "x86": 3}
MAX_TABLE_BYTES = 64 << 20


class SlotFinder:
    """Finds the pointer slots of one loaded Program (the radare2 worker's view of the binary)."""

    def __init__(self, p: Any) -> None:
        self.p = p
        self.little = p.bin.get("endian") != "big"

    def read_word(self, addr: int) -> int | None:
        data = self.p.core.read(addr, self.p.word)
        if len(data) < self.p.word:
            return None
        return words(data, self.p.word, self.little)[0]

    def _section(self, name: str) -> Any | None:
        return next((r for r in self.p.sections if r.name == name), None)

    def _data_regions(self) -> list[Any]:
        out = []
        for r in self.p.sections:
            if "x" in r.perm or not r.file_size or any(r.name.startswith(m) for m in METADATA_SECTIONS):
                continue
            out.append(r)
        return out

    def find(self, known: Callable[[int], bool]) -> dict[int, int]:
        """``slot -> value`` of every pointer slot in data whose value lies in the image."""
        p = self.p
        found: dict[int, int] = {}

        def keep(slot: int, value: int | None) -> None:
            if (
                value is not None
                and slot not in found
                and p.mapped(value)
                and p.mapped(slot)
                and not p.executable(slot)
            ):
                found[slot] = value

        relocated = False
        if p.format == "elf":
            relocated = self._elf(keep)
        elif p.format == "pe":
            relocated = self._pe(keep)
        else:
            for r in list_of(p.core.cmdj("irj")):
                slot = integer(r.get("vaddr"))
                if slot is not None and not r.get("name"):
                    relocated = True
                    keep(slot, self._macho_value(self.read_word(slot)))
        for name in INIT_ARRAYS:
            sec = self._section(name)
            if sec is not None and sec.file_size:
                data = p.core.read(sec.start, min(sec.size, MAX_TABLE_BYTES))
                for i, value in enumerate(words(data, p.word, self.little)):
                    keep(sec.start + i * p.word, value)
        if not relocated:
            self._plain(keep, known)
        return dict(sorted(found.items()))

    def _elf(self, keep: Callable[[int, int | None], None]) -> bool:
        p = self.p
        machine = _MACHINES.get(p.arch, 0)
        relative, symbolic = _RELATIVE.get(machine, set()), _SYMBOLIC.get(machine, set())
        defined = {
            str(s.get("realname") or s.get("name")): int(s["vaddr"])
            for s in p.symbols
            if not s.get("is_imported") and s.get("type") in ("FUNC", "OBJ") and p.mapped(int(s["vaddr"]))
        }
        # Symbol names by relocation slot, from radare2's own reading of the symbol relocations.
        names = {integer(r.get("vaddr")): str(r.get("name")) for r in list_of(p.core.cmdj("irj")) if r.get("name")}
        seen = False
        wide = p.word == 8
        for sec in p.sections:
            if not (sec.name.startswith(".rela") or sec.name.startswith(".rel.")) or not sec.file_size:
                continue
            data = p.core.read(sec.start, min(sec.size, MAX_TABLE_BYTES))
            rela = sec.name.startswith(".rela")
            for slot, kind, _, addend in elf_relocations(
                data, rela=rela, wide=wide, little=self.little, limit=MAX_TABLE_BYTES
            ):
                if kind in relative:
                    seen = True
                    keep(slot, addend if addend is not None else self.read_word(slot))
                elif kind in symbolic:
                    target = defined.get(names.get(slot, ""))
                    if target is not None:
                        keep(slot, target + (addend or 0))
        relr = self._section(".relr.dyn")
        if relr is not None and relr.file_size:
            seen = True
            for slot in relr_slots(p.core.read(relr.start, min(relr.size, MAX_TABLE_BYTES)), p.word, self.little):
                keep(slot, self.read_word(slot))
        return seen

    def _pe(self, keep: Callable[[int, int | None], None]) -> bool:
        p = self.p
        sec = self._section(".reloc")
        if sec is None or not sec.file_size:
            return False
        seen = False
        for rva, _ in pe_base_relocations(p.core.read(sec.start, min(sec.size, MAX_TABLE_BYTES))):
            seen = True
            keep(p.baddr + rva, self.read_word(p.baddr + rva))
        return seen

    def _macho_value(self, value: int | None) -> int | None:
        """A rebased Mach-O pointer: plain, or the target of a chained-fixup rebase (bind entries have none)."""
        p = self.p
        if value is None or p.mapped(value):
            return value
        target = chained_rebase_target(value)
        if target is None:
            return None
        if p.mapped(target):
            return target
        return p.baddr + target if p.mapped(p.baddr + target) else None

    def _plain(self, keep: Callable[[int, int | None], None], known: Callable[[int], bool]) -> None:
        p = self.p
        budget = MAX_TABLE_BYTES
        for sec in self._data_regions():
            size = min(sec.size, sec.file_size, budget)
            if size <= 0:
                break
            budget -= size
            start = sec.start + (-sec.start) % p.word
            data = p.core.read(start, size - (start - sec.start))
            for i, value in enumerate(words(data, p.word, self.little)):
                if known(value):
                    keep(start + i * p.word, value)
