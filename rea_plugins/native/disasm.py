"""Capstone decoding and per-instruction flow and reference facts for x86, x86-64, ARM and AArch64."""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any
from typing import NamedTuple

# Flow classes of one instruction.
FALL = 0  # ordinary: falls through
CALL = 1
JUMP = 2  # unconditional
COND = 3  # conditional branch: falls through and may jump
RET = 4  # ends the path (ret, hlt, ud2, brk)
STOP = 5  # bytes that do not decode: a path ends before them


class Insn(NamedTuple):
    address: int
    size: int
    mnemonic: str
    op_str: str


class Flow(NamedTuple):
    """What an instruction does to control flow and which addresses it names."""

    cls: int
    target: int | None  # direct branch/call target
    slot: int | None  # memory slot a call/jump goes through (import slots, tables)
    data: tuple[tuple[int, str], ...]  # (address, kind) with kind data|read|write


_NO_DATA: tuple[tuple[int, str], ...] = ()


def make_decoder(arch: str, bits: int) -> Any:
    import capstone

    if arch in ("x86_64", "x86"):
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64 if arch == "x86_64" else capstone.CS_MODE_32)
    elif arch == "arm64":
        md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    elif arch == "arm":
        md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_ARM)
    else:
        raise ValueError(arch)
    md.skipdata = False
    return md


def decode(md: Any, code: bytes, address: int, max_count: int = 0) -> Iterator[Insn]:
    """Lite decoding (no operand detail): capstone's fast path."""
    return map(Insn._make, md.disasm_lite(code, address, max_count))


# -- x86 ---------------------------------------------------------------------------------------

_X86_RIP = re.compile(r"\[rip ([+-]) (0x[0-9a-f]+|\d+)\]")
_X86_ABS = re.compile(r"\[(0x[0-9a-f]+)\]")
_X86_IMM = re.compile(r"(?<![\w\[+*-])(0x[0-9a-f]+)\b(?!\])")
_X86_TARGET = re.compile(r"^0x[0-9a-f]+$")
_X86_RET = frozenset({"ret", "retn", "retf", "iret", "iretd", "iretq", "hlt", "ud2", "sysret"})
_X86_NO_WRITE = frozenset({"cmp", "test", "push", "bt", "ucomisd", "ucomiss", "comisd", "comiss", "prefetcht0", "nop"})


def x86_flow(insn: Insn, mapped: Callable[[int], bool]) -> Flow:
    """Flow and referenced addresses of one x86 instruction, from capstone's Intel text."""
    mnem = insn.mnemonic.split()[-1] if " " in insn.mnemonic else insn.mnemonic
    ops = insn.op_str
    nxt = insn.address + insn.size
    slot: int | None = None
    m = _X86_RIP.search(ops)
    if m:
        disp = int(m.group(2), 0)
        slot = nxt + disp if m.group(1) == "+" else nxt - disp
    else:
        m = _X86_ABS.search(ops)
        if m:
            slot = int(m.group(1), 16)
    if mnem == "call" or mnem == "jmp":
        cls = CALL if mnem == "call" else JUMP
        if _X86_TARGET.match(ops):
            return Flow(cls, int(ops, 16), None, _NO_DATA)
        return Flow(cls, None, slot, _NO_DATA)
    if mnem in _X86_RET:
        return Flow(RET, None, None, _NO_DATA)
    if mnem[0] == "j" or mnem.startswith("loop") or mnem in ("jrcxz", "jecxz"):
        return Flow(COND, int(ops, 16) if _X86_TARGET.match(ops) else None, None, _NO_DATA)
    data: list[tuple[int, str]] = []
    if slot is not None and mapped(slot):
        if mnem == "lea":
            kind = "data"
        elif ops.find("[") < ops.find(",") and mnem not in _X86_NO_WRITE:
            kind = "write"
        else:
            kind = "read"
        data.append((slot, kind))
    if "0x" in ops and mnem != "lea":
        for im in _X86_IMM.finditer(ops):
            value = int(im.group(1), 16)
            if value >= 0x1000 and value != slot and mapped(value):
                data.append((value, "data"))
    return Flow(FALL, None, None, tuple(data) if data else _NO_DATA)


# -- AArch64 -----------------------------------------------------------------------------------

