"""The built-in ``zip`` unpacker: ZIP and the packages built on it (APK, IPA, JAR, MSIX/AppX)."""

from __future__ import annotations

import copy
import hashlib
import io
import itertools
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO
from typing import Any
from typing import cast

import msgspec

from rea.plugin import ArchiveEntry
from rea.plugin import ArchiveReader
from rea.plugin import CallContext
from rea.plugin import DeclaredIntegrity
from rea.plugin import EntryKind
from rea.plugin import EntryRead
from rea.plugin import IntegrityPolicy
from rea.plugin import Limits
from rea.plugin import ReaError
from rea.plugin import Sink
from rea.plugin import Target
from rea.plugin import Unpacker
from rea.plugin import UnpackerDescriptor
from rea.plugin import limit_exceeded
from rea.plugin import link_escapes
from rea.plugin import open_regular
from rea.plugin import path_problem
from rea.plugin import verify_unchanged
from rea_plugins.artifacts.zipsafety import LOCAL_FLAG_HIGH
from rea_plugins.artifacts.zipsafety import BoundedDecompressor
from rea_plugins.artifacts.zipsafety import PatchedFile
from rea_plugins.artifacts.zipsafety import describe
from rea_plugins.artifacts.zipsafety import directory_span
from rea_plugins.artifacts.zipsafety import raw_name
from rea_plugins.artifacts.zipsafety import scan_records
from rea_plugins.artifacts.zipsafety import undecodable_names

