"""What a file that is no archive is, from its first bytes, and the tools that read it (inspect_artifact's views).

One table: each kind's test on the head (and, for a Go binary, a bounded search for its build-information
magic), a sentence for the agent and the tools. Only registered tools are named; a kind none of whose tools is
registered is not offered.
"""

from __future__ import annotations

import re
import struct

from rea.plugin import Target
from rea.plugin import TargetView
from rea.plugin import open_regular

# Firmware containers and file systems unblob extracts, by their magic at a fixed offset.
_FIRMWARE_MAGIC = (
    (0, b"hsqs"),  # squashfs, little-endian
    (0, b"sqsh"),  # squashfs, big-endian
    (0, b"\x27\x05\x19\x56"),  # U-Boot legacy image
    (0, b"HDR0"),  # Broadcom TRX
    (0, b"UBI#"),  # UBI erase block
    (0, b"\x45\x3d\xcd\x28"),  # cramfs
    (0, b"\xd0\x0d\xfe\xed"),  # flattened device tree / FIT image
    (0, b"ANDROID!"),  # Android boot image
    (0, b"070701"),  # cpio (new ASCII)
    (0x438, b"\x53\xef"),  # ext2/3/4 superblock magic
)
_HEX_CODE = re.compile(rb"\s*(?:0x)?6080604052[0-9a-fA-F]*\s*")
# PUSH1 0x80 PUSH1 0x40 MSTORE: how code solc (and most compilers) emit begins.
_EVM_PROLOGUE = b"\x60\x80\x60\x40\x52"
_GO_MAGIC = b"\xff Go buildinf:"
# How far into an executable rea looks for Go's build information (it sits in a data section).
_GO_SCAN_BYTES = 64 << 20
_CHUNK = 1 << 20
_NATIVE = frozenset({"elf", "pe", "mach-o", "mach-o-universal"})

_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "firmware-image": (
        "A firmware image or file system image: its regions (file systems, compressed streams, executables) and "
        "their extraction with unblob.",
        ("inspect_firmware_regions", "extract_firmware"),
    ),
    "evm-bytecode": (
        "EVM (Ethereum) contract bytecode: function selectors, argument types, mutability, storage layout.",
        ("inspect_evm_interface",),
    ),
    "sqlite-database": (
        "A SQLite database: schema, row counts and rows, its WAL included, read from a private copy.",
        ("inspect_sqlite_database",),
    ),
    "elf-core": (
        "An ELF core dump: each thread's registers and signal, the faulting address, the mapped files.",
        ("inspect_recorded_crash",),
    ),
    "go-binary": (
        "A Go program: its build information (Go version, module, dependencies) and pclntab function table.",
        ("inspect_go_binary", "open_binary"),
    ),
    "wasm-module": (
        "A WebAssembly module: imports, exports, functions, memories and custom sections.",
        ("inspect_wasm_artifact",),
    ),
    "native-binary": (
        "A native executable or library: open it with open_binary for procedures, strings and decompilation.",
        ("open_binary",),
    ),
}


def _firmware(head: bytes) -> bool:
    return any(head[at : at + len(magic)] == magic for at, magic in _FIRMWARE_MAGIC)


def _evm(head: bytes) -> bool:
    if head.startswith(_EVM_PROLOGUE):
        return True
    return _HEX_CODE.fullmatch(head) is not None


def _go(target: Target) -> bool:
    """Whether Go's build-information magic is within the first ``_GO_SCAN_BYTES`` of the file."""
    try:
        fd = open_regular(target.resolved_path, code="unsupported_target")
    except (OSError, ValueError):
        return False
    tail = b""
    with open(fd, "rb", closefd=True) as fh:
        read = 0
        while read < _GO_SCAN_BYTES:
            chunk = fh.read(_CHUNK)
            if not chunk:
                return False
            if _GO_MAGIC in tail + chunk:
                return True
            tail = chunk[-len(_GO_MAGIC) :]
            read += len(chunk)
    return False


def recognize(target: Target, head: bytes) -> list[str]:
    """The kinds ``target`` is (most specific first); empty when none is known."""
    if head.startswith(b"SQLite format 3\x00"):
        return ["sqlite-database"]
    if head.startswith(b"\x00asm"):
        return ["wasm-module"]
    if target.format == "elf" and len(head) >= 18:
        e_type = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 16)[0]
        if e_type == 4:  # ET_CORE
            return ["elf-core"]
    if target.format in _NATIVE:
        return ["go-binary", "native-binary"] if _go(target) else ["native-binary"]
    if _firmware(head):
        return ["firmware-image"]
    if _evm(head):
        return ["evm-bytecode"]
    return []


def views(target: Target, head: bytes, registered: set[str] | frozenset[str]) -> list[TargetView]:
    """The views of what ``target`` is, naming only ``registered`` tools."""
    out = []
    for kind in recognize(target, head):
        summary, tools = _KINDS[kind]
        named = [t for t in tools if t in registered]
        if named:
            out.append(TargetView(kind=kind, summary=summary, tools=named))
    return out
