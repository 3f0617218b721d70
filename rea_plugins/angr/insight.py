"""Instruction facts, symbolized operands, call-target resolution and data types over angr (worker only).

Operands are read from capstone's details (angr decodes with them on); addresses a pc-relative operand or an
``adrp``/``add`` pair computes are resolved, and named from angr's symbols and functions, with the string or
datum found there.
"""

from __future__ import annotations

import re
from typing import Any

import capstone

from rea.plugin import JSONObject
from rea.plugin import split_operands
from rea.plugin import symbolized_text
from rea.plugin import symbols_of

_UNCONDITIONAL = frozenset({"jmp", "ljmp", "b", "br", "bx", "braa", "brab", "braaz", "brabz"})
_HALT = frozenset({"hlt", "ud2", "brk", "udf"})
_ADDRESSING = frozenset({"adr", "adrp"})


def _address_immediates(a: Any, raw: Any) -> list[int]:
    """Immediates of ``raw`` that are addresses in angr's mapping: branch targets and ``adr``/``adrp`` values."""
    if not a.delta or not (_is_branch(raw) or raw.mnemonic in _ADDRESSING):
        return []
    try:
        return [int(op.imm) for op in raw.operands if op.type == capstone.CS_OP_IMM]
    except (capstone.CsError, AttributeError):
        return []


def rebase_operand(a: Any, text: str, values: list[int]) -> str:
    """``text`` with each address in ``values`` (angr's mapping) spelled at its link-time address."""
    for value in values:
        text = re.sub(rf"(?<![0-9a-fA-Fx]){hex(value)}(?![0-9a-fA-F])", hex(value - a.delta), text)
    return text


def operand_text(a: Any, insn: Any) -> str:
    """Capstone's operand text of ``insn`` (decoded at angr's mapping) with its addresses at link time."""
    raw = getattr(insn, "insn", insn)
    return rebase_operand(a, str(raw.op_str), _address_immediates(a, raw))


class Symbolizer:
    """Resolves and names the addresses an instruction's operands denote."""

    def __init__(self, a: Any) -> None:
        self.a = a
        self._strings: dict[int, str] | None = None

    def strings(self) -> dict[int, str]:
        if self._strings is None:
            self._strings = {s.addr: s.item.value for s in self.a.strings()}
        return self._strings

    def describe(self, addr: int) -> JSONObject:
        """The symbol fields of an address: its name (or null) and the string it holds."""
        a = self.a
        out: JSONObject = {"address": a.out(addr), "name": a.name_at(addr)}
        text = self.strings().get(addr)
        if text is not None:
            out["string"] = text
        return out

    def operands(self, insn: Any, pages: dict[int, int]) -> list[JSONObject]:
        """Capstone operands of ``insn`` as operand details (kind, access, register, value, address): JSON objects,
        as the kernel's symbolizer (``symbolized_text``, ``symbols_of``) reads every provider's by key."""
        a = self.a
        raw = getattr(insn, "insn", insn)
        try:
            ops = list(raw.operands)
        except (capstone.CsError, AttributeError):
            ops = []
        addresses = _address_immediates(a, raw)
        texts = split_operands(rebase_operand(a, str(raw.op_str), addresses), len(ops))
        branch = _is_branch(raw)
        out: list[JSONObject] = []
        for i, op in enumerate(ops):
            item: JSONObject = {
                "text": texts[i] if i < len(texts) else "",
                "kind": "immediate",
                "access": _access(op),
            }
            address: int | None = None
            if op.type in (capstone.CS_OP_REG,):
                item["kind"] = "register"
                item["register"] = raw.reg_name(op.reg)
            elif op.type == capstone.CS_OP_IMM:
                item["value"] = int(op.imm) - (a.delta if int(op.imm) in addresses else 0)
                if branch or raw.mnemonic in ("adr", "adrp") or (a.mapped(int(op.imm)) and self._known(int(op.imm))):
                    address = int(op.imm)
                if raw.mnemonic == "add" and i == 2 and len(ops) == 3 and ops[1].type == capstone.CS_OP_REG:
                    page = pages.get(ops[1].reg)
                    if page is not None:
                        address = page + int(op.imm)
            elif op.type == capstone.CS_OP_MEM:
                item["kind"] = "memory"
                address = self._memory_address(raw, op, pages)
            if address is not None and (branch or a.mapped(address)):
                item.update({k: v for k, v in self.describe(address).items() if k != "address"})
                item["address"] = a.out(address)
            out.append(item)
        self._track_pages(raw, ops, pages)
        return out

    def _known(self, addr: int) -> bool:
        a = self.a
        return addr in a.by_addr or addr in self.strings() or bool(a.names_at(addr))

    def _memory_address(self, raw: Any, op: Any, pages: dict[int, int]) -> int | None:
        mem = op.mem
        base = raw.reg_name(mem.base) if mem.base else None
        if base in ("rip", "eip") and not mem.index:
            return int(raw.address + raw.size + mem.disp)
        if base in ("pc",) and not mem.index:
            return int(raw.address + mem.disp)
        if mem.base in pages and not mem.index:
            return pages[mem.base] + int(mem.disp)
        if not mem.base and not mem.index and mem.disp and self.a.mapped(int(mem.disp)):
            return int(mem.disp)
        return None

    def _track_pages(self, raw: Any, ops: list[Any], pages: dict[int, int]) -> None:
        """Registers an ``adrp`` loaded (arm64): the next ``add``/load off them names a full address."""
        if raw.mnemonic == "adrp" and len(ops) == 2 and ops[1].type == capstone.CS_OP_IMM:
            pages[ops[0].reg] = int(ops[1].imm)
            return
        try:
            _, written = raw.regs_access()
        except (capstone.CsError, AttributeError):
            written = [ops[0].reg] if ops and ops[0].type == capstone.CS_OP_REG else []
        for reg in written:
            pages.pop(reg, None)
        if _is_branch(raw):
            pages.clear()

    def annotate(self, insn: Any, pages: dict[int, int]) -> tuple[str, list[JSONObject]]:
        """An instruction's ``symbolized`` text and its ``symbols`` (the kernel's operand rows)."""
        details = self.operands(insn, pages)
        raw = getattr(insn, "insn", insn)
        return symbolized_text(raw.mnemonic, details, _is_branch(raw)), symbols_of(details)