VERSION = "0.1.0"
READ_CHUNK = 1 << 20
MAX_LINK_BYTES = 4096
_IPA_APP = re.compile(r"^Payload/[^/]+\.app/")
_UNIX = 3
# A local header is at least this long: the smallest span an entry's header and data occupy is this plus its
# compressed size, so a record that starts inside another's span overlaps it.
_LOCAL_HEADER = 30
_UNBOUNDED_METHODS = (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def package_format(names: set[str]) -> str:
    """The package format a ZIP's member names mark it as (content only: file names are not consulted)."""
    if "AndroidManifest.xml" in names and ("classes.dex" in names or "resources.arsc" in names):
        return "apk"
    if any(_IPA_APP.match(n) for n in names):
        return "ipa"
    if "AppxManifest.xml" in names or "AppxMetadata/AppxBundleManifest.xml" in names:
        return "msix"
    if "META-INF/MANIFEST.MF" in names:
        return "jar"
    return "zip"


def _malformed(message: str, **details: Any) -> ReaError:
    return ReaError(
        "artifact_operation_failed",
        f"malformed ZIP archive: {message}",
        remediation="The file is not a readable ZIP archive; check that it was written whole.",
        details={"reason": "malformed_zip", **details},
    )


def _out_of_memory(message: str, **details: Any) -> ReaError:
    return ReaError(
        "resource_constraint",
        message,
        remediation="Inspect a smaller artifact.",
        details={"resource": "memory", **details},
    )


def _kind(info: zipfile.ZipInfo) -> EntryKind:
    if info.filename.endswith("/"):  # ZipInfo.is_dir() indexes the name, which may be empty
        return "directory"
    mode = info.external_attr >> 16
    if info.create_system == _UNIX and mode:
        if stat.S_ISLNK(mode):
            return "link"
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            return "special"
    return "file"


class ZipReader(ArchiveReader):
    """A ZIP archive's central directory, with CRC-verified and ratio-bounded reads."""

    def __init__(self, fh: IO[bytes], limits: Limits, ctx: CallContext | None, pinned: Target | None = None) -> None:
        # The identified file ``fh`` reads: every entry is read between two checks that it still holds the bytes
        # that were hashed (an archive rewritten in place mid-extraction is artifact_changed, never a mix).
        self._pinned = pinned
        self._pinned_fd = fh.fileno() if pinned is not None else -1
        # Central records whose UTF-8-flagged names are not UTF-8: listed under their raw bytes, refused.
        self._bad_names: set[int] = set()
        view: IO[bytes] | PatchedFile = fh
        try:
            self._precheck(fh, limits)
        except BaseException:
            fh.close()
            raise
        try:
            self._zip = self._open(fh)
        except UnicodeDecodeError:
            flagged = undecodable_names(fh)
            if not flagged:
                fh.close()
                raise _malformed("an entry name flagged as UTF-8 is not valid UTF-8") from None
            view = PatchedFile(fh, {o: _byte(fh, o) & ~0x08 for o in flagged.values()})
            self._zip = self._open(view, fh)
            self._bad_names = set(flagged)
        try:
            infos = self._zip.infolist()
            self._check_offsets(infos, fh)
            if isinstance(view, PatchedFile):
                # Their local headers carry the same flag: clear it there too, so names compare equal.
                for i in self._bad_names:
                    view.patches[infos[i].header_offset + LOCAL_FLAG_HIGH] = (
                        _byte(fh, infos[i].header_offset + LOCAL_FLAG_HIGH) & ~0x08
                    )
            if len(infos) > limits.max_entries:
                raise limit_exceeded(
                    "entries",
                    limits.max_entries,
                    len(infos),
                    message=f"ZIP lists {len(infos)} entries (limit {limits.max_entries})",
                )
            self._check_bomb(infos, limits)
            self._check_overlap(infos)
            self._infos: dict[tuple[str, int], zipfile.ZipInfo] = {}
            self._entries = self._list(infos, ctx)
            self.format = package_format({e.path for e in self._entries})
        except BaseException:
            self._zip.close()
            fh.close()
            raise
        self._fh = view

    @staticmethod
    def _open(view: IO[bytes] | PatchedFile, owner: IO[bytes] | None = None) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(cast(IO[bytes], view))
        except UnicodeDecodeError:
            if owner is not None:  # still undecodable after patching: give up on the archive
                owner.close()
                raise _malformed("an entry name flagged as UTF-8 is not valid UTF-8") from None
            raise
        except MemoryError:
            (owner or view).close()
            raise _out_of_memory("the ZIP central directory does not fit in memory") from None
        except Exception as exc:  # zipfile raises many types on hostile input; none may reach the caller
            (owner or view).close()
            raise _malformed(describe(exc)) from None

    @staticmethod
    def _precheck(fh: IO[bytes], limits: Limits) -> None:
        """Bound the central directory before ``zipfile`` reads it whole and builds an object per record."""
        span = directory_span(fh)
        if span is None:
            return
        if span[1] > limits.max_header_bytes:
            raise limit_exceeded(
                "header_bytes",
                limits.max_header_bytes,
                span[1],
                message=f"the ZIP central directory is {span[1]} bytes, beyond the "
                f"{limits.max_header_bytes}-byte limit",
            )
        scan = scan_records(fh, span, limits.max_entries)
        if scan.records > limits.max_entries:
            raise limit_exceeded(
                "entries",
                limits.max_entries,
                message=f"ZIP lists more than {limits.max_entries} entries (limit {limits.max_entries})",
            )
        # The bomb checks again, from the same pass: a refusal here costs no per-record objects.
        unpacked, packed, name = scan.steepest
        if unpacked > limits.max_compression_ratio * packed:
            shown = name.decode("utf-8", "backslashreplace")
            raise limit_exceeded(
                "compression_ratio",
                limits.max_compression_ratio,
                round(unpacked / packed, 1),
                path=shown,
                message=f"ZIP entry {shown!r} expands {unpacked / packed:.0f}:1, "
                f"beyond the {limits.max_compression_ratio:g}:1 limit",
            )
        if scan.declared_bytes > limits.max_total_bytes:
            raise limit_exceeded(
                "total_bytes",
                limits.max_total_bytes,
                scan.declared_bytes,
                message=f"ZIP declares {scan.declared_bytes} uncompressed bytes, beyond the "
                f"{limits.max_total_bytes}-byte limit",
            )

    @staticmethod
    def _check_overlap(infos: list[zipfile.ZipInfo]) -> None:
        """Entries whose bytes overlap: the construction of zip bombs that stay under every per-entry ratio."""
        spans = sorted(
            (i.header_offset, i.header_offset + _LOCAL_HEADER + i.compress_size, n) for n, i in enumerate(infos)
        )
        for (_, end, a), (nxt, _, b) in itertools.pairwise(spans):
            if nxt < end:
                first, second = sorted((infos[a].filename, infos[b].filename))
                raise _malformed(
                    f"entries {first!r} and {second!r} overlap in the file (a zip bomb "
                    "construction); no valid ZIP shares bytes between entries",
                    problem="overlapping_entries",
                )

    @staticmethod
    def _check_offsets(infos: list[zipfile.ZipInfo], fh: IO[bytes]) -> None:
        """Local headers before the start of the file: the end record's directory offset is wrong."""
        if not infos or min(i.header_offset for i in infos) >= 0:
            return
        size = fh.seek(0, 2)
        declared = _declared_directory_offset(fh)
        where = f"at offset {declared}, " if declared is not None else ""
        past = "past the end of" if declared is not None and declared >= size else "inconsistent with"
        raise _malformed(
            f"the end-of-central-directory record places the central directory {where}{past} the {size}-byte file"
        )

    @staticmethod
    def _check_bomb(infos: list[zipfile.ZipInfo], limits: Limits) -> None:
        declared = 0
        for info in infos:
            declared += info.file_size
            if info.file_size and info.file_size > limits.max_compression_ratio * max(info.compress_size, 1):
                ratio = info.file_size / max(info.compress_size, 1)
                raise limit_exceeded(
                    "compression_ratio",
                    limits.max_compression_ratio,
                    round(ratio, 1),
                    path=info.filename,
                    message=f"ZIP entry {info.filename!r} expands {ratio:.0f}:1, beyond the "
                    f"{limits.max_compression_ratio:g}:1 limit",
                )
        if declared > limits.max_total_bytes:
            raise limit_exceeded(
                "total_bytes",
                limits.max_total_bytes,
                declared,
                message=f"ZIP declares {declared} uncompressed bytes, beyond the {limits.max_total_bytes}-byte limit",
            )

    def _list(self, infos: list[zipfile.ZipInfo], ctx: CallContext | None) -> list[ArchiveEntry]:
        seen: dict[str, int] = {}
        out: list[ArchiveEntry] = []
        for index, info in enumerate(infos):
            if ctx is not None and index % 4096 == 0:
                ctx.check("reading ZIP directory")
            kind = _kind(info)
            # orig_filename keeps what zipfile's filename drops after a NUL ("evil.txt\0.png" stays whole).
            name = info.orig_filename
            bad_name = index in self._bad_names
            if bad_name:
                name = raw_name(name).decode("utf-8", "backslashreplace")
            path = name[:-1] if kind == "directory" and name.endswith("/") else name
            ordinal = seen.get(path, 0)
            seen[path] = ordinal + 1
            link = self._link_target(info) if kind == "link" else None
            problem = "invalid_utf8_name" if bad_name else path_problem(path)
            if problem is None and kind == "link" and (link is None or link_escapes(path, link)):
                problem = "link_escape"
            if info.flag_bits & 0x1:
                problem = problem or "encrypted"
            self._infos[(path, ordinal)] = info
            out.append(
                ArchiveEntry(
                    path=path,
                    kind=kind,
                    size=info.file_size if kind == "file" else 0,
                    ordinal=ordinal,
                    executable=kind == "file" and bool((info.external_attr >> 16) & stat.S_IXUSR),
                    link=link,
                    compressed_size=info.compress_size if kind == "file" else None,
                    integrity=_crc(info) if kind == "file" else None,
                    problem=problem,
                )
            )
        dups = {p for p, n in seen.items() if n > 1}
        if dups:
            out = [e if e.path not in dups else _with_problem(e, "duplicate_name") for e in out]
        out.sort(key=lambda e: (e.path, e.ordinal))
        return out

    def _link_target(self, info: zipfile.ZipInfo) -> str | None:
        if info.file_size > MAX_LINK_BYTES or info.flag_bits & 0x1:
            return None
        try:
            with self._zip.open(info) as fh:
                return fh.read(MAX_LINK_BYTES).decode("utf-8", "backslashreplace")
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, zlib.error, EOFError):
            return None

    def entries(self) -> list[ArchiveEntry]:
        return list(self._entries)

    def stream(
        self, entry: ArchiveEntry, sink: Sink, *, policy: IntegrityPolicy, ctx: CallContext | None = None
    ) -> EntryRead:
        info = self._infos[(entry.path, entry.ordinal)]
        if info.flag_bits & 0x1:
            raise ReaError(
                "artifact_operation_failed",
                f"ZIP entry {entry.path!r} is encrypted",
                remediation="Decrypt the archive with its password first.",
                details={"reason": "encrypted", "logical_path": entry.path},
            )
        self._verify_pinned()
        digest = hashlib.sha256()
        crc = 0
        total = 0
        try:
            for chunk in self._chunks(info, ctx):
                total += len(chunk)
                crc = zlib.crc32(chunk, crc)
                digest.update(chunk)
                sink(chunk)
        except ReaError:
            raise
        except MemoryError:
            raise _out_of_memory(f"ZIP entry {entry.path!r} does not fit in memory", logical_path=entry.path) from None
        except Exception as exc:  # zipfile and its decompressors raise many types on hostile input
            raise _malformed(f"entry {entry.path!r}: {describe(exc, entry=True)}", logical_path=entry.path) from None
        self._verify_pinned()
        observed = digest.hexdigest()
        if total != info.file_size:
            raise ReaError(
                "truncated",
                f"ZIP entry {entry.path!r} yielded {total} of {info.file_size} bytes",
                details={"reason": "truncated", "logical_path": entry.path},
            )
        if crc == info.CRC:
            return EntryRead(sha256=observed, size=total, verified=True)
        declared, calculated = f"{info.CRC:08x}", f"{crc:08x}"
        if policy == "fail":
            raise ReaError(
                "artifact_integrity_mismatch",
                f"ZIP entry {entry.path!r}: declared CRC-32 {declared} does not match its bytes ({calculated})",
                remediation="Rerun with integrity_policy 'record-and-continue' to record the contradiction "
                "and continue with verified entries.",
                details={
                    "logical_path": entry.path,
                    "algorithm": "crc32",
                    "declared_crc32": declared,
                    "calculated_crc32": calculated,
                    "declared_sha256": None,
                    "calculated_sha256": observed,
                    "unpacked": False,
                    "rerun_with": {"integrity_policy": "record-and-continue"},
                },
            )
        return EntryRead(
            sha256=observed,
            size=total,
            verified=False,
            contradiction={
                "logical_path": entry.path,
                "algorithm": "crc32",
                "declared_crc32": declared,
                "observed_crc32": calculated,
                "declared_sha256": None,
                "observed_sha256": observed,
                "unpacked": False,
                "trust": "contradicted",
                "quarantined": True,
                "provenance": {"declared_by": "zip-central-directory", "observed_from": "zip-data"},
            },
        )

    def _verify_pinned(self) -> None:
        if self._pinned is not None:
            verify_unchanged(self._pinned, self._pinned_fd)

    def _chunks(self, info: zipfile.ZipInfo, ctx: CallContext | None) -> Iterator[bytes]:
        """The entry's bytes in chunks of at most READ_CHUNK, never more than its declared size."""
        if info.compress_type not in _UNBOUNDED_METHODS:
            with self._zip.open(info) as fh:
                # CRC is checked here rather than by zipfile so that record-and-continue keeps the bytes.
                fh._expected_crc = None  # type: ignore[attr-defined]
                while True:
                    if ctx is not None:
                        ctx.check("reading ZIP entry")
                    chunk = fh.read(READ_CHUNK)
                    if not chunk:
                        return
                    yield chunk
        # zipfile decompresses bzip2 and LZMA without an output bound: read the raw bytes, decompress here.
        raw = copy.copy(info)
        raw.compress_type, raw.file_size = zipfile.ZIP_STORED, info.compress_size
        left = info.file_size
        decompressor = BoundedDecompressor(info.compress_type, READ_CHUNK)
        with self._zip.open(raw) as fh:
            fh._expected_crc = None  # type: ignore[attr-defined]
            while left > 0 and not decompressor.eof:
                if ctx is not None:
                    ctx.check("reading ZIP entry")
                if decompressor.needs_input:
                    data = fh.read(READ_CHUNK)
                    if not data:
                        return
                    out = decompressor.feed(data)
                else:
                    out = decompressor.more()
                # Bytes past the declared size are never produced: the read stops there (CRC then judges).
                out = out[:left]
                left -= len(out)
                if out:
                    yield out

    def limitations(self) -> list[str]:
        out = ["ZIP declares CRC-32 checksums only; integrity verification is against CRC-32."]
        if self.format == "msix":
            out.append("MSIX and AppX share one package layout; both are reported as msix.")
        return out

    def close(self) -> None:
        self._zip.close()
        self._fh.close()


