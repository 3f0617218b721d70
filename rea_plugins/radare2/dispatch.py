"""Indirect jumps and calls through a table of pointers, over radare2's decoded operands (``aoj``).

radare2 5.7 resolves a switch only behind a ``cmp``/``ja`` bound; a dispatch such as ``return
table[k & 3](a, b)`` (``lea rdx, [rip + T]; jmp qword [rdx + rax*8]``, or ``adrp``/``add``/``ldr``/``br`` on
arm64) stays unresolved. This follows the registers of the dispatching block backwards: the slot load
``[base + index * word]``, the table's address (``lea`` from a pc-relative operand, ``adrp`` + ``add``), and
the index's bound (an ``and`` with a low mask, or a ``cmp`` before an unsigned branch in the block or its
predecessor), then reads the table. Anything else stays unresolved.
"""

from __future__ import annotations

import re
from typing import Any

from rea.plugin import JSONObject
from rea_plugins.radare2.engine import integer
from rea_plugins.radare2.engine import list_of

MAX_ENTRIES = 1024
_X86_LEGACY = {"a": "rax", "b": "rbx", "c": "rcx", "d": "rdx"}
_X86_INDEX = re.compile(r"^(?:[re]?(si|di|bp|sp)l?)$")
_WRITES = frozenset(
    {
        "mov",
        "movzx",
        "movsxd",
        "lea",
        "and",
        "add",
        "ldr",
        "ldrsw",
        "adrp",
        "adr",
        "sub",
        "orr",
        "ubfx",
        "uxtw",
        "sxtw",
        "movl",
        "movq",
    }
)
_UNSIGNED_ABOVE = frozenset({"ja", "jae", "jnbe", "jnb", "b.hi", "b.hs", "b.cs", "bhi", "bhs"})


def family(reg: str) -> str:
    """A register's full-width name: ``eax`` and ``al`` are ``rax``, ``w4`` is ``x4``, ``r8d`` is ``r8``."""
    r = reg.lower()
    if re.fullmatch(r"w\d+", r):
        return "x" + r[1:]
    m = re.fullmatch(r"(r\d+)[dwb]?", r)
    if m:
        return m.group(1)
    m = re.fullmatch(r"e?([abcd])x|([abcd])[lh]", r)
    if m:
        return _X86_LEGACY[m.group(1) or m.group(2)]
    m = _X86_INDEX.fullmatch(r)
    if m:
        return "r" + m.group(1)
    return r


# An instruction as radare2's ``aoj`` prints it (its own JSON: ``mnemonic``, ``ptr``, ``opex.operands``...).
def _operands(op: JSONObject) -> list[JSONObject]:
    opex = op.get("opex")
    return list_of(opex.get("operands")) if isinstance(opex, dict) else []


def _dest(op: JSONObject) -> str | None:
    """The register an instruction writes through its first operand, for the instructions followed here."""
    mnemonic = str(op.get("mnemonic") or "")
    ops = _operands(op)
    if mnemonic not in _WRITES or not ops or ops[0].get("type") != "reg":
        return None
    return family(str(ops[0].get("value")))