_A64_IMM = re.compile(r"#(-?0x[0-9a-f]+|-?\d+)")
_A64_REG = re.compile(r"^([xw]\d+|sp|lr|fp)")
_A64_MEM = re.compile(r"\[(x\d+|sp|fp)(?:, #(-?0x[0-9a-f]+|-?\d+))?\]")
_A64_COND = ("b.", "cbz", "cbnz", "tbz", "tbnz")


def _imm(text: str) -> int:
    return int(text, 0)


class Arm64State:
    """Tracks ``adrp``/``adr`` register values inside one straight-line run."""

    def __init__(self) -> None:
        self.regs: dict[str, int] = {}

    def reset(self) -> None:
        self.regs.clear()


def arm64_flow(insn: Insn, mapped: Callable[[int], bool], state: Arm64State) -> Flow:
    """Flow and referenced addresses of one AArch64 instruction (adrp pairs via ``state``)."""
    mnem = insn.mnemonic
    ops = insn.op_str
    if mnem == "bl":
        return Flow(CALL, _imm(ops.lstrip("#")), None, _NO_DATA)
    if mnem == "b":
        return Flow(JUMP, _imm(ops.lstrip("#")), None, _NO_DATA)
    if mnem.startswith(_A64_COND):
        targets = _A64_IMM.findall(ops)
        return Flow(COND, _imm(targets[-1]) if targets else None, None, _NO_DATA)
    if mnem in ("blr", "blraa", "blrab", "blraaz", "blrabz"):
        return Flow(CALL, None, state.regs.get(ops.split(",")[0].strip() + "@slot"), _NO_DATA)
    if mnem in ("br", "braa", "brab", "braaz", "brabz"):
        return Flow(JUMP, None, state.regs.get(ops.split(",")[0].strip() + "@slot"), _NO_DATA)
    if mnem in ("ret", "retaa", "retab", "eret", "brk", "hlt", "udf"):
        return Flow(RET, None, None, _NO_DATA)
    dst_m = _A64_REG.match(ops)
    dst = dst_m.group(1).replace("w", "x", 1) if dst_m else None
    if mnem == "adrp" or mnem == "adr":
        imms = _A64_IMM.findall(ops)
        if dst and imms:
            value = _imm(imms[-1])
            state.regs[dst] = value
            state.regs.pop(dst + "@slot", None)
            if mnem == "adr" and mapped(value):
                return Flow(FALL, None, None, ((value, "data"),))
        return Flow(FALL, None, None, _NO_DATA)
    data: tuple[tuple[int, str], ...] = _NO_DATA
    if mnem == "add" and dst:
        parts = [p.strip() for p in ops.split(",")]
        imms = _A64_IMM.findall(ops)
        if len(parts) == 3 and parts[1] in state.regs and imms and "lsl" not in ops:
            value = state.regs[parts[1]] + _imm(imms[-1])
            state.regs[dst] = value
            return Flow(FALL, None, None, ((value, "data"),) if mapped(value) else _NO_DATA)
    elif mnem.startswith(("ldr", "str", "ldp", "stp", "ldur", "stur")):
        mem = _A64_MEM.search(ops)
        if mem and mem.group(1) in state.regs and not ops.rstrip().endswith("!"):
            value = state.regs[mem.group(1)] + (_imm(mem.group(2)) if mem.group(2) else 0)
            kind = "read" if mnem.startswith("ld") else "write"
            if dst and kind == "read":
                state.regs.pop(dst, None)
                state.regs[dst + "@slot"] = value
            if mapped(value):
                data = ((value, kind),)
            return Flow(FALL, None, None, data)
        if mnem == "ldr" and "[" not in ops:  # literal load
            imms = _A64_IMM.findall(ops)
            if imms and mapped(_imm(imms[-1])):
                data = ((_imm(imms[-1]), "read"),)
    if dst and dst in state.regs and mnem not in ("str", "stp", "stur", "cmp", "cmn", "tst"):
        state.regs.pop(dst, None)
        state.regs.pop(dst + "@slot", None)
    return Flow(FALL, None, None, data)


# -- ARM (32-bit) ------------------------------------------------------------------------------

