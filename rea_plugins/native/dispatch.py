"""Bounded pointer-table dispatch: a jump or call through ``[table + index * word]`` whose table address a
pc-relative load computes and whose index a mask or a compare bounds just before (x86-64 and arm64).

Only what the instructions prove is resolved: a window of the dispatch's own straight-line code, a register
written by anything else between its definition and its use ends the search (the site stays unresolved).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rea_plugins.native.disasm import Insn

WINDOW = 16  # instructions before the dispatch that may compute its table and bound
MAX_ENTRIES = 1024
NUMBER = r"(?:0x[0-9a-f]+|\d+)"
_X86_SITE = re.compile(r"^(?:qword|dword) ptr \[(\w+) \+ (\w+)\*([48])\]$")
_X86_LEA = re.compile(rf"^(\w+), \[rip(?: ([+-]) ({NUMBER}))?\]$")
X86_IMM = re.compile(rf"^(\w+), ({NUMBER})$")
_A64_LOAD = re.compile(r"^(\w+), \[(\w+), (\w+)(?:, (?:lsl|uxtw|sxtw) #(\d))?\]$")
_A64_IMM = re.compile(rf"#({NUMBER})")
_X86_32 = {
    "eax": "rax",
    "ebx": "rbx",
    "ecx": "rcx",
    "edx": "rdx",
    "esi": "rsi",
    "edi": "rdi",
    "ebp": "rbp",
    "esp": "rsp",
}


def family(reg: str) -> str:
    """The full-width register a name writes (``eax`` -> ``rax``, ``r8d`` -> ``r8``, ``w4`` -> ``x4``)."""
    reg = reg.strip()
    if reg in _X86_32:
        return _X86_32[reg]
    if re.fullmatch(r"r\d+[dwb]", reg):
        return reg[:-1]
    if re.fullmatch(r"w\d+", reg):
        return "x" + reg[1:]
    return reg


def _writes(insn: Insn) -> str | None:
    """The register an instruction's first operand names (the one it writes, for the forms used here)."""
    if insn.mnemonic.startswith(("cmp", "test", "str", "stp", "push", "j", "b", "call", "ret", "nop", "endbr")):
        return None
    first = insn.op_str.split(",", 1)[0].strip()
    return family(first) if first and "[" not in first else None


def _bound(before: Sequence[Insn], index: str) -> int | None:
    """Entries the index can select: ``and idx, mask`` (mask + 1) or ``cmp idx, n`` (n + 1), nearest first."""
    for insn in reversed(before):
        if insn.mnemonic == "and":
            parts = [p.strip() for p in insn.op_str.split(",")]
            m = _A64_IMM.search(insn.op_str) if parts and parts[-1].startswith("#") else X86_IMM.match(insn.op_str)
            if parts and family(parts[0]) == index and m is not None:
                value = int(m.group(m.lastindex or 1), 0)
                return value + 1 if 0 <= value < MAX_ENTRIES else None
        if insn.mnemonic == "cmp":
            parts = [p.strip() for p in insn.op_str.split(",")]
            if len(parts) == 2 and family(parts[0]) == index:
                value = int(parts[1].lstrip("#"), 0) if re.fullmatch(rf"#?{NUMBER}", parts[1]) else -1
                return value + 1 if 0 <= value < MAX_ENTRIES else None
        if insn.mnemonic == "mov" and _writes(insn) == index:
            index = family(insn.op_str.split(",", 1)[1])  # the value was masked in the register it came from
            continue
        if _writes(insn) == index:
            return None
    return None


def x86_table(window: Sequence[Insn]) -> tuple[int, int, int] | None:
    """``(table, entries, word)`` of an x86-64 ``jmp``/``call [base + index * word]`` ending ``window``."""
    site = window[-1]
    m = _X86_SITE.match(site.op_str.split(" ", 1)[-1] if site.op_str.startswith("rex") else site.op_str)
    if m is None:
        return None
    base, index, word = family(m.group(1)), family(m.group(2)), int(m.group(3))
    before = window[:-1]
    table: int | None = None
    for i in range(len(before) - 1, -1, -1):
        insn = before[i]
        lea = _X86_LEA.match(insn.op_str) if insn.mnemonic == "lea" else None
        if lea is not None and family(lea.group(1)) == base:
            offset = int(lea.group(3), 0) if lea.group(3) else 0
            table = insn.address + insn.size + (-offset if lea.group(2) == "-" else offset)
            break
        if _writes(insn) == base:
            return None
    count = _bound(before, index)
    return (table, count, word) if table is not None and count is not None else None


def arm64_table(window: Sequence[Insn]) -> tuple[int, int, int] | None:
    """``(table, entries, word)`` of an arm64 ``br``/``blr`` of a register loaded from ``[table, index, lsl #3]``."""
    target = family(window[-1].op_str)
    before = list(window[:-1])
    load: re.Match[str] | None = None
    at = len(before)
    while at > 0:
        at -= 1
        insn = before[at]
        if _writes(insn) != target:
            continue
        if insn.mnemonic == "mov":
            target = family(insn.op_str.split(",", 1)[1])
            continue
        load = _A64_LOAD.match(insn.op_str) if insn.mnemonic == "ldr" else None
        break
    if load is None or not load.group(4):
        return None
    base, index, word = family(load.group(2)), family(load.group(3)), 1 << int(load.group(4))
    table: int | None = None
    offset = 0
    for insn in reversed(before[:at]):
        if _writes(insn) != base:
            continue
        imm = _A64_IMM.search(insn.op_str)
        if insn.mnemonic == "add" and imm is not None and family(insn.op_str.split(",")[1]) == base:
            offset += int(imm.group(1), 0)
            continue
        if insn.mnemonic == "adrp" and imm is not None:
            table = int(imm.group(1), 0) + offset
        break
    count = _bound(before[:at], index)
    return (table, count, word) if table is not None and count is not None else None


def pointer_table(arch: str, window: Sequence[Insn]) -> tuple[int, int, int] | None:
    """The bounded table a dispatch at ``window[-1]`` reads its target from, if the window proves one."""
    if not window:
        return None
    if arch == "x86_64" and window[-1].mnemonic in ("jmp", "call"):
        return x86_table(window)
    if arch == "arm64" and window[-1].mnemonic in ("br", "blr"):
        return arm64_table(window)
    return None
