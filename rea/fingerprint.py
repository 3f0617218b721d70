"""A content hash per procedure: its instructions with addresses and constants normalized away.

Engine-neutral: it takes the instruction rows the native operations give (``read_function_instructions``'
``mnemonic``/``operands`` or ``text``), so two builds of the same code at other addresses hash the same, whatever
provider listed them. Corpus triage and binary comparison share it: one hash, one meaning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import msgspec

from rea.arguments import Arguments
from rea.operations.shapes import ProcedureFingerprint
from rea.records import JSONObject
from rea.records import JSONValue

# Bumped when the normalization changes: hashes of different versions never compare equal.
FINGERPRINT_VERSION = 1
PREFIX = f"ph{FINGERPRINT_VERSION}:"

# Numbers (hex or decimal, signed) are addresses, offsets or constants that move between builds.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:0x[0-9a-fA-F]+|\d+)(?![\w.])")
_SPACE = re.compile(r"\s+")
PAGE = 1000


def normalize_text(mnemonic: str, operands: str | None) -> str:
    """``mnemonic operands`` with every number replaced by ``#`` and whitespace collapsed, lower case."""
    text = f"{mnemonic} {operands or ''}".strip().lower()
    return _SPACE.sub(" ", _NUMBER.sub("#", text))


def normalize_instruction(row: Mapping[str, Any]) -> str:
    """One instruction row (``mnemonic``/``operands``, or ``text``) normalized by ``normalize_text``."""
    mnemonic = row.get("mnemonic")
    operands = row.get("operands")
    if mnemonic is None:
        text = str(row.get("text") or "")
        mnemonic, _, operands = text.partition(" ")
    return normalize_text(str(mnemonic), operands)


def hash_lines(lines: Iterable[str]) -> str:
    """The content hash of a procedure's normalized instructions, in address order (``ph1:`` + 32 hex digits)."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode())
        digest.update(b"\n")
    return PREFIX + digest.hexdigest()[:32]


_LINE_SPACE = re.compile(r"[^\S\n]+")


def hash_instructions(pairs: Iterable[tuple[str, str]]) -> tuple[int, str]:
    """(count, hash) of (mnemonic, operands) pairs: ``hash_lines`` of their ``normalize_text``, normalized in one
    pass over the whole procedure's text (the same bytes, far fewer calls)."""
    lines = [f"{m} {o}".strip() for m, o in pairs]
    if not lines:
        return 0, hash_lines(())
    text = _LINE_SPACE.sub(" ", _NUMBER.sub("#", "\n".join(lines).lower()))
    return len(lines), PREFIX + hashlib.sha256((text + "\n").encode()).hexdigest()[:32]


def procedure_hash(instructions: Iterable[Mapping[str, Any]]) -> str:
    """The content hash of one procedure's instruction rows (what ``read_function_instructions`` lists)."""
    return hash_lines(normalize_instruction(row) for row in instructions)


# A provider's answer to one operation, as the kernel's callers hand it on: JSON (``rea.operations.answers``).
Execute = Callable[[str, Arguments], JSONObject]


def fingerprints(
    execute: Execute, supports: Callable[[str], bool], cap: int | None = None
) -> tuple[list[ProcedureFingerprint], int, bool]:
    """Every procedure's fingerprint row (``ProcedureFingerprint``), at most ``cap``: rows, total, truncated.

    The provider's ``procedure_fingerprints`` answers in one pass when it has it; otherwise each procedure's
    instructions are read and hashed here, which gives the same hashes, more slowly."""
    rows: list[ProcedureFingerprint] = []
    offset: int | None = 0
    batched = supports("procedure_fingerprints")
    while offset is not None:
        limit = PAGE if cap is None else max(1, min(PAGE, cap - len(rows)))
        page = execute("procedure_fingerprints" if batched else "list_procedures", {"offset": offset, "limit": limit})
        total = _integer(page.get("total"))
        if batched:
            rows += [msgspec.convert(r, ProcedureFingerprint) for r in _objects(page.get("fingerprints"))]
        else:
            rows += [_read_and_hash(execute, p) for p in _objects(page.get("procedures"))]
        following = page.get("next_offset")
        offset = following if isinstance(following, int) else None
        if cap is not None and len(rows) >= cap and offset is not None:
            return rows, total, True
    return rows, total, False


def _integer(value: JSONValue) -> int:
    return value if isinstance(value, int) else 0


def _objects(value: JSONValue) -> list[JSONObject]:
    return [dict(v) for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _read_and_hash(execute: Execute, p: JSONObject) -> ProcedureFingerprint:
    lines: list[str] = []
    at: int | None = 0
    address = str(p.get("address"))
    while at is not None:
        page = execute("read_function_instructions", {"procedure": address, "offset": at, "limit": PAGE})
        lines += [normalize_instruction(r) for r in _objects(page.get("instructions"))]
        following = page.get("next_offset")
        at = following if isinstance(following, int) else None
    name, kind = p.get("name"), p.get("kind", "local")
    return ProcedureFingerprint(
        address=address,
        name=name if isinstance(name, str) else None,
        kind=kind if isinstance(kind, str) else "local",
        instructions=len(lines),
        hash=hash_lines(lines),
    )