_ARM_COND = (
    "beq",
    "bne",
    "bcs",
    "bhs",
    "bcc",
    "blo",
    "bmi",
    "bpl",
    "bvs",
    "bvc",
    "bhi",
    "bls",
    "bge",
    "blt",
    "bgt",
    "ble",
    "cbz",
    "cbnz",
)


def arm_flow(insn: Insn) -> Flow:
    """Flow of one 32-bit ARM instruction (direct branches only; data references are not tracked)."""
    mnem, ops = insn.mnemonic, insn.op_str
    imms = _A64_IMM.findall(ops)
    if mnem in ("bl", "blx") and imms:
        return Flow(CALL, _imm(imms[-1]), None, _NO_DATA)
    if mnem in ("blx", "bl"):
        return Flow(CALL, None, None, _NO_DATA)
    if mnem == "b" and imms:
        return Flow(JUMP, _imm(imms[-1]), None, _NO_DATA)
    if mnem in _ARM_COND and imms:
        return Flow(COND, _imm(imms[-1]), None, _NO_DATA)
    if mnem == "bx" and ops.strip() == "lr":
        return Flow(RET, None, None, _NO_DATA)
    if mnem == "bx" or (mnem.startswith("pop") and "pc" in ops) or (mnem == "ldr" and ops.startswith("pc")):
        return Flow(JUMP if mnem != "pop" else RET, None, None, _NO_DATA)
    return Flow(FALL, None, None, _NO_DATA)


class FlowReader:
    """One arch's flow function with the state it needs."""

    def __init__(self, arch: str, mapped: Callable[[int], bool]) -> None:
        self.arch = arch
        self.mapped = mapped
        self.state = Arm64State()

    def reset(self) -> None:
        self.state.reset()

    def __call__(self, insn: Insn) -> Flow:
        if self.arch in ("x86_64", "x86"):
            return x86_flow(insn, self.mapped)
        if self.arch == "arm64":
            return arm64_flow(insn, self.mapped, self.state)
        return arm_flow(insn)


_JT_MOVSXD = re.compile(r"^(\w+), dword ptr \[(\w+) \+ (\w+)\*4\]$")
_JT_ABS = re.compile(r"^qword ptr \[(\w+)\*8 \+ (0x[0-9a-f]+)\]$")
_JT_CMP = re.compile(r"^(\w+), (0x[0-9a-f]+|\d+)$")


def x86_jump_table(
    window: list[Insn], read: Callable[[int, int], bytes | None], within: Callable[[int], bool], limit: int = 1024
) -> list[int] | None:
    """Targets of a gcc/clang x86 jump table ending at ``window[-1]`` (an indirect jmp), or None."""
    jmp = window[-1]
    ops = jmp.op_str
    bound = limit
    for insn in reversed(window[:-1]):
        if insn.mnemonic == "cmp":
            m = _JT_CMP.match(insn.op_str)
            if m:
                bound = min(limit, int(m.group(2), 0) + 1)
            break
    m_abs = _JT_ABS.match(ops)
    if m_abs:
        return _read_table(read, int(m_abs.group(2), 16), bound, 8, within, relative=False)
    table_reg = None
    for insn in reversed(window[:-1]):
        m = _JT_MOVSXD.match(insn.op_str) if insn.mnemonic == "movsxd" else None
        if m:
            table_reg = m.group(2)
            continue
        if table_reg and insn.mnemonic == "lea" and insn.op_str.startswith(table_reg + ","):
            rip = _X86_RIP.search(insn.op_str)
            if not rip:
                return None
            disp = int(rip.group(2), 0)
            base = insn.address + insn.size + (disp if rip.group(1) == "+" else -disp)
            return _read_table(read, base, bound, 4, within, relative=True)
    return None


