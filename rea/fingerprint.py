"""A content hash per procedure: its instructions with addresses and constants normalized away.

Engine-neutral: it takes the instruction rows the native operations give (``read_function_instructions``'
``mnemonic``/``operands`` or ``text``), so two builds of the same code at other addresses hash the same, whatever
provider listed them. Corpus triage and binary comparison share it: one hash, one meaning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

# Bumped when the normalization changes: hashes of different versions never compare equal.
FINGERPRINT_VERSION = 1
PREFIX = f"ph{FINGERPRINT_VERSION}:"

# Numbers (hex or decimal, signed) are addresses, offsets or constants that move between builds.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:0x[0-9a-fA-F]+|\d+)(?![\w.])")
_SPACE = re.compile(r"\s+")


def normalize_instruction(row: Mapping[str, Any]) -> str:
    """``mnemonic operands`` with every number replaced by ``#`` and whitespace collapsed, lower case."""
    mnemonic = row.get("mnemonic")
    operands = row.get("operands")
    if mnemonic is None:
        text = str(row.get("text") or "")
        mnemonic, _, operands = text.partition(" ")
    text = f"{mnemonic} {operands or ''}".strip().lower()
    return _SPACE.sub(" ", _NUMBER.sub("#", text))


def procedure_hash(instructions: Iterable[Mapping[str, Any]]) -> str:
    """The content hash of one procedure's instructions, in address order (``ph1:`` + 32 hex digits)."""
    digest = hashlib.sha256()
    for row in instructions:
        digest.update(normalize_instruction(row).encode())
        digest.update(b"\n")
    return PREFIX + digest.hexdigest()[:32]
