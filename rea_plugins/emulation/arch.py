"""What the emulator needs to know of each architecture: Unicorn's mode, the calling convention, the layout.

Imported by the emulation worker only (it imports Unicorn's constants); the server side names architectures by
the strings in ``SUPPORTED``.
"""

from __future__ import annotations

from typing import NamedTuple

from unicorn import UC_ARCH_ARM, UC_ARCH_ARM64, UC_ARCH_X86, UC_MODE_32, UC_MODE_64, UC_MODE_ARM, UC_MODE_THUMB
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
    # The register holding the thread pointer (None: not set up; x86's gs needs a descriptor table).
    thread_pointer: int | None

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


def _named(module: object, prefix: str, names: list[str]) -> tuple[tuple[str, int], ...]:
    return tuple((n, int(getattr(module, f"{prefix}{n.upper()}"))) for n in names)


ARCHES: dict[str, Arch] = {
    "x86_64": Arch(
        name="x86_64",
        bits=64,
        uc_arch=UC_ARCH_X86,
        uc_mode=UC_MODE_64,
        pc=x86.UC_X86_REG_RIP,
        sp=x86.UC_X86_REG_RSP,
        arguments=(
            x86.UC_X86_REG_RDI,
            x86.UC_X86_REG_RSI,
            x86.UC_X86_REG_RDX,
            x86.UC_X86_REG_RCX,
            x86.UC_X86_REG_R8,
            x86.UC_X86_REG_R9,
        ),
        result=x86.UC_X86_REG_RAX,
        link=None,
        stack_slot=8,
        registers=_named(
            x86,
            "UC_X86_REG_",
            [
                "rax",
                "rbx",
                "rcx",
                "rdx",
                "rsi",
                "rdi",
                "rbp",
                "rsp",
                "r8",
                "r9",
                "r10",
                "r11",
                "r12",
                "r13",
                "r14",
                "r15",
                "rip",
                "eflags",
            ],
        ),
        layout=LAYOUT_64,
        relative_type=8,
        rela=True,
        consts=x86,
        thread_pointer=x86.UC_X86_REG_FS_BASE,
    ),
    "x86": Arch(
        name="x86",
        bits=32,
        uc_arch=UC_ARCH_X86,
        uc_mode=UC_MODE_32,
        pc=x86.UC_X86_REG_EIP,
        sp=x86.UC_X86_REG_ESP,
        arguments=(),
        result=x86.UC_X86_REG_EAX,
        link=None,
        stack_slot=4,
        registers=_named(x86, "UC_X86_REG_", ["eax", "ebx", "ecx", "edx", "esi", "edi", "ebp", "esp", "eip", "eflags"]),
        layout=LAYOUT_32,
        relative_type=8,
        rela=False,
        consts=x86,
        thread_pointer=None,
    ),
    "arm64": Arch(
        name="arm64",
        bits=64,
        uc_arch=UC_ARCH_ARM64,
        uc_mode=UC_MODE_ARM,
        pc=a64.UC_ARM64_REG_PC,
        sp=a64.UC_ARM64_REG_SP,
        arguments=tuple(getattr(a64, f"UC_ARM64_REG_X{i}") for i in range(8)),
        result=a64.UC_ARM64_REG_X0,
        link=a64.UC_ARM64_REG_X30,
        stack_slot=8,
        registers=_named(a64, "UC_ARM64_REG_", [f"x{i}" for i in range(31)] + ["sp", "pc", "nzcv"]),
        layout=LAYOUT_64,
        relative_type=1027,
        rela=True,
        consts=a64,
        thread_pointer=a64.UC_ARM64_REG_TPIDR_EL0,
    ),
    "arm": Arch(
        name="arm",
        bits=32,
        uc_arch=UC_ARCH_ARM,
        uc_mode=UC_MODE_ARM,
        pc=a32.UC_ARM_REG_PC,
        sp=a32.UC_ARM_REG_SP,
        arguments=(a32.UC_ARM_REG_R0, a32.UC_ARM_REG_R1, a32.UC_ARM_REG_R2, a32.UC_ARM_REG_R3),
        result=a32.UC_ARM_REG_R0,
        link=a32.UC_ARM_REG_LR,
        stack_slot=4,
        registers=_named(a32, "UC_ARM_REG_", [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "cpsr"]),
        layout=LAYOUT_32,
        relative_type=23,
        rela=False,
        consts=a32,
        thread_pointer=None,
    ),
}
THUMB_MODE = UC_MODE_THUMB
UC_MODE_ARM_CODE = UC_MODE_ARM
UC_MODE_X86_32 = UC_MODE_32


def register_id(arch: Arch, name: str) -> int | None:
    """Unicorn's id of register ``name`` (any the architecture has, not only the reported ones)."""
    prefix = {"x86_64": "UC_X86_REG_", "x86": "UC_X86_REG_", "arm64": "UC_ARM64_REG_", "arm": "UC_ARM_REG_"}
    value = getattr(arch.consts, prefix[arch.name] + name.upper(), None)
    return int(value) if isinstance(value, int) else None
