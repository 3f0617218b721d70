"""Malformed code the index must take in its stride: a branch whose target lies outside the address space."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import lief

from rea.session import Session
from rea.testing import result_of

# ``bl`` with the most negative offset (-128 MiB): from a low address its target wraps below zero.
BL_BACKWARDS = 0x96000000


def test_a_branch_beyond_the_address_space_is_an_unknown_target(
    rea_session: Session, native_fixtures: Any, tmp_path: Path
) -> None:
    source = native_fixtures.get("elf-arm64")
    binary = lief.ELF.parse(source.path)
    assert binary is not None
    text = binary.get_section(".text")
    data = bytearray(Path(source.path).read_bytes())
    start = int(text.file_offset)
    words = struct.unpack_from(f"<{int(text.size) // 4}I", data, start)
    at = next(i for i, w in enumerate(words) if w >> 26 == 0b100101)  # the first bl
    struct.pack_into("<I", data, start + 4 * at, BL_BACKWARDS)
    path = tmp_path / "wrapped-bl"
    path.write_bytes(bytes(data))
    result_of(rea_session, "open_binary", {"path": str(path), "provider_id": "native"})
    procedures = result_of(rea_session, "list_procedures", {"limit": 1000})["procedures"]
    site = int(text.virtual_address) + 4 * at
    owner = next(p for p in procedures if int(p["address"], 16) <= site < int(p["end"], 16))
    refs = result_of(rea_session, "procedure_references", {"procedure": owner["address"], "limit": 1000})
    # The call names no address (there is none to name); the procedure's other references stay.
    assert [r for r in refs["references"] if r["from"] == hex(site)] == [], refs
    assert refs["references"], refs
