"""The built-in ``directory`` unpacker: a directory tree read without following any symlink."""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat

from rea.plugin import ArchiveEntry
from rea.plugin import ArchiveReader
from rea.plugin import CallContext
from rea.plugin import EntryKind
from rea.plugin import EntryRead
from rea.plugin import IntegrityPolicy
from rea.plugin import Limits
from rea.plugin import ReaError
from rea.plugin import Sink
from rea.plugin import Target
from rea.plugin import Unpacker
from rea.plugin import UnpackerDescriptor
from rea.plugin import is_missing
from rea.plugin import limit_exceeded
from rea.plugin import link_escapes
from rea.plugin import open_beneath
from rea.plugin import path_problem
from rea.plugin import shown

VERSION = "0.1.0"
READ_CHUNK = 1 << 20


def _display(name: str) -> tuple[str, bool]:
    """A JSON-safe name; undecodable bytes become visible escapes (and the entry unsafe to extract)."""
    text = shown(name)
    return text, text is name


class DirectoryReader(ArchiveReader):
    """Lists a directory tree with ``lstat`` and reads files beneath a held root descriptor."""

    format = "directory"
    concurrent_reads = True

    def __init__(self, root: str, limits: Limits, ctx: CallContext | None) -> None:
        self.root = root
        self._fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # logical path -> real name components (they differ only for undecodable names)
        self._real: dict[str, list[str]] = {}
        try:
            self._entries = self._scan(limits, ctx)
        except BaseException:
            os.close(self._fd)
            raise

    def _scan(self, limits: Limits, ctx: CallContext | None) -> list[ArchiveEntry]:
        out: list[ArchiveEntry] = []
        stack: list[tuple[str, list[str], str]] = [("", [], self.root)]
        while stack:
            logical_dir, real_dir, full_dir = stack.pop()
            if ctx is not None:
                ctx.check("listing directory")
            try:
                with os.scandir(full_dir) as it:
                    found = list(it)
            except OSError as exc:
                raise ReaError(
                    "artifact_operation_failed",
                    f"cannot list {full_dir}: {exc.strerror}",
                    details={"reason": "unreadable", "logical_path": logical_dir},
                ) from None
            for de in found:
                if len(out) >= limits.max_entries:
                    raise limit_exceeded(
                        "entries", limits.max_entries, message=f"directory has more than {limits.max_entries} entries"
                    )
                name, clean = _display(de.name)
                path = f"{logical_dir}/{name}" if logical_dir else name
                real = [*real_dir, de.name]
                self._real[path] = real
                st = de.stat(follow_symlinks=False)
                problem = None if clean else "undecodable_name"
                kind: EntryKind
                link = None
                if stat.S_ISDIR(st.st_mode):
                    kind = "directory"
                    stack.append((path, real, de.path))
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                elif stat.S_ISLNK(st.st_mode):
                    kind = "link"
                    link, _ = _display(os.readlink(de.path))
                    if link_escapes(path, link):
                        problem = problem or "link_escape"
                    else:
                        # Reported relative to the artifact root, as ASAR headers declare links.
                        link = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
                else:
                    kind = "special"
                out.append(
                    ArchiveEntry(
                        path=path,
                        kind=kind,
                        size=st.st_size if kind == "file" else 0,
                        executable=kind == "file" and bool(st.st_mode & stat.S_IXUSR),
                        link=link,
                        problem=problem or path_problem(path),
                    )
                )
        out.sort(key=lambda e: e.path)
        return out

    def entries(self) -> list[ArchiveEntry]:
        return list(self._entries)

    def stream(
        self, entry: ArchiveEntry, sink: Sink, *, policy: IntegrityPolicy, ctx: CallContext | None = None
    ) -> EntryRead:
        real = self._real.get(entry.path)
        if real is None or entry.kind != "file":
            raise ReaError(
                "invalid_request",
                f"{entry.path!r} is not a regular file of this directory",
                details={
                    "issues": [
                        {"path": "paths", "reason": "invalid_value", "message": f"no regular file {entry.path!r}"}
                    ]
                },
            )
        try:
            fd = open_beneath(self._fd, real)
        except OSError as exc:
            if is_missing(exc):
                raise ReaError(
                    "artifact_changed",
                    f"{entry.path!r} changed while it was being read",
                    details={"logical_path": entry.path, "reason": "changed"},
                ) from None
            raise ReaError(
                "access_denied",
                f"cannot read {entry.path!r}: {exc.strerror}",
                details={"logical_path": entry.path, "boundary": "filesystem-read"},
            ) from None
        digest = hashlib.sha256()
        total = 0
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ReaError(
                    "artifact_changed",
                    f"{entry.path!r} is no longer a regular file",
                    details={"logical_path": entry.path, "reason": "changed"},
                )
            while True:
                if ctx is not None:
                    ctx.check("reading directory entry")
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                digest.update(chunk)
                sink(chunk)
        finally:
            os.close(fd)
        return EntryRead(sha256=digest.hexdigest(), size=total, verified=None)

    def local_path(self, entry: ArchiveEntry) -> str | None:
        real = self._real.get(entry.path)
        return os.path.join(self.root, *real) if real is not None and entry.kind == "file" else None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class DirectoryUnpacker(Unpacker):
    """Directories on the local file system (symlinks listed, never followed)."""

    descriptor = UnpackerDescriptor(
        id="directory",
        name="Directory",
        version=VERSION,
        formats=("directory",),
        description="A local directory tree; symlinks and devices are listed only.",
    )

    def claims(self, target: Target, head: bytes) -> bool:
        return target.is_directory

    def open(self, target: Target, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        return DirectoryReader(target.resolved_path, options, ctx)
