"""Calling conventions the observer reads arguments and return values by; the host decides what can run."""

from __future__ import annotations

import platform
import sys

import msgspec


class Abi(msgspec.Struct, frozen=True, kw_only=True):
    """Where one architecture's calls keep their integer arguments, return value and return address."""

    architecture: str
    name: str
    argument_registers: tuple[str, ...]
    return_register: str
    stack_pointer: str
    # "stack": the return address is the word at the stack pointer on entry; otherwise the register named.
    return_address: str
    # How far the stack pointer moves between entry and the instruction after the call.
    sp_delta_on_return: int


ABIS: dict[str, Abi] = {
    "x86_64": Abi(
        architecture="x86_64",
        name="System V AMD64",
        argument_registers=("rdi", "rsi", "rdx", "rcx", "r8", "r9"),
        return_register="rax",
        stack_pointer="rsp",
        return_address="stack",
        sp_delta_on_return=8,
    ),
    "arm64": Abi(
        architecture="arm64",
        name="AAPCS64",
        argument_registers=tuple(f"x{i}" for i in range(8)),
        return_register="x0",
        stack_pointer="sp",
        return_address="lr",
        sp_delta_on_return=0,
    ),
}
# The object format a host's debugger launches natively.
HOST_FORMATS = {"linux": "elf", "darwin": "mach-o"}
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


def host_architecture() -> str | None:
    return _MACHINES.get(platform.machine().lower())


def host_format() -> str | None:
    return HOST_FORMATS.get(
        "darwin" if sys.platform == "darwin" else "linux" if sys.platform.startswith("linux") else sys.platform
    )


def host_mismatch(fmt: str, architecture: str | None) -> str | None:
    """Why a target of ``fmt``/``architecture`` cannot be launched on this host (None when it can)."""
    if architecture not in ABIS:
        return f"no calling convention is defined for {architecture or 'an unknown architecture'}"
    if fmt != host_format():
        return f"this host launches {host_format() or 'no'} programs natively, not {fmt}"
    if architecture != host_architecture():
        return f"this host runs {host_architecture() or platform.machine()} code, not {architecture}"
    return None


class Emulator(msgspec.Struct, frozen=True, kw_only=True):
    """How a Linux program of another architecture runs here: under qemu-user, whose gdb stub LLDB drives
    (LLDB's qemu-user platform starts the emulator as its child, on a private Unix socket: no network)."""

    command: str
    # The architecture as LLDB's qemu-user platform names it.
    lldb_architecture: str
    # Where that architecture's dynamic loader and libraries are (Debian's cross packages), first found wins.
    sysroots: tuple[str, ...]


EMULATORS: dict[str, Emulator] = {
    "arm64": Emulator(command="qemu-aarch64", lldb_architecture="aarch64", sysroots=("/usr/aarch64-linux-gnu",)),
    "x86_64": Emulator(command="qemu-x86_64", lldb_architecture="x86_64", sysroots=("/usr/x86_64-linux-gnu",)),
}
EMULATOR_PACKAGE = "qemu-user"


def emulator_for(fmt: str, architecture: str | None) -> Emulator | None:
    """The emulator a program of ``fmt``/``architecture`` needs on this host: a Linux ELF of a calling convention
    rea knows, for another architecture than the host's (None: it runs natively, or no emulator applies)."""
    if fmt != "elf" or host_format() != "elf" or architecture not in ABIS or architecture == host_architecture():
        return None
    return EMULATORS.get(architecture or "")
