"""Target identity: path as given, SHA-256, size, format and architecture from the header bytes."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
import threading
from collections import OrderedDict
from typing import Any

import msgspec

from rea.context import CallContext
from rea.errors import ReaError
from rea.files import open_regular
from rea.fsnames import shown
from rea.records import JSONObject
from rea.records import JSONValue

HASH_CHUNK = 1 << 20
REOPEN = "Open the target again with open_binary: its bytes are no longer the ones rea hashed."


class FileStamp(msgspec.Struct, frozen=True):
    """What identifies a file's bytes without reading them: a write moves mtime/ctime, a replace moves the inode."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """A local file (or directory) the session has identified."""

    path: str
    resolved_path: str
    sha256: str
    size: int
    format: str
    architecture: str | None = None
    is_directory: bool = False
    # The file's identity when it was hashed (None for a folder, or a member read out of an archive).
    stamp: FileStamp | None = None

    @property
    def name(self) -> str:
        """The file name as shown (a name's bytes that are not UTF-8 escaped: JSON carries every answer)."""
        return shown(os.path.basename(self.resolved_path.rstrip("/")) or self.resolved_path)

    def record(self) -> JSONObject:
        """The target as the session tools report it."""
        return {
            "path": shown(self.path),
            "resolved_path": shown(self.resolved_path),
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
    head = b""
    try:
        # Opened without blocking and fstat-checked: a FIFO swapped in after the stat above is refused, not waited on.
        with os.fdopen(open_regular(resolved, code="unsupported_target", what="target"), "rb") as fh:
            before = FileStamp.of(os.fstat(fh.fileno()))
            sha256, size, head = _hash_file(fh, ctx)
            after = FileStamp.of(os.fstat(fh.fileno()))
    except OSError as exc:
        raise read_error(path, exc) from None
    if after != before or size != after.size:
        # Written while it was hashed: the digest names no version of the file.
        raise changed(path, "the file changed while rea hashed it", before, after)
    fmt, arch = sniff_format(head)
    return Target(
        path=path,
        resolved_path=resolved,
        sha256=sha256,
        size=size,
        format=fmt,
        architecture=arch,
        stamp=after,
    )


def _hash_file(fh: Any, ctx: CallContext | None) -> tuple[str, int, bytes]:
    """(SHA-256, bytes read, the first 4 KB) of an open file, from where it stands."""
    digest = hashlib.sha256()
    head = b""
    size = 0
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
    return digest.hexdigest(), size, head


def changed(path: str, reason: str, opened: FileStamp | None, now: FileStamp | None) -> ReaError:
    """The typed answer for a target whose bytes are not the ones hashed (``artifact_changed``: reopen it)."""
    details: dict[str, JSONValue] = {"path": shown(path), "reason": reason}
    if opened is not None:
        details["opened_size"] = opened.size
    if now is not None:
        details["size"] = now.size
    return ReaError(
        "artifact_changed",
        f"{shown(path)}: {reason}; rea does not serve it under the old hash",
        remediation=REOPEN,
        details=details,
    )


# Stamps a re-hash proved still hold the hashed bytes (a touch, a copy of the same bytes over it), so the next check
# is a stat again rather than another full read. Bounded: an entry is only a saved re-hash.
_CONFIRMED: OrderedDict[tuple[str, str], FileStamp] = OrderedDict()
_CONFIRMED_MAX = 256
_CONFIRMED_LOCK = threading.Lock()


def verify_unchanged(target: Target, fd: int | None = None, ctx: CallContext | None = None) -> None:
    """Raise ``artifact_changed`` unless the target's file still holds the bytes it was hashed from.

    The stamp (device, inode, size, mtime, ctime) decides when it is unchanged; when only the times or the inode
    moved and the size is the same, the file is hashed again and kept if the digest is. ``fd``: check the file an
    open descriptor reads (a reader that opened it) rather than what the path names now.
    """
    opened = target.stamp
    if opened is None or target.is_directory:
        return
    try:
        st = os.fstat(fd) if fd is not None else os.stat(target.resolved_path)
    except OSError:
        raise changed(target.path, "the file is gone", opened, None) from None
    if not stat.S_ISREG(st.st_mode):
        raise changed(target.path, "the path no longer names a regular file", opened, None)
    now = FileStamp.of(st)
    key = (target.resolved_path, target.sha256)
    with _CONFIRMED_LOCK:
        known = _CONFIRMED.get(key)
    if now in (opened, known):
        return
    if now.size != opened.size:
        raise changed(target.path, f"its size changed ({opened.size} -> {now.size} bytes)", opened, now)
    try:
        with os.fdopen(
            os.dup(fd)
            if fd is not None
            else open_regular(target.resolved_path, code="artifact_changed", what="target"),
            "rb",
        ) as fh:
            fh.seek(0)
            sha256, size, _ = _hash_file(fh, ctx)
            # Hashed in place: a write during the re-hash leaves a digest of no version.
            if FileStamp.of(os.fstat(fh.fileno())) != now:
                raise changed(target.path, "the file changed while rea checked it", opened, now)
    except OSError:
        raise changed(target.path, "the file can no longer be read", opened, now) from None
    if sha256 != target.sha256 or size != opened.size:
        raise changed(target.path, "its bytes changed (a different SHA-256)", opened, now)
    with _CONFIRMED_LOCK:
        _CONFIRMED[key] = now
        _CONFIRMED.move_to_end(key)
        while len(_CONFIRMED) > _CONFIRMED_MAX:
            _CONFIRMED.popitem(last=False)


def read_pinned(target: Target, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` of the target, known to be the hashed bytes, else ``artifact_changed``.

    One descriptor: its file is checked against the stamp before the read, and again after it, so a write that
    lands while reading (which moves mtime/ctime) is caught rather than returned under the old hash.
    """
    try:
        fd = open_regular(target.resolved_path, code="artifact_changed", what="target")
    except FileNotFoundError:
        raise changed(target.path, "the file is gone", target.stamp, None) from None
    except OSError as exc:
        raise read_error(target.path, exc) from None
    try:
        verify_unchanged(target, fd)
        try:
            data = os.pread(fd, length, offset)
        except OSError as exc:
            raise read_error(target.path, exc) from None
        verify_unchanged(target, fd)
        return data
    finally:
        os.close(fd)


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


def pinned_copy(path: str, sha256: str, directory: str, max_bytes: int) -> str:
    """A copy of ``path`` in ``directory`` (an engine worker's private one) holding exactly the bytes whose SHA-256
    is ``sha256``, under the same file name (``target`` for one that is not UTF-8); ``path`` itself when it is
    larger than ``max_bytes``.

    For an engine that maps or lazily re-reads the file it was given: truncating a mapped file kills the reader
    with SIGBUS, and a rewrite would be read under the old hash. The copy is checked as it is made; a file that
    no longer hashes to ``sha256`` is ``artifact_changed``.
    """
    with os.fdopen(open_regular(path, code="artifact_changed", what="target"), "rb") as src:
        if os.fstat(src.fileno()).st_size > max_bytes or not sha256:
            return path
        name = os.path.basename(path)
        # A name that is not UTF-8 would come back inside an engine's JSON output, which cannot carry it.
        out = os.path.join(directory, name if name and shown(name) is name else "target")
        digest = hashlib.sha256()
        with open(out, "wb") as dst:
            while chunk := src.read(HASH_CHUNK):
                digest.update(chunk)
                dst.write(chunk)
    if digest.hexdigest() != sha256:
        os.unlink(out)
        raise changed(path, "its bytes changed (a different SHA-256)", None, None)
    return out
