"""The artifact-unpacker plugin kind: readers that list and stream the entries of an archive format."""

from __future__ import annotations

import abc
import errno
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Literal

import msgspec

from rea.context import CallContext
from rea.errors import ReaError
from rea.files import open_regular
from rea.records import JSONObject
from rea.records import JSONValue
from rea.target import Target

IntegrityPolicy = Literal["fail", "record-and-continue"]
EntryKind = Literal["file", "directory", "link", "special"]
if TYPE_CHECKING:
    from rea.registry import Registry

Sink = Callable[[bytes], None]

# Separates an archive's logical path from a path inside a nested archive ("lib/a.jar!/META-INF/x").
NESTED_SEPARATOR = "!/"


class UnpackerDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    version: str
    formats: tuple[str, ...]
    description: str = ""


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds every reader honours; exceeding one is a ``resource_constraint`` naming it."""

    max_entries: int = 200_000
    max_depth: int = 4
    max_total_bytes: int = 4 << 30
    max_compression_ratio: float = 1000.0
    max_header_bytes: int = 64 << 20


class DeclaredIntegrity(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A hash the archive declares for an entry's bytes (ASAR header integrity)."""

    algorithm: str
    hash: str
    block_size: int
    blocks: list[str]


class ArchiveEntry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One entry as the archive declares it; nothing here has been read or verified."""

    path: str
    kind: EntryKind
    size: int
    # Distinguishes repeated names (ZIP allows them); 0 for the first occurrence.
    ordinal: int = 0
    executable: bool = False
    unpacked: bool = False
    link: str | None = None
    integrity: DeclaredIntegrity | None = None
    compressed_size: int | None = None
    # Why the entry's name or kind is unsafe to materialize (e.g. "parent_traversal"), or None.
    problem: str | None = None


class EntryRead(msgspec.Struct, kw_only=True):
    """The outcome of streaming one entry: observed hash, and how it relates to the declared one."""

    sha256: str
    size: int
    verified: bool | None
    # The unpacker's integrity-contradiction record, its fields each unpacker's own: JSON, not one shape.
    contradiction: JSONObject | None = None


class ArchiveReader(abc.ABC):
    """An open archive: a declared listing plus verified streaming of each regular file."""

    format: str = "archive"
    # Whether ``stream`` may run in several threads at once (positional reads, no shared cursor).
    concurrent_reads: bool = False

    @abc.abstractmethod
    def entries(self) -> list[ArchiveEntry]:
        """Every entry, sorted by (path, ordinal) in code-point order."""

    @abc.abstractmethod
    def stream(
        self, entry: ArchiveEntry, sink: Sink, *, policy: IntegrityPolicy, ctx: CallContext | None = None
    ) -> EntryRead:
        """Feed the entry's bytes to ``sink``; verify declared integrity under ``policy``."""

    def limitations(self) -> list[str]:
        """Format-specific caveats about what this reader can observe."""
        return []

    def local_path(self, entry: ArchiveEntry) -> str | None:
        """The entry's own file on the local file system, when it has one (directory sources).

        A nested archive opened from its file keeps its neighbours, e.g. an ASAR's ``.asar.unpacked``.
        """
        return None

    def close(self) -> None:  # noqa: B027 - readers without resources need not override it
        """Release file descriptors and buffers."""