# AArch64 switch tables (gcc and clang): the index bounded by ``cmp wI, #N``, the table's address built by
# adrp + add, one entry loaded by ldrb/ldrh/ldr(sw) [table, index], a base taken by adr (or the table itself) and
# ``add xD, base, entry(, sxtb|uxtb|... #2)`` then ``br xD``.
_A64_LOAD_INDEXED = re.compile(r"^([wx])(\d+), \[x(\d+), [wx]\d+(?:, (?:uxtw|sxtw|lsl)(?: #\d+)?)?\]$")
_A64_ADD_ENTRY = re.compile(r"^x(\d+), x(\d+), [wx](\d+)(?:, (sxtb|sxth|sxtw|uxtb|uxth|uxtw|lsl) #(\d+))?$")
_A64_ADD_IMM = re.compile(r"^x(\d+), x(\d+), #(0x[0-9a-f]+|\d+)$")
_A64_CMP = re.compile(r"^[wx]\d+, #(0x[0-9a-f]+|\d+)$")
_A64_ENTRY = {"ldrb": (1, False), "ldrsb": (1, True), "ldrh": (2, False), "ldrsh": (2, True), "ldrsw": (4, True)}
_A64_EXTEND = {"sxtb": (8, True), "sxth": (16, True), "sxtw": (32, True), "uxtb": (8, False), "uxth": (16, False)}


def arm64_jump_table(
    window: list[Insn], read: Callable[[int, int], bytes | None], within: Callable[[int], bool], limit: int = 1024
) -> list[int] | None:
    """Targets of a gcc/clang AArch64 jump table ending at ``window[-1]`` (a ``br``), or None.

    Only a table whose bound a ``cmp`` in the window gives is read: past the bound, byte entries read as
    plausible offsets into the function, and a made-up edge is worse than a missing one."""
    br = window[-1]
    if br.mnemonic != "br" or not br.op_str.startswith("x"):
        return None
    target = br.op_str.strip()[1:]
    known: dict[str, int] = {}  # register number -> address it holds (adrp, add #imm, adr)
    loaded: dict[str, tuple[int, int, bool]] = {}  # register number -> (table, entry width, signed)
    bound: int | None = None
    plan: tuple[int, str, int, bool, int] | None = None  # (base, entry register, bits kept, signed, shift)
    for insn in window[:-1]:
        mnem, ops = insn.mnemonic, insn.op_str
        if mnem in ("adrp", "adr"):
            imms = _A64_IMM.findall(ops)
            if imms and ops.startswith("x"):
                known[ops.split(",")[0][1:]] = _imm(imms[-1])
        elif mnem == "cmp":
            m = _A64_CMP.match(ops)
            if m:
                bound = min(limit, _imm(m.group(1)) + 1)
        elif mnem == "add" and (m := _A64_ADD_IMM.match(ops)) is not None and m.group(2) in known:
            known[m.group(1)] = known[m.group(2)] + _imm(m.group(3))
        elif mnem == "add" and (m := _A64_ADD_ENTRY.match(ops)) is not None and m.group(1) == target:
            _dst, base, entry, extend, shift = m.groups()
            if base in known and entry in loaded:
                bits, signed = _A64_EXTEND.get(extend or "", (loaded[entry][1] * 8, loaded[entry][2]))
                plan = (known[base], entry, bits, signed, int(shift or 0))
        elif mnem in (*_A64_ENTRY, "ldr"):
            m = _A64_LOAD_INDEXED.match(ops)
            if m and m.group(3) in known:
                width, signed = _A64_ENTRY.get(mnem, (4 if m.group(1) == "w" else 8, False))
                loaded[m.group(2)] = (known[m.group(3)], width, signed)
    if plan is None or bound is None:
        return None
    base, entry, bits, signed, shift = plan
    table, width, _ = loaded[entry]
    raw = read(table, bound * width)
    if raw is None:
        return None
    out: list[int] = []
    for i in range(len(raw) // width):
        value = int.from_bytes(raw[i * width : (i + 1) * width], "little") & ((1 << bits) - 1)
        if signed and value >> (bits - 1):
            value -= 1 << bits
        address = (base + (value << shift)) & 0xFFFFFFFFFFFFFFFF
        if not within(address):
            break
        out.append(address)
    return out or None


def _read_table(
    read: Callable[[int, int], bytes | None],
    base: int,
    count: int,
    width: int,
    within: Callable[[int], bool],
    *,
    relative: bool,
) -> list[int] | None:
    raw = read(base, count * width)
    if raw is None:
        return None
    out: list[int] = []
    for i in range(len(raw) // width):
        chunk = raw[i * width : (i + 1) * width]
        value = int.from_bytes(chunk, "little", signed=relative)
        target = (base + value) & 0xFFFFFFFFFFFFFFFF if relative else value
        if not within(target):
            break
        out.append(target)
    return out or None
