"""The ``asar`` unpacker: adapts ``AsarArchive`` to the kernel's engine-neutral reader interface."""

from __future__ import annotations

from rea.plugin import ArchiveEntry
from rea.plugin import ArchiveReader
from rea.plugin import CallContext
from rea.plugin import EntryRead
from rea.plugin import IntegrityPolicy
from rea.plugin import Limits
from rea.plugin import Sink
from rea.plugin import Target
from rea.plugin import Unpacker
from rea.plugin import UnpackerDescriptor
from rea.plugin import verify_unchanged
from rea_plugins.asar.reader import AsarArchive
from rea_plugins.asar.reader import AsarEntry

VERSION = "0.1.0"


def to_archive_entry(e: AsarEntry) -> ArchiveEntry:
    return ArchiveEntry(
        path=e.path,
        kind=e.kind,
        size=e.size,
        executable=e.executable,
        unpacked=e.unpacked,
        link=e.link,
        integrity=e.integrity,
        problem=e.problem,
    )


class AsarReader(ArchiveReader):
    """An ASAR archive seen through the generic reader interface."""

    format = "asar"
    concurrent_reads = True

    def __init__(self, archive: AsarArchive, pinned: Target | None = None) -> None:
        self.archive = archive
        self._entries = [to_archive_entry(e) for e in archive.entries()]
        # The identified file the archive reads: each entry is read between two checks that it still holds the
        # bytes that were hashed (rewritten in place mid-extraction is artifact_changed, never a mix).
        self._pinned = pinned if archive.fd is not None else None

    def entries(self) -> list[ArchiveEntry]:
        return list(self._entries)

    def stream(
        self, entry: ArchiveEntry, sink: Sink, *, policy: IntegrityPolicy, ctx: CallContext | None = None
    ) -> EntryRead:
        self._verify_pinned()
        read = self.archive.stream(self.archive.entry(entry.path), sink, policy=policy, ctx=ctx)
        self._verify_pinned()
        return read

    def _verify_pinned(self) -> None:
        if self._pinned is not None and self.archive.fd is not None:
            verify_unchanged(self._pinned, self.archive.fd)

    def limitations(self) -> list[str]:
        if self.archive.companion is None and any(e.unpacked and e.kind == "file" for e in self._entries):
            return ["Unpacked entries of a nested ASAR have no .asar.unpacked companion and cannot be read."]
        return []

    def close(self) -> None:
        self.archive.close()


class AsarUnpacker(Unpacker):
    """Reads Electron ASAR archives, verifying header-declared SHA-256 integrity."""

    descriptor = UnpackerDescriptor(
        id="asar",
        name="Electron ASAR",
        version=VERSION,
        formats=("asar",),
        description="Electron ASAR archives, with header integrity and .asar.unpacked companions.",
    )

    def claims(self, target: Target, head: bytes) -> bool:
        return not target.is_directory and target.format == "asar"

    def open(self, target: Target, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        arc = AsarArchive.open(
            target.resolved_path, ctx, max_entries=options.max_entries, max_header_bytes=options.max_header_bytes
        )
        reader = AsarReader(arc, pinned=target)
        try:
            # The file opened is the one identified (not one renamed over it since, nor rewritten).
            reader._verify_pinned()
        except BaseException:
            reader.close()
            raise
        return reader

    def open_bytes(self, target: Target, data: bytes, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        arc = AsarArchive.from_bytes(
            data, target.path, ctx, max_entries=options.max_entries, max_header_bytes=options.max_header_bytes
        )
        return AsarReader(arc)

    def open_spool(self, target: Target, fd: int, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        # Positional reads from the spool: a nested ASAR of hundreds of MiB is never held in memory.
        arc = AsarArchive.from_spool(
            fd, target.path, ctx, max_entries=options.max_entries, max_header_bytes=options.max_header_bytes
        )
        return AsarReader(arc)


UNPACKER = AsarUnpacker()
__all__ = ["UNPACKER", "AsarReader", "AsarUnpacker"]