class Unpacker(abc.ABC):
    """Reads one archive format; chosen through the ``rea_select_unpacker`` hook."""

    descriptor: UnpackerDescriptor

    @abc.abstractmethod
    def claims(self, target: Target, head: bytes) -> bool:
        """Whether this unpacker reads ``target`` (from its identity and first bytes); no side effects."""

    @abc.abstractmethod
    def open(self, target: Target, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        """Open a reader over the archive at ``target.resolved_path``."""

    def open_bytes(self, target: Target, data: bytes, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        """Open a reader over a nested archive held in memory."""
        raise ReaError(
            "unsupported_target",
            f"{self.descriptor.id} cannot read nested {target.format} archives",
            details={"path": target.path, "format": target.format},
        )

    def open_spool(self, target: Target, fd: int, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        """Open a reader over a nested archive written to a spool file (``fd``, which the reader then owns).

        The default reads it into memory for ``open_bytes``; a format that can read in place should override."""
        with os.fdopen(fd, "rb") as fh:
            fh.seek(0)
            data = fh.read()
        return self.open_bytes(target, data, options, ctx)


# ---------------------------------------------------------------------------------------
# helpers every unpacker shares: limits, logical-path safety, and no-follow file access
# ---------------------------------------------------------------------------------------


def limit_exceeded(
    resource: str, limit: float, observed: float | None = None, *, path: str | None = None, message: str = ""
) -> ReaError:
    """The ``resource_constraint`` error for one exceeded bound."""
    details: dict[str, JSONValue] = {"resource": resource, "limit": limit}
    if observed is not None:
        details["observed"] = observed
    if path is not None:
        details["logical_path"] = path
    setting = {
        "entries": "max_entries",
        "depth": "max_depth",
        "total_bytes": "max_total_bytes",
        "compression_ratio": "max_compression_ratio",
    }.get(resource)
    hint = f" or raise {setting}" if setting else ""
    return ReaError(
        "resource_constraint",
        message or f"artifact exceeds the {resource} limit ({limit})",
        remediation=f"Inspect a smaller artifact{hint} if the input is trusted.",
        details=details,
    )


def path_problem(path: str) -> str | None:
    """Why a logical path cannot be materialized beneath a directory, or None when it can."""
    if not path:
        return "empty_name"
    if "\0" in path:
        return "nul_in_name"
    if "\\" in path:
        return "backslash_in_name"
    if path.startswith("/") or (len(path) >= 2 and path[1] == ":" and path[0].isalpha()):
        return "absolute_path"
    parts = path.split("/")
    if any(p == ".." for p in parts):
        return "parent_traversal"
    if any(p in ("", ".") for p in parts):
        return "non_canonical_path"
    return None


def link_escapes(link_path: str, target: str) -> bool:
    """Whether a link at ``link_path`` pointing at ``target`` resolves outside the archive root."""
    if target.startswith("/"):
        return True
    depth = len(link_path.split("/")) - 1
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_beneath(root_fd: int, parts: list[str], flags: int = os.O_RDONLY) -> int:
    """Open ``parts`` relative to ``root_fd`` without following any symlink on the way."""
    fd = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        # O_NONBLOCK: opening a FIFO must not wait for a writer; callers fstat and refuse what is not regular.
        out = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
        if fd_is_regular(out):
            os.set_blocking(out, True)
        return out
    finally:
        os.close(fd)


def fd_is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def is_missing(exc: OSError) -> bool:
    """ENOENT, or a path component that is not a directory (or is a symlink refused by O_NOFOLLOW)."""
    return exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


HEAD_BYTES = 4096


def read_head(target: Target) -> bytes:
    """The first bytes of a file target (empty for a directory): what unpackers decide on."""
    if target.is_directory:
        return b""
    try:
        with os.fdopen(open_regular(target.resolved_path, code="unsupported_target", what="target"), "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError as exc:
        raise ReaError(
            "target_unavailable",
            f"cannot read {target.path}: {exc.strerror}",
            details={"path": target.path, "reason": "unreadable"},
        ) from None


def select_unpacker(registry: Registry, target: Target, head: bytes | None = None) -> Unpacker:
    """Ask the registered unpackers (``rea_select_unpacker``) which one reads ``target``."""
    chosen = registry.pm.hook.rea_select_unpacker(target=target, head=read_head(target) if head is None else head)
    if chosen is None:
        formats = sorted({f for u in registry.unpackers.values() for f in u.descriptor.formats})
        raise ReaError(
            "unsupported_target",
            f"no unpacker reads this {target.format} artifact",
            remediation=f"Pass a directory or an archive in one of: {', '.join(formats)}.",
            details={"path": target.path, "format": target.format, "supported_formats": formats},
        )
    assert isinstance(chosen, Unpacker)
    return chosen
