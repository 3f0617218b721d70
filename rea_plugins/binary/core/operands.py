"""The numbers in an instruction's operands, each with the form it takes: immediate or memory displacement.

Engine-neutral: it reads the instruction text every provider gives (capstone's Intel syntax on x86, ARM's
``#imm`` and ``[reg, #disp]``), and the operand indexes a provider marked as naming an address. A number that is
an address (a branch target, a pc-relative displacement, an operand the provider resolved to a symbol, an
``adrp`` page) is not a constant: the diff's constants and the immediates search both leave it out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from typing import Literal

Form = Literal["immediate", "displacement"]

_CONDITIONS = "eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al"
BRANCH = re.compile(rf"^(j\w*|call\w*|loop\w*|b|bl|br|blr|b\.\w+|cbn?z|tbn?z|bx|blx|bl?({_CONDITIONS})(\.[wn])?)$")
# A sign may stand apart from its number inside brackets (``[rbp - 0x14]``).
_NUMBER = re.compile(r"(?<![\w.$])#?(-\s*)?(0x[0-9a-f]+|[0-9]+)\b")
# A shift amount (``lsl #16``) is part of the operand's encoding, not a constant of its own.
_SHIFT = re.compile(r"\b(lsl|lsr|asr|ror|msl|uxt\w|sxt\w)\s+#?\w+")
# Registers that make a displacement pc-relative: the number is then an address.
_PC = re.compile(r"\b(rip|eip|pc)\b")
_ADDRESS_MNEMONICS = frozenset({"adr", "adrp"})


# A top-level comma: not inside ``[...]`` or ``{...}`` (neither nests in instruction text).
_TOP_COMMA = re.compile(r",\s*(?![^\[]*\])(?![^{]*\})")
_DIGIT = re.compile(r"\d")


def split_operands(operands: str) -> list[str]:
    """The operands at top level (a comma inside ``[...]`` or ``{...}`` belongs to its operand)."""
    return [o.strip() for o in _TOP_COMMA.split(operands)] if operands.strip() else []


def numbers(text: str, address_operands: Collection[int] = (), refs: Collection[int] = ()) -> list[tuple[int, Form]]:
    """(value, form) of each constant in one instruction's text, in operand order.

    ``address_operands`` are the operand indexes the provider resolved to an address, ``refs`` the addresses it
    named (symbolized text shows a pc-relative operand as its absolute address); both are left out."""
    if _DIGIT.search(text) is None:
        return []
    if not refs:
        # Instruction texts repeat (``add rsp, 8``, ``ret``): a diff reads millions, a cache reads each once.
        return list(_cached(text, tuple(sorted(address_operands))))
    return _numbers(text, address_operands, refs)


@functools.lru_cache(maxsize=1 << 16)
def _cached(text: str, address_operands: tuple[int, ...]) -> tuple[tuple[int, Form], ...]:
    return tuple(_numbers(text, address_operands, ()))


def _numbers(text: str, address_operands: Collection[int], refs: Collection[int]) -> list[tuple[int, Form]]:
    body = text.split(";", 1)[0].strip().lower()
    mnemonic, _, operands = body.partition(" ")
    if BRANCH.match(mnemonic) or mnemonic in _ADDRESS_MNEMONICS:
        return []
    out: list[tuple[int, Form]] = []
    for index, operand in enumerate(split_operands(operands)):
        if index in address_operands:
            continue
        form: Form = "displacement" if "[" in operand or "(" in operand else "immediate"
        # ``ldr x0, #0x5f0``: a literal-pool load names the pool's address (its value is the load's constant).
        if form == "immediate" and index > 0 and mnemonic.startswith("ldr"):
            continue
        if form == "displacement" and _PC.search(operand):
            continue
        for sign, digits in _NUMBER.findall(_SHIFT.sub(" ", operand)):
            value = (-1 if sign else 1) * int(digits, 0)
            if value in refs:
                continue
            # ``[rax + rdi*8]``: the scale is part of the addressing, not a displacement.
            if form == "displacement" and re.search(rf"\*\s*{re.escape(digits)}\b", operand):
                continue
            out.append((value, form))
    return out