def _byte(fh: IO[bytes], offset: int) -> int:
    """The byte at ``offset`` of ``fh`` (0 past its end)."""
    fh.seek(offset)
    got = fh.read(1)
    return got[0] if got else 0


def _declared_directory_offset(fh: IO[bytes]) -> int | None:
    end_record = getattr(zipfile, "_EndRecData", None)
    try:
        endrec = end_record(fh) if end_record is not None else None
    except (OSError, ValueError, OverflowError):
        return None
    return int(endrec[6]) if endrec else None


def _crc(info: zipfile.ZipInfo) -> DeclaredIntegrity:
    return DeclaredIntegrity(algorithm="crc32", hash=f"{info.CRC:08x}", block_size=0, blocks=[])


def _with_problem(e: ArchiveEntry, problem: str) -> ArchiveEntry:
    return msgspec.structs.replace(e, problem=e.problem or problem)


class ZipUnpacker(Unpacker):
    """ZIP archives and ZIP-based packages, recognized by their member markers."""

    descriptor = UnpackerDescriptor(
        id="zip",
        name="ZIP family",
        version=VERSION,
        formats=("zip", "apk", "ipa", "jar", "msix"),
        description="ZIP archives; APK, IPA, JAR and MSIX/AppX recognized by their member markers.",
    )

    def claims(self, target: Target, head: bytes) -> bool:
        zip_head = head[:4] in (b"PK\x03\x04", b"PK\x05\x06")
        return not target.is_directory and (target.format == "zip" or zip_head)

    def open(self, target: Target, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        try:
            # Through rea.files: a path replaced by a FIFO since it was identified is refused, never waited on.
            fd = open_regular(target.resolved_path, code="artifact_changed", what="archive")
            fh: IO[bytes] = open(fd, "rb")  # noqa: SIM115 - owned by the reader
        except OSError as exc:
            raise ReaError(
                "target_unavailable",
                f"cannot open {target.path}: {exc.strerror}",
                details={"path": target.path, "reason": "unreadable"},
            ) from None
        try:
            # The file opened is the one identified (not one renamed over it since, nor rewritten).
            verify_unchanged(target, fd)
        except BaseException:
            fh.close()
            raise
        return ZipReader(fh, options, ctx, pinned=target)

    def open_bytes(self, target: Target, data: bytes, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        return ZipReader(io.BytesIO(data), options, ctx)

    def open_spool(self, target: Target, fd: int, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        # Read in place from the spool file (the reader owns and closes it).
        fh = open(fd, "rb")  # noqa: SIM115 - owned by the reader
        fh.seek(0)
        return ZipReader(fh, options, ctx)
