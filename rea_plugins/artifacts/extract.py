"""Safe extraction: selected regular files into a fresh directory, never writing outside it."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal
from typing import TypeVar

import msgspec

from rea.plugin import ArchiveEntry
from rea.plugin import ArchiveReader
from rea.plugin import CallContext
from rea.plugin import IntegrityPolicy
from rea.plugin import JSONObject
from rea.plugin import Limits
from rea.plugin import ReaError
from rea.plugin import ToolStep
from rea.plugin import leftovers
from rea.plugin import limit_exceeded
from rea.plugin import retained_reference
from rea_plugins.artifacts.shapes import ExtractedFile
from rea_plugins.artifacts.shapes import Extraction
from rea_plugins.artifacts.shapes import Listing
from rea_plugins.artifacts.shapes import RefusedEntry

OUTPUT_PREFIX = "rea-extract-"
# Where record-and-continue puts a file whose bytes contradict their declared hash: beside the verified tree, never
# at the entry's own path, so nothing that loads the extracted tree picks up bytes the archive itself disowns.
QUARANTINE = "rea-quarantine"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
WORKERS = 4
# One written file's record and its integrity contradiction, if any (the unpacker's record: JSON the kernel's
# EntryRead carries, its fields each unpacker's).
_Written = tuple[ExtractedFile, JSONObject | None]
T = TypeVar("T")
_STATE: dict[bool | None, Literal["verified", "undeclared", "contradicted"]] = {
    True: "verified",
    None: "undeclared",
    False: "contradicted",
}
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# A result lists at most this many rows (and bytes) per section inline; beyond that the complete record is
# retained in the session and the result names it, so a large extraction still fits one MCP response.
LISTED_SECTIONS = ("files", "refused", "integrity_contradictions")
LISTED_ROWS = 1000
LISTED_BYTES = 1 << 20
# Longest file name (one path component, in bytes) POSIX file systems accept.
NAME_MAX = 255


def plan(entries: list[ArchiveEntry], paths: list[str] | None) -> tuple[list[ArchiveEntry], list[RefusedEntry]]:
    """Split the selection into entries to write and refusals (each with its reason)."""
    by_path: dict[str, list[ArchiveEntry]] = {}
    for e in entries:
        by_path.setdefault(e.path, []).append(e)
    if paths is None:
        selected = [e for e in entries if e.kind == "file"]
    else:
        unknown = [(i, p) for i, p in enumerate(paths) if p not in by_path]
        if unknown:
            raise ReaError(
                "invalid_request",
                f"{len(unknown)} selected path(s) are not entries of the artifact",
                details={
                    "issues": [
                        {"path": f"paths/{i}", "reason": "invalid_value", "message": f"no entry {p!r}"}
                        for i, p in unknown[:20]
                    ]
                },
            )
        selected = [e for p in sorted(set(paths)) for e in by_path[p]]
    links = {e.path for e in entries if e.kind == "link"}
    refused: list[RefusedEntry] = []
    candidates: list[ArchiveEntry] = []
    for e in selected:
        reason = _refusal(e, by_path, links)
        if reason:
            refused.append(RefusedEntry(path=e.path, ordinal=e.ordinal, kind=e.kind, reason=reason))
        else:
            candidates.append(e)
    # Names equal once case and Unicode normalization are ignored would overwrite each other on
    # case-insensitive or normalizing file systems (macOS, Windows).
    folded: dict[str, list[ArchiveEntry]] = {}
    for e in candidates:
        folded.setdefault(_fold(e.path), []).append(e)
    files = {e.path for e in candidates}
    keep: list[ArchiveEntry] = []
    for e in candidates:
        if len(folded[_fold(e.path)]) > 1:
            refused.append(RefusedEntry(path=e.path, ordinal=e.ordinal, kind=e.kind, reason="case_collision"))
        elif any("/".join(e.path.split("/")[:i]) in files for i in range(1, e.path.count("/") + 1)):
            refused.append(RefusedEntry(path=e.path, ordinal=e.ordinal, kind=e.kind, reason="parent_is_a_file"))
        else:
            keep.append(e)
    keep.sort(key=lambda e: e.path)
    refused.sort(key=lambda r: (r.path, r.ordinal))
    return keep, refused


def _fold(path: str) -> str:
    return unicodedata.normalize("NFC", path).casefold()


def _refusal(e: ArchiveEntry, by_path: dict[str, list[ArchiveEntry]], links: set[str]) -> str | None:
    if e.kind == "link":
        return "symlink"
    if e.kind == "special":
        return "device_or_special_file"
    if e.kind == "directory":
        return "not_a_regular_file"
    if len(by_path[e.path]) > 1:
        return "duplicate_name"
    if e.problem:
        return e.problem
    parts = e.path.split("/")
    if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts):
        return "name_too_long"
    if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
        return "beneath_symlink"
    return None


def _make_dirs(root_fd: int, parents: list[tuple[str, ...]]) -> None:
    """Create every parent directory beneath ``root_fd``, one component at a time, following nothing."""
    chain: list[tuple[str, int]] = []
    try:
        for parts in sorted(parents):
            keep = 0
            while keep < len(chain) and keep < len(parts) and chain[keep][0] == parts[keep]:
                keep += 1
            for _, fd in chain[keep:]:
                os.close(fd)
            del chain[keep:]
            for part in parts[keep:]:
                base = chain[-1][1] if chain else root_fd
                try:
                    os.mkdir(part, 0o700, dir_fd=base)
                except FileExistsError:
                    pass
                # O_NOFOLLOW|O_DIRECTORY: a name that is not a real directory is refused, not followed.
                chain.append((part, os.open(part, _DIR, dir_fd=base)))
    finally:
        for _, fd in chain:
            os.close(fd)


class _Budget:
    """Bytes written so far across worker threads, against ``max_total_bytes``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.lock = threading.Lock()

    def take(self, n: int, path: str) -> None:
        with self.lock:
            self.used += n
            if self.used > self.limit:
                raise limit_exceeded("total_bytes", self.limit, self.used, path=path)