class Resolver:
    """Resolves one dispatching block of a radare2 Program."""

    def __init__(self, p: Any, read_word: Any) -> None:
        self.p = p
        self.read_word = read_word

    def decode(self, addr: int) -> JSONObject:
        found = list_of(self.p.core.cmdj(f"aoj @ {addr}"))
        return found[0] if found else {}

    def resolve(self, block: list[int], before: list[int]) -> tuple[int, list[int]] | None:
        """``(table, targets)`` for the indirect transfer ending ``block`` (instruction addresses, in order);
        ``before`` are the instructions of the predecessor that branches to it."""
        insns = [self.decode(a) for a in block]
        prev = [self.decode(a) for a in before]
        if not insns:
            return None
        jump = insns[-1]
        ops = _operands(jump)
        if not ops:
            return None
        at = len(insns) - 1
        mem = ops[0] if ops[0].get("type") == "mem" else None
        if mem is None:
            if ops[0].get("type") != "reg":
                return None
            reg = family(str(ops[0].get("value")))
            at, load = self._writer(insns, at, reg)
            while (
                load is not None
                and str(load.get("mnemonic")) == "mov"
                and len(_operands(load)) == 2
                and _operands(load)[1].get("type") == "reg"
            ):
                reg = family(str(_operands(load)[1].get("value")))
                at, load = self._writer(insns, at, reg)
            if load is None or len(_operands(load)) < 2 or _operands(load)[1].get("type") != "mem":
                return None
            mem = _operands(load)[1]
        base, index = mem.get("base"), mem.get("index")
        if not base or not index:
            return None
        shift = mem.get("shift")
        scale = integer(mem.get("scale")) or (1 << (integer(shift.get("value")) or 0) if isinstance(shift, dict) else 1)
        if scale != self.p.word:
            return None
        table = self._address(insns, at, family(str(base)))
        count = self._bound(insns, at, family(str(index)), prev)
        if table is None or count is None:
            return None
        table += integer(mem.get("disp")) or 0
        targets = [self.read_word(table + i * self.p.word) for i in range(count)]
        if not targets or any(t is None or not self.p.executable(t) for t in targets):
            return None
        return table, [int(t) for t in targets if t is not None]

    @staticmethod
    def _writer(insns: list[JSONObject], before: int, reg: str) -> tuple[int, JSONObject | None]:
        for i in range(before - 1, -1, -1):
            if _dest(insns[i]) == reg:
                return i, insns[i]
        return -1, None

    def _address(self, insns: list[JSONObject], before: int, reg: str) -> int | None:
        """The address ``reg`` holds: a ``lea`` of a pc-relative operand, or ``adrp`` (+ ``add``)."""
        i, op = self._writer(insns, before, reg)
        if op is None:
            return None
        mnemonic = str(op.get("mnemonic"))
        if mnemonic in ("lea", "adr", "adrp"):
            return integer(op.get("ptr"))
        ops = _operands(op)
        if mnemonic == "add" and len(ops) == 3 and ops[2].get("type") == "imm":
            page = self._address(insns, i, family(str(ops[1].get("value"))))
            return None if page is None else page + (integer(ops[2].get("value")) or 0)
        return None

    def _bound(self, insns: list[JSONObject], before: int, reg: str, prev: list[JSONObject]) -> int | None:
        """How many entries an index register can select: from an ``and`` mask or a ``cmp`` bound."""
        i, op = self._writer(insns, before, reg)
        while (
            op is not None
            and str(op.get("mnemonic")) in ("mov", "movzx", "uxtw")
            and len(_operands(op)) == 2
            and _operands(op)[1].get("type") == "reg"
        ):
            i, op = self._writer(insns, i, family(str(_operands(op)[1].get("value"))))
        if op is not None and str(op.get("mnemonic")) == "and":
            mask = next((integer(o.get("value")) for o in _operands(op) if o.get("type") == "imm"), None)
            if mask is not None and 0 < mask < MAX_ENTRIES and mask & (mask + 1) == 0:
                return mask + 1
        for seq in (insns[:before], prev):
            bound = _compare_bound(seq, reg)
            if bound is not None:
                return bound
        return None


def _compare_bound(seq: list[JSONObject], reg: str) -> int | None:
    """``N + 1`` from ``cmp reg, N`` followed by an unsigned "above" branch (``N`` from "above or equal")."""
    for i in range(len(seq) - 1, -1, -1):
        op = seq[i]
        if str(op.get("mnemonic")) != "cmp":
            continue
        ops = _operands(op)
        if len(ops) != 2 or ops[0].get("type") != "reg" or family(str(ops[0].get("value"))) != reg:
            return None
        limit = integer(ops[1].get("value"))
        branch = next((str(s.get("mnemonic")) for s in seq[i + 1 :] if str(s.get("type")) == "cjmp"), "")
        if limit is None or branch not in _UNSIGNED_ABOVE:
            return None
        count = limit + 1 if branch in ("ja", "jnbe", "b.hi", "bhi") else limit
        return count if 0 < count <= MAX_ENTRIES else None
    return None
