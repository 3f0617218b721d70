"""Register loads that name a call's target: a ``call reg`` or ``jmp reg`` (x86-64) whose register every path
through the procedure loads with a known address, ``lea reg, [rip + f]``, ``mov reg, imm`` or ``mov reg, [rip +
slot]`` of an import slot, resolves to those addresses (``run = cond ? A : B`` gives both).

Only what the instructions prove: any other write of the register on a path, a caller-saved register carried
across a call, an instruction that writes registers implicitly, or the procedure's entry reached first (a value
passed in) leaves the site unresolved. The walk follows fall-through and the procedure's own direct branches
backwards, at most ``MAX_VISITS`` instructions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rea_plugins.native.disasm import Insn
from rea_plugins.native.dispatch import family

MAX_VISITS = 512
MAX_TARGETS = 8
_CALLER_SAVED = frozenset({"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"})
_NUM = r"(?:0x[0-9a-f]+|\d+)"
_LEA = re.compile(rf"^(\w+), (?:qword ptr )?\[rip(?: ([+-]) ({_NUM}))?\]$")
_MOV_IMM = re.compile(rf"^(\w+), ({_NUM})$")
_MOV_SLOT = re.compile(rf"^(\w+), qword ptr \[rip(?: ([+-]) ({_NUM}))?\]$")
_REGISTER = re.compile(r"^(?:r[a-z0-9]+|e[a-z]{2})$")
# Instructions that write registers their operands do not name: the value cannot be followed past them.
_IMPLICIT = ("mul", "div", "idiv", "cqo", "cdq", "cwd", "cdqe", "cpuid", "rdtsc", "syscall", "xchg", "xadd",
             "cmpxchg", "rep", "movs", "stos", "lods", "scas", "cmps", "leave", "enter", "int", "xgetbv")
_STOPS = ("ret", "jmp", "ud2", "hlt")


def _branch_target(insn: Insn) -> int | None:
    if insn.mnemonic.startswith("j") and re.fullmatch(_NUM, insn.op_str):
        return int(insn.op_str, 0)
    return None


def _writes(insn: Insn) -> str | None:
    """The register the first operand names, for instructions that write it (not compares, tests, stores)."""
    if insn.mnemonic.startswith(("cmp", "test", "push", "j", "call", "ret", "nop", "endbr", "bt", "ud", "prefetch")):
        return None
    first = insn.op_str.split(",", 1)[0].strip()
    return family(first) if first and "[" not in first and _REGISTER.match(first) else None


def _loaded(insn: Insn, reg: str, is_target: Callable[[int], bool], slot_value: Callable[[int], int | None]) \
        -> int | None:
    """The address ``insn`` loads into ``reg`` when it is one of the known forms and names a target, else None."""
    end = insn.address + insn.size
    if insn.mnemonic == "lea":
        m = _LEA.match(insn.op_str)
        if m and family(m.group(1)) == reg:
            value = end + (int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(2) else 0)
            return value if is_target(value) else None
    elif insn.mnemonic == "mov":
        m = _MOV_IMM.match(insn.op_str)
        if m and family(m.group(1)) == reg and is_target(int(m.group(2), 0)):
            return int(m.group(2), 0)
        m = _MOV_SLOT.match(insn.op_str)
        if m and family(m.group(1)) == reg:
            slot = end + (int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(2) else 0)
            return slot_value(slot)
    return None


class Walker:
    """One procedure's instructions with their in-procedure predecessors, for resolving its register sites."""

    def __init__(self, insns: Sequence[Insn], is_target: Callable[[int], bool],
                 slot_value: Callable[[int], int | None]) -> None:
        self.insns = insns
        self.is_target = is_target
        self.slot_value = slot_value
        self.at = {insn.address: i for i, insn in enumerate(insns)}
        self.preds: dict[int, list[int]] = {}
        for j, insn in enumerate(insns):
            target = _branch_target(insn)
            if target is not None and target in self.at:
                self.preds.setdefault(self.at[target], []).append(j)

    def _before(self, j: int) -> list[int]:
        out = list(self.preds.get(j, ()))
        if j > 0 and not self.insns[j - 1].mnemonic.startswith(_STOPS):
            out.append(j - 1)
        return out

    def mnemonic(self, site: int) -> str | None:
        i = self.at.get(site)
        return None if i is None else self.insns[i].mnemonic

    def resolve(self, site: int) -> list[int] | None:
        """The targets a ``call``/``jmp`` through a register at ``site`` can reach, or None when not proven."""
        i = self.at.get(site)
        if i is None or self.insns[i].mnemonic not in ("call", "jmp"):
            return None
        reg = self.insns[i].op_str.strip()
        if not _REGISTER.match(reg):
            return None
        reg = family(reg)
        found: set[int] = set()
        seen: set[int] = set()
        stack = self._before(i)
        if not stack:
            return None
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            if len(seen) > MAX_VISITS:
                return None
            insn = self.insns[j]
            if insn.mnemonic.startswith(_IMPLICIT):
                return None
            if insn.mnemonic == "call" and reg in _CALLER_SAVED:
                return None
            if _writes(insn) == reg:
                value = _loaded(insn, reg, self.is_target, self.slot_value)
                if value is None:
                    return None
                found.add(value)
                if len(found) > MAX_TARGETS:
                    return None
                continue
            earlier = self._before(j)
            if not earlier:
                return None  # the procedure's entry (or unreachable code) holds a value passed in
            stack.extend(earlier)
        return sorted(found) or None