def _write_all(fd: int, chunk: bytes) -> None:
    view = memoryview(chunk)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Job:
    """Everything a worker needs to write the files of one directory."""

    def __init__(
        self,
        reader: ArchiveReader,
        policy: IntegrityPolicy,
        ctx: CallContext,
        root_fd: int,
        budget: _Budget,
        stop: threading.Event,
    ) -> None:
        self.reader = reader
        self.policy = policy
        self.ctx = ctx
        self.root_fd = root_fd
        self.budget = budget
        self.stop = stop

    def write_group(self, parent: tuple[str, ...], entries: list[ArchiveEntry]) -> list[_Written]:
        out: list[_Written] = []
        dir_fd = os.dup(self.root_fd)
        try:
            for part in parent:
                nxt = os.open(part, _DIR, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = nxt
            for e in entries:
                if self.stop.is_set():
                    break
                self.ctx.check("extracting")
                out.append(self._write(dir_fd, e))
        finally:
            os.close(dir_fd)
        return out

    def _write(self, dir_fd: int, e: ArchiveEntry) -> _Written:
        name = e.path.rsplit("/", 1)[-1]
        fd = os.open(name, _CREATE, 0o700 if e.executable else 0o600, dir_fd=dir_fd)

        def sink(chunk: bytes) -> None:
            self.budget.take(len(chunk), e.path)
            _write_all(fd, chunk)

        try:
            got = self.reader.stream(e, sink, policy=self.policy, ctx=self.ctx)
        finally:
            os.close(fd)
        record = ExtractedFile(
            path=e.path,
            size=got.size,
            sha256=got.sha256,
            unpacked=e.unpacked,
            executable=e.executable,
            integrity=_STATE[got.verified],
        )
        return record, got.contradiction


def _quarantine(out_dir: str, paths: list[str]) -> None:
    """Move each contradicted file from its own path to the same path under ``QUARANTINE``. The tree was made by
    this call from checked logical paths, of directories and regular files only (created without following links),
    so these names resolve inside ``out_dir``."""
    for path in paths:
        target = os.path.join(out_dir, QUARANTINE, path)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        os.rename(os.path.join(out_dir, path), target)


def extract(
    reader: ArchiveReader, paths: list[str] | None, policy: IntegrityPolicy, limits: Limits, ctx: CallContext
) -> Extraction:
    """Materialize the selection into a fresh ``rea-extract-`` directory; on failure remove it and raise."""
    keep, refused = plan(reader.entries(), paths)
    declared = sum(e.size for e in keep)
    if declared > limits.max_total_bytes:
        raise limit_exceeded(
            "total_bytes",
            limits.max_total_bytes,
            declared,
            message=f"the selection declares {declared} bytes, beyond max_total_bytes",
        )
    groups: dict[tuple[str, ...], list[ArchiveEntry]] = {}
    for e in keep:
        groups.setdefault(tuple(e.path.split("/")[:-1]), []).append(e)
    out_dir = tempfile.mkdtemp(prefix=OUTPUT_PREFIX)
    written: list[_Written] = []
    # Noted as this process's until it is complete: a server killed mid-extraction leaves a partial folder, which
    # the next start removes (a complete one is the caller's, never swept).
    noted = contextlib.ExitStack()
    noted.enter_context(leftovers.staging_noted(out_dir, OUTPUT_PREFIX))
    try:
        root_fd = os.open(out_dir, _DIR)
        try:
            _make_dirs(root_fd, [p for p in groups if p])
            job = _Job(reader, policy, ctx, root_fd, _Budget(limits.max_total_bytes), threading.Event())
            # File creation dominates extraction time; readers that allow it write several directories at once.
            workers = WORKERS if reader.concurrent_reads and len(keep) > 64 else 1
            if workers == 1:
                for parent, entries in groups.items():
                    written.extend(job.write_group(parent, entries))
                    ctx.progress(f"extract: {len(written)} files", done=len(written), total=len(keep))
            else:
                _run_parallel(job, groups, workers, written)
            _quarantine(out_dir, [r.path for r, c in written if c is not None])
        finally:
            os.close(root_fd)
    except BaseException as exc:
        _remove(out_dir, exc)
        noted.close()
        if isinstance(exc, OSError):
            raise ReaError(
                "artifact_operation_failed",
                f"extraction failed: {exc.strerror or exc}",
                details={"reason": "write_failed"},
            ) from None
        raise
    noted.close()
    files: list[ExtractedFile] = []
    for record, contradiction in written:
        if contradiction is not None:
            contradiction["quarantined_to"] = f"{QUARANTINE}/{record.path}"
            record = msgspec.structs.replace(record, quarantined_to=contradiction["quarantined_to"])
        files.append(record)
    files.sort(key=lambda r: r.path)
    contradictions = sorted((c for _, c in written if c is not None), key=lambda c: str(c["logical_path"]))
    return Extraction(
        format=reader.format,
        integrity_policy=policy,
        output_directory=out_dir,
        files=files,
        refused=refused,
        integrity_contradictions=contradictions,
        file_count=len(files),
        total_bytes=sum(f.size for f in files),
        refused_count=len(refused),
        contradiction_count=len(contradictions),
        listing=Listing(status="complete"),
    )


def oversized(result: Extraction) -> bool:
    """Whether any listed section exceeds what one result lists inline."""
    return any(len(_bounded_rows(rows)) < len(rows) for rows in _sections(result))


def _sections(result: Extraction) -> tuple[Sequence[object], ...]:
    """The listed sections, in LISTED_SECTIONS' order."""
    return (result.files, result.refused, result.integrity_contradictions)


def bounded(result: Extraction, complete_id: str) -> Extraction:
    """The result with each listed section cut to its first rows, naming the retained complete record."""
    files, refused, contradictions = (
        _bounded_rows(result.files),
        _bounded_rows(result.refused),
        _bounded_rows(result.integrity_contradictions),
    )
    shown = dict(zip(LISTED_SECTIONS, (len(files), len(refused), len(contradictions)), strict=True))
    source: JSONObject = {**retained_reference(complete_id)}
    listing = Listing(
        status="bounded",
        shown=shown,
        total=dict(zip(LISTED_SECTIONS, map(len, _sections(result)), strict=True)),
        complete_evidence=retained_reference(complete_id),
        page_with=ToolStep(
            tool="inspect_analysis_view",
            arguments={
                "source": source,
                "view": {"kind": "page", "section": "files", "offset": 0, "limit": 256},
            },
        ),
    )
    return msgspec.structs.replace(
        result, files=files, refused=refused, integrity_contradictions=contradictions, listing=listing
    )


def _bounded_rows(rows: Sequence[T]) -> list[T]:
    size = 0
    for i, row in enumerate(rows[:LISTED_ROWS]):
        size += len(msgspec.json.encode(row))
        if size > LISTED_BYTES:
            return list(rows[:i])
    return list(rows[:LISTED_ROWS])


def discard(out_dir: str, cause: BaseException) -> None:
    """Remove a finished extraction whose call failed afterwards (encoding, recording, cancellation)."""
    _remove(out_dir, cause)


def _run_parallel(
    job: _Job, groups: dict[tuple[str, ...], list[ArchiveEntry]], workers: int, written: list[_Written]
) -> None:
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rea-extract")
    futures = [pool.submit(job.write_group, parent, entries) for parent, entries in groups.items()]
    try:
        for i, fut in enumerate(futures):
            written.extend(fut.result())
            if i % 256 == 0:
                job.ctx.progress(
                    f"extract: {len(written)} files", done=len(written), total=sum(map(len, groups.values()))
                )
    except BaseException:
        job.stop.set()
        raise
    finally:
        # Every worker has stopped before the caller may remove the directory.
        pool.shutdown(wait=True, cancel_futures=True)


def _remove(out_dir: str, cause: BaseException) -> None:
    """Remove everything this call wrote; a failure to do so becomes ``cleanup_incomplete``."""
    try:
        shutil.rmtree(out_dir)
    except OSError as exc:
        base = (
            cause
            if isinstance(cause, ReaError)
            else ReaError(
                "artifact_operation_failed", f"extraction failed: {cause}", details={"reason": "write_failed"}
            )
        )
        raise base.with_cleanup_incomplete([out_dir], f"could not remove {out_dir}: {exc.strerror}") from None
