"""Target identity: path as given, SHA-256, size, format and architecture from the header bytes."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
from typing import Any

import msgspec

from rea.context import CallContext
from rea.errors import ReaError
from rea.files import open_regular

HASH_CHUNK = 1 << 20


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """A local file (or directory) the session has identified."""

    path: str
    resolved_path: str
    sha256: str
    size: int
    format: str
    architecture: str | None = None
    is_directory: bool = False

    @property
    def name(self) -> str:
        return os.path.basename(self.resolved_path.rstrip("/")) or self.resolved_path

    def record(self) -> dict[str, Any]:
        """The target as the session tools report it."""
        return {
            "path": self.path,
            "resolved_path": self.resolved_path,
            "sha256": self.sha256,
            "size": self.size,
            "format": self.format,
            "architecture": self.architecture,
        }


class TargetView(msgspec.Struct, frozen=True, kw_only=True):
    """Another reading of a target than the one it was opened for, offered by a plugin (``rea_target_views``)."""

    # What the target also is, e.g. ``managed-assembly`` or ``android-package``.
    kind: str
    # One sentence for the agent: what this view reads.
    summary: str
    # The tools that read it.
    tools: list[str]


def read_error(path: str, exc: OSError) -> ReaError:
    """The canonical error for a failed read: ``access_denied`` or ``target_unavailable``."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ReaError(
            "access_denied",
            f"permission denied reading {path}",
            remediation="Grant read permission on the target or choose a readable file.",
            details={
                "path": path,
                "system_code": errno.errorcode.get(exc.errno or 0, "EACCES"),
                "boundary": "filesystem-read",
            },
        )
    return ReaError(
        "target_unavailable",
        f"cannot read {path}: {exc.strerror or exc}",
        remediation="Check that the path exists and is a regular file.",
        details={"path": path, "reason": "unreadable"},
    )


def sniff_format(head: bytes) -> tuple[str, str | None]:
    """Return (format, architecture) from a file's first bytes; ``("file", None)`` when unknown."""
    if head.startswith(b"\x7fELF") and len(head) >= 20:
        little = head[5] == 1
        machine = struct.unpack_from("<H" if little else ">H", head, 18)[0]
        return "elf", {3: "x86", 62: "x86_64", 40: "arm", 183: "arm64"}.get(machine)
    if head.startswith(b"MZ") and len(head) >= 0x40:
        pe_off = struct.unpack_from("<I", head, 0x3C)[0]
        if pe_off + 6 <= len(head) and head[pe_off : pe_off + 4] == b"PE\0\0":
            machine = struct.unpack_from("<H", head, pe_off + 4)[0]
            arch = {0x14C: "x86", 0x8664: "x86_64", 0x1C0: "arm", 0x1C4: "arm", 0xAA64: "arm64"}.get(machine)
            return "pe", arch
        return "dos-mz", "x86"
    if len(head) >= 8:
        magic_le = struct.unpack_from("<I", head, 0)[0]
        if magic_le in (0xFEEDFACE, 0xFEEDFACF):
            cpu = struct.unpack_from("<i", head, 4)[0]
            return "mach-o", _macho_arch(cpu)
        magic_be = struct.unpack_from(">I", head, 0)[0]
        if magic_be in (0xFEEDFACE, 0xFEEDFACF):
            cpu = struct.unpack_from(">i", head, 4)[0]
            return "mach-o", _macho_arch(cpu)
        if magic_be in (0xCAFEBABE, 0xCAFEBABF):
            nfat = struct.unpack_from(">I", head, 4)[0]
            # Java class files share the magic; their minor/major version reads as a large count.
            if 0 < nfat < 32:
                return "mach-o-universal", None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip", None
    if len(head) >= 16:
        a, b, c, d = struct.unpack_from("<IIII", head, 0)
        if a == 4 and b == c + 4 and d + 4 <= c:
            return "asar", None
    return "file", None


def _macho_arch(cpu: int) -> str | None:
    return {7: "x86", 0x01000007: "x86_64", 12: "arm", 0x0100000C: "arm64"}.get(cpu)


def identify(path: str, ctx: CallContext | None = None, *, allow_directory: bool = False) -> Target:
    """Hash and identify ``path``; typed errors for missing, unreadable or unsuitable paths."""
    if not isinstance(path, str) or not path:
        raise ReaError(
            "invalid_request",
            "path must be a non-empty string",
            details={"issues": [{"path": "path", "reason": "invalid_value", "message": "empty path"}]},
        )
    resolved = os.path.realpath(os.path.expanduser(path))
    try:
        st = os.stat(resolved)
    except OSError as exc:
        raise read_error(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        if not allow_directory:
            raise ReaError(
                "unsupported_target",
                f"{path} is a directory, not a binary",
                remediation="Pass a file; use inspect_artifact or analyze_javascript_application for directories.",
                details={"path": path, "format": "directory"},
            )
        return Target(
            path=path,
            resolved_path=resolved,
            sha256=_hash_directory(resolved, ctx),
            size=0,
            format="directory",
            is_directory=True,
        )
    if not stat.S_ISREG(st.st_mode):
        raise ReaError(
            "unsupported_target", f"{path} is not a regular file", details={"path": path, "format": "special"}
        )
    digest = hashlib.sha256()
    head = b""
    size = 0
    try:
        # Opened without blocking and fstat-checked: a FIFO swapped in after the stat above is refused, not waited on.
        with os.fdopen(open_regular(resolved, code="unsupported_target", what="target"), "rb") as fh:
            while True:
                if ctx is not None:
                    ctx.check("hashing target")
                chunk = fh.read(HASH_CHUNK)
                if not chunk:
                    break
                if not head:
                    head = chunk[:4096]
                digest.update(chunk)
                size += len(chunk)
    except OSError as exc:
        raise read_error(path, exc) from None
    fmt, arch = sniff_format(head)
    return Target(
        path=path, resolved_path=resolved, sha256=digest.hexdigest(), size=size, format=fmt, architecture=arch
    )


def _hash_directory(root: str, ctx: CallContext | None) -> str:
    """A digest over sorted relative paths and their kinds and sizes (cheap identity, not content)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        if ctx is not None:
            ctx.check("listing directory")
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            digest.update(f"{rel}\0{st.st_size}\0{stat.S_IFMT(st.st_mode)}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