def _access(op: Any) -> str | None:
    try:
        acc = int(op.access)
    except (AttributeError, capstone.CsError):
        return None
    if acc & capstone.CS_AC_READ and acc & capstone.CS_AC_WRITE:
        return "read_write"
    if acc & capstone.CS_AC_WRITE:
        return "write"
    if acc & capstone.CS_AC_READ:
        return "read"
    return None


def _group(raw: Any, group: int) -> bool:
    try:
        return bool(raw.group(group))
    except capstone.CsError:
        return False


def _is_branch(raw: Any) -> bool:
    return _group(raw, capstone.CS_GRP_JUMP) or _group(raw, capstone.CS_GRP_CALL)


def flow_of(raw: Any) -> str:
    """The contract's control-flow class of one capstone instruction."""
    if _group(raw, capstone.CS_GRP_CALL):
        return "call"
    if _group(raw, capstone.CS_GRP_RET) or raw.mnemonic in ("ret", "retaa", "retab"):
        return "return"
    if _group(raw, capstone.CS_GRP_JUMP):
        return "jump" if raw.mnemonic in _UNCONDITIONAL else "conditional_jump"
    if _group(raw, capstone.CS_GRP_INT) or raw.mnemonic in ("syscall", "svc", "int3"):
        return "interrupt"
    if raw.mnemonic in _HALT:
        return "halt"
    return "sequential"


def registers(raw: Any) -> tuple[list[str], list[str], list[str]]:
    """Registers read and written, and group names, of one capstone instruction."""
    try:
        read, written = raw.regs_access()
        reads = sorted({raw.reg_name(r) for r in read})
        writes = sorted({raw.reg_name(r) for r in written})
    except (capstone.CsError, AttributeError):
        reads, writes = [], []
    try:
        groups = sorted({raw.group_name(g) for g in raw.groups if raw.group_name(g)})
    except (capstone.CsError, AttributeError):
        groups = []
    return reads, writes, groups
