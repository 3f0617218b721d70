"""Register loads that name a call's target: a ``call reg`` or ``jmp reg`` (x86-64) whose register every path
through the procedure loads with a known address, ``lea reg, [rip + f]``, ``mov reg, imm`` or ``mov reg, [rip +
slot]`` of an import slot, resolves to those addresses (``run = cond ? A : B`` gives both, as branches or as a
``cmov`` of two loaded registers; a ``mov`` between registers, and an 8-byte spill to ``[rsp + N]`` and back while
the frame's address stays private, are followed). Provenance: ``register-load``,
``register-select`` (through a cmov), ``caller-argument`` (the value the entry holds, traced in the only caller).

Only what the instructions prove: any other write of the register on a path, a caller-saved register carried
across a call, or an instruction that writes registers implicitly leaves the site unresolved; the procedure's
entry reached first (a value passed in) is handed back for the caller step. The walk follows fall-through and
the procedure's own direct branches backwards, at most ``MAX_VISITS`` (instruction, register) pairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import NamedTuple
from typing import Protocol

from rea_plugins.native.disasm import Insn
from rea_plugins.native.dispatch import NUMBER
from rea_plugins.native.dispatch import X86_IMM
from rea_plugins.native.dispatch import family

MAX_VISITS = 512
MAX_TARGETS = 8
_CALLER_SAVED = frozenset({"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"})
_LEA = re.compile(rf"^(\w+), (?:qword ptr )?\[rip(?: ([+-]) ({NUMBER}))?\]$")
_MOV_SLOT = re.compile(rf"^(\w+), qword ptr \[rip(?: ([+-]) ({NUMBER}))?\]$")
_REGISTER = re.compile(r"^(?:r[a-z0-9]+|e[a-z]{2})$")
_STACK_LOAD = re.compile(rf"^(\w+), qword ptr \[rsp(?: \+ ({NUMBER}))?\]$")
_STACK_STORE = re.compile(rf"^qword ptr \[rsp(?: \+ ({NUMBER}))?\], (\w+)$")
_WIDTH = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "xmmword": 16, "ymmword": 32, "zmmword": 64}
_WIDE = re.compile(r"^r(?:[a-z]{2}|\d+)$")
# Instructions that write registers their operands do not name: the value cannot be followed past them.
_IMPLICIT = (
    "mul",
    "div",
    "idiv",
    "cqo",
    "cdq",
    "cwd",
    "cdqe",
    "cpuid",
    "rdtsc",
    "syscall",
    "xchg",
    "xadd",
    "cmpxchg",
    "rep",
    "movs",
    "stos",
    "lods",
    "scas",
    "cmps",
    "leave",
    "enter",
    "int",
    "xgetbv",
)
_STOPS = ("ret", "jmp", "ud2", "hlt")
# Precompiled: the walker reads every instruction of a procedure, and re's pattern cache costs a lookup a call.
_NUMBER = re.compile(NUMBER)
_STACK_OPERAND = re.compile(rf"(\w+) ptr \[rsp(?: \+ ({NUMBER}))?\]")


def _branch_target(insn: Insn) -> int | None:
    if insn.mnemonic[:1] == "j" and _NUMBER.fullmatch(insn.op_str):
        return int(insn.op_str, 0)
    return None


def _writes(insn: Insn) -> str | None:
    """The register the first operand names, for instructions that write it (not compares, tests, stores)."""
    if insn.mnemonic.startswith(("cmp", "test", "push", "j", "call", "ret", "nop", "endbr", "bt", "ud", "prefetch")):
        return None
    first = insn.op_str.split(",", 1)[0].strip()
    return family(first) if first and "[" not in first and _REGISTER.match(first) else None


def _loaded(
    insn: Insn, reg: str, is_target: Callable[[int], bool], slot_value: Callable[[int], int | None]
) -> int | None:
    """The address ``insn`` loads into ``reg`` when it is one of the known forms and names a target, else None."""
    end = insn.address + insn.size
    if insn.mnemonic == "lea":
        m = _LEA.match(insn.op_str)
        if m and family(m.group(1)) == reg:
            value = end + (int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(2) else 0)
            return value if is_target(value) else None
    elif insn.mnemonic == "mov":
        m = X86_IMM.match(insn.op_str)
        if m and family(m.group(1)) == reg and is_target(int(m.group(2), 0)):
            return int(m.group(2), 0)
        m = _MOV_SLOT.match(insn.op_str)
        if m and family(m.group(1)) == reg:
            slot = end + (int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(2) else 0)
            return slot_value(slot)
    return None


class Listing(Protocol):
    """What a walker reads of every instruction of a procedure, from its decoded records (``sweep.Records``)."""

    def position(self, address: int) -> int | None:
        """The index of the instruction at ``address``, else None."""
        ...

    def branches(self) -> Iterator[tuple[int, int]]:
        """(index, target) of each instruction whose mnemonic starts with "j" and whose operand is a number."""
        ...

    def frame_private(self) -> bool:
        """No ``lea`` of an ``[rsp`` operand and no operand text ending ``, rsp``."""
        ...


class Found(NamedTuple):
    """A register site's proven targets, each with how it was proven; ``entry`` the registers whose value the
    procedure's entry holds (passed in), which only the caller can name (empty when every path was proven)."""

    targets: dict[int, str]
    entry: frozenset[str]


class Walker:
    """One procedure's instructions with their in-procedure predecessors, for resolving its register sites."""

    def __init__(
        self,
        insns: Sequence[Insn],
        is_target: Callable[[int], bool],
        slot_value: Callable[[int], int | None],
        listing: Listing | None = None,
    ) -> None:
        """``listing``: what the walker reads of every instruction, answered from ``insns``' own records (which may
        then make each instruction on first read), else from the instructions."""
        self.insns = insns
        self.is_target = is_target
        self.slot_value = slot_value
        self.listing = listing
        self.at = {insn.address: i for i, insn in enumerate(insns)} if listing is None else {}
        self._private: bool | None = None
        self.preds: dict[int, list[int]] = {}
        for j, target in self._branches() if listing is None else listing.branches():
            k = self._index(target)
            if k is not None:
                self.preds.setdefault(k, []).append(j)

    def _branches(self) -> Iterator[tuple[int, int]]:
        """(index, target) of each direct branch whose mnemonic starts with "j", by index."""
        fullmatch = _NUMBER.fullmatch
        # Only branches can be predecessors other than the previous instruction: one C-speed filter, then those.
        for j, insn in [(j, insn) for j, insn in enumerate(self.insns) if insn.mnemonic[:1] == "j"]:
            if fullmatch(insn.op_str):
                yield j, int(insn.op_str, 0)

    def _index(self, address: int) -> int | None:
        return self.at.get(address) if self.listing is None else self.listing.position(address)

    @property
    def frame_private(self) -> bool:
        """Spill slots are followed only while the frame's address stays private: no ``lea r, [rsp+N]``, no copy
        of rsp (a callee or another pointer could otherwise write them). Read on the first spill met."""
        if self._private is None:
            if self.listing is not None:
                self._private = self.listing.frame_private()
            else:
                self._private = not any(
                    (i.mnemonic == "lea" and "[rsp" in i.op_str) or i.op_str.endswith(", rsp") for i in self.insns
                )
        return self._private

    def _stack_write(self, insn: Insn, slot: str) -> str | None:
        """For a spill ``slot`` (``[rsp+N]``): the register an 8-byte store to it saves, "" when ``insn`` moves the
        stack pointer or may write the slot some other way, None when it leaves the slot alone."""
        if insn.mnemonic.startswith(("push", "pop")) or _writes(insn) == "rsp":
            return ""
        first = insn.op_str.split(",", 1)[0]
        if "[" not in first or insn.mnemonic.startswith(("cmp", "test", "prefetch")):
            return None
        m = _STACK_STORE.match(insn.op_str)
        if m is not None and insn.mnemonic == "mov" and _slot(m.group(1)) == slot:
            return family(m.group(2)) if _REGISTER.match(m.group(2)) else ""
        if "rsp" not in first:
            return None  # the frame's address never leaves the procedure (frame_private): another base cannot alias
        offset = _STACK_OPERAND.fullmatch(first.strip())
        if offset is None or offset.group(1) not in _WIDTH:
            return ""
        lo, mine = int(offset.group(2) or "0", 0), int(slot[5:-1], 0)
        return "" if lo < mine + 8 and mine < lo + _WIDTH[offset.group(1)] else None

    def _before(self, j: int) -> list[int]:
        out = list(self.preds.get(j, ()))
        if j > 0 and not self.insns[j - 1].mnemonic.startswith(_STOPS):
            out.append(j - 1)
        return out

    def mnemonic(self, site: int) -> str | None:
        i = self._index(site)
        return None if i is None else self.insns[i].mnemonic

    def register(self, site: int) -> str | None:
        """The register a ``call``/``jmp`` at ``site`` goes through, else None."""
        i = self._index(site)
        if i is None or self.insns[i].mnemonic not in ("call", "jmp"):
            return None
        reg = self.insns[i].op_str.strip()
        return family(reg) if _REGISTER.match(reg) else None

    def resolve(self, site: int) -> list[int] | None:
        """The targets a ``call``/``jmp`` through a register at ``site`` can reach, or None when not proven."""
        found = self.trace(site)
        return sorted(found.targets) if found is not None and not found.entry else None

    def trace(self, site: int, reg: str | None = None, how: str = "register-load") -> Found | None:
        """What reaches the register of the ``call``/``jmp`` at ``site`` (or ``reg`` just before the instruction
        at ``site``, for a caller's argument): None when some path is not proven."""
        i = self._index(site)
        if i is None:
            return None
        if reg is None:
            reg = self.register(site)
            if reg is None:
                return None
        found: dict[int, str] = {}
        entry: set[str] = set()
        seen: set[tuple[int, str]] = set()
        stack = [(j, reg, how) for j in self._before(i)]
        if not stack:
            entry.add(reg)
        while stack:
            j, reg, how = stack.pop()
            if (j, reg) in seen:
                continue
            seen.add((j, reg))
            if len(seen) > MAX_VISITS:
                return None
            insn = self.insns[j]
            if insn.mnemonic.startswith(_IMPLICIT):
                return None
            if insn.mnemonic == "call" and reg in _CALLER_SAVED:
                return None
            follow = [(reg, how)]
            if reg.startswith("["):  # a spill slot of the frame: its last store names the register it held
                stored = self._stack_write(insn, reg)
                if stored == "":
                    return None
                if stored is not None:
                    follow = [(stored, how)]
            elif _writes(insn) == reg:
                m = _STACK_LOAD.match(insn.op_str) if insn.mnemonic == "mov" else None
                if m is not None and self.frame_private:
                    follow = [(_slot(m.group(2)), how)]
                else:
                    source = _copied(insn)
                    if source is None:
                        value = _loaded(insn, reg, self.is_target, self.slot_value)
                        if value is None:
                            return None
                        found.setdefault(value, how)
                        if len(found) > MAX_TARGETS:
                            return None
                        continue
                    if insn.mnemonic.startswith("cmov"):  # either the old value or the source's
                        how = "register-select" if how == "register-load" else how
                        follow = [(reg, how), (source, how)]
                    else:
                        follow = [(source, how)]
            earlier = self._before(j)
            if not earlier and j > 0 and insn.mnemonic in ("nop", "int3"):
                continue  # alignment padding after a jump: no path runs through it
            if not earlier:  # the procedure's entry (or code only a table reaches) holds a value passed in
                if any(r.startswith("[") for r, _ in follow):
                    return None
                entry.update(r for r, _ in follow)
                continue
            stack.extend((k, r, h) for k in earlier for r, h in follow)
        if not found and not entry:
            return None
        return Found(found, frozenset(entry))


def _slot(offset: str | None) -> str:
    return f"[rsp+{int(offset or '0', 0):#x}]"


def _copied(insn: Insn) -> str | None:
    """The full-width register a ``mov reg, reg`` or ``cmovcc reg, reg`` copies, else None."""
    if insn.mnemonic != "mov" and not insn.mnemonic.startswith("cmov"):
        return None
    parts = [x.strip() for x in insn.op_str.split(",")]
    if len(parts) != 2 or not _REGISTER.match(parts[1]) or not _REGISTER.match(parts[0]):
        return None
    if bool(_WIDE.match(parts[0])) != bool(_WIDE.match(parts[1])):
        return None  # a width change: not a plain copy of the address
    return family(parts[1])
