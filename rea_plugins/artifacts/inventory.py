"""Deterministic, bounded artifact inventory: every entry hashed, nested archives expanded within limits."""

from __future__ import annotations

import os
import tempfile
from typing import IO
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import HEAD_BYTES
from rea.plugin import NESTED_SEPARATOR
from rea.plugin import ArchiveEntry
from rea.plugin import ArchiveReader
from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import IntegrityPolicy
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import Limits
from rea.plugin import ReaError
from rea.plugin import Registry
from rea.plugin import Target
from rea.plugin import Unpacker
from rea.plugin import arg_float
from rea.plugin import arg_int
from rea.plugin import canonical_digest
from rea.plugin import identify
from rea.plugin import limit_exceeded
from rea.plugin import select_unpacker
from rea.plugin import sniff_format
from rea_plugins.artifacts.shapes import ArtifactEntry
from rea_plugins.artifacts.shapes import NestedArchive

NESTED_FORMATS = frozenset({"zip", "asar"})
# Errors that describe the whole request, not one nested member: they always propagate.
_FATAL = frozenset({"resource_constraint", "cancelled", "timeout"})


def limits_from(args: Arguments) -> Limits:
    """The limits a request asked for, defaults elsewhere."""
    base = Limits()
    return Limits(
        max_entries=arg_int(args, "max_entries", base.max_entries),
        max_depth=arg_int(args, "max_depth", base.max_depth),
        max_total_bytes=arg_int(args, "max_total_bytes", base.max_total_bytes),
        max_compression_ratio=float(arg_float(args, "max_compression_ratio", base.max_compression_ratio)),
        max_header_bytes=base.max_header_bytes,
    )


def limits_record(limits: Limits) -> dict[str, int | float]:
    ratio = limits.max_compression_ratio
    # Integral ratios are recorded as integers: canonical JSON of floats takes the slow reference path.
    return {
        "max_entries": limits.max_entries,
        "max_depth": limits.max_depth,
        "max_total_bytes": limits.max_total_bytes,
        "max_compression_ratio": int(ratio) if ratio.is_integer() else ratio,
    }


def open_artifact(
    registry: Registry, path: str, limits: Limits, ctx: CallContext
) -> tuple[Target, Unpacker, ArchiveReader]:
    """Identify ``path`` and open it with the unpacker the registry selects."""
    target = identify(path, ctx, allow_directory=True)
    unpacker = select_unpacker(registry, target)
    reader = unpacker.open(target, limits, ctx)
    return target, unpacker, reader


