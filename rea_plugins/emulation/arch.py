"""What the emulator needs to know of each architecture: Unicorn's mode, the calling convention, the layout.

Imported by the emulation worker only (it imports Unicorn's constants); the server side names architectures by
the strings in ``SUPPORTED``.
"""

from __future__ import annotations

from typing import NamedTuple

from unicorn import UC_ARCH_ARM
from unicorn import UC_ARCH_ARM64
from unicorn import UC_ARCH_X86
from unicorn import UC_MODE_32
from unicorn import UC_MODE_64
from unicorn import UC_MODE_ARM
from unicorn import UC_MODE_THUMB
from unicorn import arm64_const as a64
from unicorn import arm_const as a32
from unicorn import x86_const as x86


class Layout(NamedTuple):
    """Where the emulator puts what the image does not have: the caller's buffers, the heap, the stack, the
    import stubs (one 16-byte slot each, the first one the return sentinel). Chosen away from where linkers
    put images; a clash is reported, never resolved by moving the image."""

    buffers: int
    heap: int
    stack_top: int
    stubs: int
    # Thread-local storage: the thread pointer (fs base, TPIDR_EL0) points into its middle, so the x86-64 stack
    # canary at fs:0x28 and TLS variables at negative offsets read zeros instead of faulting.
    tls: int
    # Where a position-independent image (lowest address under 64 KiB) is loaded, so that page 0 stays unmapped
    # and a null pointer faults as it would in a process.
    pie_base: int


LAYOUT_64 = Layout(
    buffers=0x6000_0000_0000,
    heap=0x7000_0000_0000,
    stack_top=0x7FFE_0000_0000,
    stubs=0x7FFF_0000_0000,
    tls=0x7FFF_1000_0000,
    pie_base=0x5555_5555_0000,
)
LAYOUT_32 = Layout(
    buffers=0xB000_0000,
    heap=0xC000_0000,
    stack_top=0xEF00_0000,
    stubs=0xF000_0000,
    tls=0xF100_0000,
    pie_base=0x5655_0000,
)


class Arch(NamedTuple):
    name: str
    bits: int
    uc_arch: int
    uc_mode: int
    pc: int
    sp: int
    # The integer argument registers in order; the rest go on the stack.
    arguments: tuple[int, ...]
    result: int
    # The link register (None: the return address is pushed on the stack).
    link: int | None
    # Bytes of the stack an x86-64 callee may use below the stack pointer, skipped before arguments are placed.
    stack_slot: int
    # The general registers a range's result reports, by name.
    registers: tuple[tuple[str, int], ...]
    layout: Layout
    # The dynamic relocation type that adds the load base (RELATIVE), and whether the table carries addends.
    relative_type: int
    rela: bool
    consts: object
    # What names a register among ``consts`` (Unicorn's constants): ``prefix`` + its upper-case name.
    prefix: str
    # The register holding the thread pointer (None: not set up; x86's gs needs a descriptor table).
    thread_pointer: int | None

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


def _arch(
    name: str,
    bits: int,
    engine: tuple[int, int],
    consts: object,
    prefix: str,
    *,
    pc: str,
    sp: str,
    arguments: str,
    result: str,
    link: str | None,
    registers: str,
    relocation: tuple[int, bool],
    thread_pointer: str | None,
) -> Arch:
    """An architecture whose registers are named as in Unicorn's constants (``prefix`` + the upper-case name);
    ``engine`` is Unicorn's (architecture, mode), ``relocation`` the RELATIVE type and whether it carries addends."""

    def reg(register: str) -> int:
        return int(getattr(consts, f"{prefix}{register.upper()}"))

    return Arch(
        name=name,
        bits=bits,
        uc_arch=engine[0],
        uc_mode=engine[1],
        pc=reg(pc),
        sp=reg(sp),
        arguments=tuple(reg(r) for r in arguments.split()),
        result=reg(result),
        link=reg(link) if link is not None else None,
        stack_slot=bits // 8,  # one word on each of these
        registers=tuple((r, reg(r)) for r in registers.split()),
        layout=LAYOUT_64 if bits == 64 else LAYOUT_32,
        relative_type=relocation[0],
        rela=relocation[1],
        consts=consts,
        prefix=prefix,
        thread_pointer=reg(thread_pointer) if thread_pointer is not None else None,
    )


_X86, _ARM64, _ARM = "UC_X86_REG_", "UC_ARM64_REG_", "UC_ARM_REG_"
ARCHES: dict[str, Arch] = {
    "x86_64": _arch(
        "x86_64",
        64,
        (UC_ARCH_X86, UC_MODE_64),
        x86,
        _X86,
        pc="rip",
        sp="rsp",
        arguments="rdi rsi rdx rcx r8 r9",
        result="rax",
        link=None,
        registers="rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip eflags",
        relocation=(8, True),
        thread_pointer="fs_base",
    ),
    "x86": _arch(
        "x86",
        32,
        (UC_ARCH_X86, UC_MODE_32),
        x86,
        _X86,
        pc="eip",
        sp="esp",
        arguments="",
        result="eax",
        link=None,
        registers="eax ebx ecx edx esi edi ebp esp eip eflags",
        relocation=(8, False),
        thread_pointer=None,
    ),
    "arm64": _arch(
        "arm64",
        64,
        (UC_ARCH_ARM64, UC_MODE_ARM),
        a64,
        _ARM64,
        pc="pc",
        sp="sp",
        arguments=" ".join(f"x{i}" for i in range(8)),
        result="x0",
        link="x30",
        registers=" ".join(f"x{i}" for i in range(31)) + " sp pc nzcv",
        relocation=(1027, True),
        thread_pointer="tpidr_el0",
    ),
    "arm": _arch(
        "arm",
        32,
        (UC_ARCH_ARM, UC_MODE_ARM),
        a32,
        _ARM,
        pc="pc",
        sp="sp",
        arguments="r0 r1 r2 r3",
        result="r0",
        link="lr",
        registers=" ".join(f"r{i}" for i in range(13)) + " sp lr pc cpsr",
        relocation=(23, False),
        thread_pointer=None,
    ),
}
THUMB_MODE = UC_MODE_THUMB
UC_MODE_ARM_CODE = UC_MODE_ARM
UC_MODE_X86_32 = UC_MODE_32


def register_id(arch: Arch, name: str) -> int | None:
    """Unicorn's id of register ``name`` (any the architecture has, not only the reported ones)."""
    value = getattr(arch.consts, arch.prefix + name.upper(), None)
    return int(value) if isinstance(value, int) else None
