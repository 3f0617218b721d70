"""Symbolized operands: the engine-neutral half of an instruction row's ``symbolized`` text and ``symbols``.

A provider decodes an instruction and resolves the addresses its operands denote (branch targets,
pc-relative operands, ``adrp``/``add`` pairs), naming each from its own symbols; these helpers split the
engine's operand text and render the row the same way for every provider (docs/native-operations.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence

from rea.records import JSONObject
from rea.records import JSONValue

# One operand as a provider describes it: ``text``, ``kind`` (``immediate``, ``memory``, ...) and, where it
# denotes an address, ``address``, ``name`` and ``string``. Each provider builds these rows as JSON.
OperandDetail = Mapping[str, JSONValue]

_STRING_CHARS = 64
# A pc-relative memory operand as engines print it (``rip + 0x2bf0``, ``rip - 8``, ``rip``).
_PC = re.compile(r"\b[re]?ip\s*([+-])\s*(0x[0-9a-fA-F]+|\d+)|\b[re]?ip\b")


def split_operands(op_str: str, count: int) -> list[str]:
    """The operand texts of ``op_str`` (commas outside brackets), as many as capstone counts operands."""
    pieces: list[str] = []
    depth, current = 0, ""
    for ch in op_str:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            pieces.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        pieces.append(current.strip())
    if count and len(pieces) > count:
        # Shifts and extends (``x2, lsl #3``) print as pieces of their own but belong to the operand before.
        pieces = [*pieces[: count - 1], ", ".join(pieces[count - 1 :])]
    return pieces


def _quoted(text: str) -> str:
    short = text if len(text) <= _STRING_CHARS else text[:_STRING_CHARS] + "..."
    return '"' + short.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _str(value: JSONValue) -> str:
    return value if isinstance(value, str) else ""


def symbolized_text(mnemonic: str, details: Sequence[OperandDetail], branch: bool) -> str:
    """The instruction with targets named, pc-relative operands absolute, and data named in a comment."""
    parts: list[str] = []
    notes: list[str] = []
    for d in details:
        text = _str(d["text"])
        if "address" in d:
            address, name = _str(d["address"]), _str(d.get("name"))
            if branch and d["kind"] == "immediate":
                text = name or address
            else:
                if d["kind"] == "memory":
                    text = _PC.sub(address, text) if _PC.search(text) else text
                if "string" in d:
                    notes.append(_quoted(_str(d["string"])))
                elif name:
                    notes.append(name)
                elif address not in text:
                    notes.append(address)
        parts.append(text)
    out = f"{mnemonic} {', '.join(parts)}".strip()
    return f"{out} ; {', '.join(notes)}" if notes else out


def symbols_of(details: Sequence[OperandDetail]) -> list[JSONObject]:
    """The ``symbols`` of an instruction row: each operand that denotes an address, with its name and string."""
    return [
        {
            "operand": i,
            "address": d["address"],
            "name": d.get("name"),
            **({"string": d["string"]} if "string" in d else {}),
        }
        for i, d in enumerate(details)
        if "address" in d
    ]