class _Budget:
    """Counts bytes read across every nesting level against ``max_total_bytes``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def reserve(self, path: str, size: int) -> None:
        if self.used + size > self.limit:
            raise limit_exceeded(
                "total_bytes",
                self.limit,
                self.used + size,
                path=path,
                message=f"reading {path!r} would exceed max_total_bytes ({self.limit})",
            )

    def take(self, n: int, path: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise limit_exceeded(
                "total_bytes",
                self.limit,
                self.used,
                path=path,
                message=f"reading {path!r} exceeded max_total_bytes ({self.limit})",
            )


class _Collector:
    """Sink that keeps an entry's head, and all of it when the head says it is a nested archive.

    A nested archive is kept in an anonymous temporary file, not in memory: it may be gigabytes within limits.
    """

    def __init__(self, budget: _Budget, path: str, expand: bool) -> None:
        self.budget = budget
        self.path = path
        self.expand = expand
        self.head = b""
        self.keep: IO[bytes] | None = None

    def __call__(self, chunk: bytes) -> None:
        self.budget.take(len(chunk), self.path)
        if not self.head:
            self.head = chunk[:HEAD_BYTES]
            # Cheap prefilter (ZIP "PK", ASAR's leading 4) before the full sniff.
            if self.expand and self.head[:1] in (b"P", b"\x04") and sniff_format(self.head)[0] in NESTED_FORMATS:
                self.keep = tempfile.TemporaryFile()  # noqa: SIM115 - handed to _nested, which closes it
        if self.keep is not None:
            self.keep.write(chunk)


class Inventory:
    """One bounded walk over an opened artifact and the archives nested in it."""

    def __init__(self, registry: Registry, limits: Limits, policy: IntegrityPolicy, ctx: CallContext) -> None:
        self.registry = registry
        self.limits = limits
        self.policy = policy
        self.ctx = ctx
        self.budget = _Budget(limits.max_total_bytes)
        self.entries: list[ArtifactEntry] = []
        # The unpacker's contradiction records (JSON the kernel's EntryRead carries), each with its logical path.
        self.contradictions: list[JSONObject] = []
        self.partial_reasons: list[str] = []
        self.limitations: list[str] = []

    def run(self, reader: ArchiveReader) -> None:
        self._walk(reader, "", 0)
        self.entries.sort(key=lambda e: (e.path, e.ordinal))
        self.contradictions.sort(key=lambda c: (str(c["logical_path"]), _int(c.get("ordinal", 0))))

    def _walk(self, reader: ArchiveReader, prefix: str, depth: int) -> None:
        self.limitations.extend(f"{prefix[:-2] or 'artifact'}: {x}" if prefix else x for x in reader.limitations())
        for entry in reader.entries():
            self.ctx.check("inventory")
            if len(self.entries) >= self.limits.max_entries:
                raise limit_exceeded(
                    "entries",
                    self.limits.max_entries,
                    message=f"artifact has more than {self.limits.max_entries} entries (nested archives included)",
                )
            self.entries.append(_entry_record(entry, prefix + entry.path, depth))
            if entry.kind == "file":
                self._read(reader, entry, len(self.entries) - 1, depth)
            if len(self.entries) % 1000 == 0:
                self.ctx.progress(f"inventory: {len(self.entries)} entries")

    def _update(self, at: int, **changes: Any) -> None:
        """Set fields of the entry at ``at`` (a Record: replaced, not changed)."""
        self.entries[at] = msgspec.structs.replace(self.entries[at], **changes)

    def _read(self, reader: ArchiveReader, entry: ArchiveEntry, at: int, depth: int) -> None:
        path = self.entries[at].path
        self.budget.reserve(path, entry.size)
        sink = _Collector(self.budget, path, expand=True)
        try:
            self._stream(reader, entry, at, depth, sink)
        finally:
            if sink.keep is not None:
                sink.keep.close()

    def _stream(self, reader: ArchiveReader, entry: ArchiveEntry, at: int, depth: int, sink: _Collector) -> None:
        path = self.entries[at].path
        try:
            out = reader.stream(entry, sink, policy=self.policy, ctx=self.ctx)
        except ReaError as exc:
            if exc.code == "target_unavailable" or exc.details.get("reason") == "encrypted":
                # Only this entry's bytes are out of reach: record that, keep going, and say so.
                self._update(at, integrity="unavailable", unavailable_reason=exc.message)
                self.partial_reasons.append(f"{path}: {exc.message}")
                return
            if "logical_path" in exc.details and exc.details["logical_path"] != path:
                exc.details["logical_path"] = path
            raise
        self._update(at, sha256=out.sha256, size=out.size)
        if out.contradiction is not None:
            self._update(at, integrity="contradicted")
            c = dict(out.contradiction)
            c["logical_path"] = path
            if entry.ordinal:
                c["ordinal"] = entry.ordinal
            self.contradictions.append(c)
            self.partial_reasons.append(f"{path}: integrity contradicted; bytes quarantined from expansion")
            return
        self._update(at, integrity=_VERIFIED[out.verified])
        if sink.keep is not None:
            self._nested(sink.keep, sink.head, out.sha256, at, depth, reader.local_path(entry))

    def _nested(self, spool: IO[bytes], head: bytes, sha256: str, at: int, depth: int, local: str | None) -> None:
        path = self.entries[at].path
        fmt, arch = sniff_format(head)
        size = spool.seek(0, 2)
        if depth + 1 > self.limits.max_depth:
            # Listed with its digest, not opened: the caller bounded the descent (0: none), and says so.
            self._update(at, nested_archive=NestedArchive(format=fmt, status="not-expanded"))
            self.partial_reasons.append(
                f"{path}: nested {fmt} archive not expanded (max_depth {self.limits.max_depth})"
            )
            return
        inner = Target(path=path, resolved_path=local or "", sha256=sha256, size=size, format=fmt, architecture=arch)
        # The nested listing counts against what is left of max_entries, so it is refused while it is read.
        limits = msgspec.structs.replace(self.limits, max_entries=max(0, self.limits.max_entries - len(self.entries)))
        try:
            unpacker = select_unpacker(self.registry, inner, head)
            # From its own file when it has one, so an ASAR in a directory finds its .asar.unpacked.
            if local:
                reader = unpacker.open(inner, limits, self.ctx)
            else:
                # From the spool file, in place where the format can (the reader owns a duplicate of it).
                reader = unpacker.open_spool(inner, os.dup(spool.fileno()), limits, self.ctx)
        except ReaError as exc:
            if exc.category in _FATAL:
                raise
            self._update(
                at,
                nested_archive=NestedArchive(format=fmt, status="unreadable", error_code=exc.code, error=exc.message),
            )
            self.partial_reasons.append(f"{path}: nested {fmt} archive unreadable ({exc.code})")
            return
        try:
            before = len(self.entries)
            self._walk(reader, path + NESTED_SEPARATOR, depth + 1)
            self._update(
                at,
                nested_archive=NestedArchive(
                    format=reader.format, status="expanded", entry_count=len(self.entries) - before
                ),
            )
        finally:
            reader.close()

    # -- result ----------------------------------------------------------------------------

    def totals(self) -> dict[str, int]:
        counts = {"files": 0, "directories": 0, "links": 0, "special": 0, "bytes": 0}
        key = {"file": "files", "directory": "directories", "link": "links", "special": "special"}
        for e in self.entries:
            counts[key[e.kind]] += 1
            if e.kind == "file" and e.depth == 0:
                counts["bytes"] += e.size or 0
        return counts

    def content_digest(self) -> str:
        """A digest of the inventory itself: identity of a directory by content, not by location."""
        return canonical_digest([[e.path, e.kind, e.sha256, e.link, e.executable] for e in self.entries])


_VERIFIED: dict[bool | None, Literal["verified", "undeclared", "contradicted"]] = {
    True: "verified",
    None: "undeclared",
    False: "contradicted",
}


def _int(value: JSONValue) -> int:
    return value if isinstance(value, int) else 0


def _entry_record(entry: ArchiveEntry, path: str, depth: int) -> ArtifactEntry:
    return ArtifactEntry(
        path=path,
        ordinal=entry.ordinal,
        kind=entry.kind,
        size=entry.size,
        sha256=None,
        executable=entry.executable,
        unpacked=entry.unpacked,
        link=entry.link,
        declared_integrity=entry.integrity,
        integrity="not-applicable",
        compressed_size=entry.compressed_size,
        depth=depth,
        nested_archive=None,
        problem=entry.problem,
    )


def subject_target(target: Target, reader: ArchiveReader, inv: Inventory | None) -> Target:
    """The Evidence subject: the refined format, and for directories a content digest."""
    if target.is_directory and inv is not None:
        return msgspec.structs.replace(
            target, sha256=inv.content_digest(), size=inv.totals()["bytes"], format="directory"
        )
    return msgspec.structs.replace(target, format=reader.format)
