"""The shared relocation-table decoders: known answers, and any bytes decode without an error (issue 26)."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.operations.relocations import chained_rebase_target
from rea.operations.relocations import elf_relocations
from rea.operations.relocations import pe_base_relocations
from rea.operations.relocations import relr_slots
from rea.operations.relocations import words


def test_elf_rela_entries_carry_type_symbol_and_addend() -> None:
    data = struct.pack("<QQq", 0x4000, (7 << 32) | 8, 0x1130) + struct.pack("<QQq", 0x4008, (3 << 32) | 6, 0)
    assert list(elf_relocations(data, rela=True, wide=True, little=True, limit=10)) == [
        (0x4000, 8, 7, 0x1130),
        (0x4008, 6, 3, 0),
    ]
    assert len(list(elf_relocations(data, rela=True, wide=True, little=True, limit=1))) == 1
    rel32 = struct.pack(">II", 0x8000, (5 << 8) | 23)
    assert list(elf_relocations(rel32, rela=False, wide=False, little=False, limit=10)) == [(0x8000, 23, 5, None)]


def test_relr_expands_an_address_then_its_bitmap() -> None:
    # 0x1000 relocated, then a bitmap marking the 1st and 3rd words after it.
    data = struct.pack("<QQ", 0x1000, (0b101 << 1) | 1)
    assert list(relr_slots(data, 8, little=True)) == [0x1000, 0x1008, 0x1018]


def test_pe_blocks_yield_pointer_relocations_only() -> None:
    entries = [(10 << 12) | 0x10, (0 << 12) | 0, (3 << 12) | 0x20]
    block = struct.pack("<II", 0x2000, 8 + 2 * len(entries)) + struct.pack(f"<{len(entries)}H", *entries)
    assert list(pe_base_relocations(block)) == [(0x2010, 8), (0x2020, 4)]
    assert list(pe_base_relocations(struct.pack("<II", 0x2000, 4))) == []  # a size below the header ends the table


def test_chained_fixups_rebase_or_bind() -> None:
    assert chained_rebase_target(0x0010_0000_0000_4000) == 0x4000
    assert chained_rebase_target(1 << 63 | 5) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512), st.booleans(), st.booleans(), st.booleans())
def test_any_bytes_decode_without_error(data: bytes, rela: bool, wide: bool, little: bool) -> None:
    word = 8 if wide else 4
    assert len(words(data, word, little)) == len(data) // word
    entries = list(elf_relocations(data, rela=rela, wide=wide, little=little, limit=1000))
    assert len(entries) <= len(data) // (word * (3 if rela else 2))
    assert len(list(relr_slots(data, word, little))) <= (len(data) // word) * 8 * word
    assert all(width in (4, 8) for _, width in pe_base_relocations(data))
