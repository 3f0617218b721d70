"""Safe extraction: selected regular files into a fresh directory, never writing outside it."""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from typing import Any

from rea.context import CallContext
from rea.errors import ReaError
from rea.unpackers import ArchiveEntry, ArchiveReader, IntegrityPolicy, Limits, limit_exceeded

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_STATE = {True: "verified", None: "undeclared", False: "contradicted"}
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def plan(entries: list[ArchiveEntry], paths: list[str] | None
         ) -> tuple[list[ArchiveEntry], list[dict[str, Any]]]:
    """Split the selection into entries to write and refusals (each with its reason)."""
    by_path: dict[str, list[ArchiveEntry]] = {}
    for e in entries:
        by_path.setdefault(e.path, []).append(e)
    if paths is None:
        selected = [e for e in entries if e.kind == "file"]
    else:
        unknown = [(i, p) for i, p in enumerate(paths) if p not in by_path]
        if unknown:
            raise ReaError("invalid_request",
                           f"{len(unknown)} selected path(s) are not entries of the artifact",
                           details={"issues": [{"path": f"paths/{i}", "reason": "invalid_value",
                                                "message": f"no entry {p!r}"} for i, p in unknown[:20]]})
        selected = [e for p in sorted(set(paths)) for e in by_path[p]]
    links = {e.path for e in entries if e.kind == "link"}
    refused: list[dict[str, Any]] = []
    candidates: list[ArchiveEntry] = []
    for e in selected:
        reason = _refusal(e, by_path, links)
        if reason:
            refused.append({"path": e.path, "ordinal": e.ordinal, "kind": e.kind, "reason": reason})
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
            refused.append({"path": e.path, "ordinal": e.ordinal, "kind": e.kind, "reason": "case_collision"})
        elif any("/".join(e.path.split("/")[:i]) in files for i in range(1, e.path.count("/") + 1)):
            refused.append({"path": e.path, "ordinal": e.ordinal, "kind": e.kind,
                            "reason": "parent_is_a_file"})
        else:
            keep.append(e)
    keep.sort(key=lambda e: e.path)
    refused.sort(key=lambda r: (r["path"], r["ordinal"]))
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
    if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
        return "beneath_symlink"
    return None


class _Writer:
    """Writes files beneath one root descriptor, keeping the open directory chain of the last file."""

    def __init__(self, root: str) -> None:
        self.root_fd = os.open(root, _DIR)
        self.chain: list[tuple[str, int]] = []

    def parent_fd(self, parts: list[str]) -> int:
        keep = 0
        while keep < len(self.chain) and keep < len(parts) and self.chain[keep][0] == parts[keep]:
            keep += 1
        for _, fd in self.chain[keep:]:
            os.close(fd)
        del self.chain[keep:]
        for part in parts[keep:]:
            base = self.chain[-1][1] if self.chain else self.root_fd
            try:
                os.mkdir(part, 0o700, dir_fd=base)
            except FileExistsError:
                pass
            # O_NOFOLLOW|O_DIRECTORY: an existing name that is not a real directory is refused, not followed.
            self.chain.append((part, os.open(part, _DIR, dir_fd=base)))
        return self.chain[-1][1] if self.chain else self.root_fd

    def create(self, path: str, executable: bool) -> int:
        parts = path.split("/")
        return os.open(parts[-1], _CREATE, 0o700 if executable else 0o600, dir_fd=self.parent_fd(parts[:-1]))

    def close(self) -> None:
        for _, fd in self.chain:
            os.close(fd)
        self.chain.clear()
        if self.root_fd >= 0:
            os.close(self.root_fd)
            self.root_fd = -1


def _write_all(fd: int, chunk: bytes) -> None:
    view = memoryview(chunk)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def extract(reader: ArchiveReader, paths: list[str] | None, policy: IntegrityPolicy, limits: Limits,
            ctx: CallContext) -> dict[str, Any]:
    """Materialize the selection into a fresh ``rea-extract-`` directory; on failure remove it and raise."""
    keep, refused = plan(reader.entries(), paths)
    out_dir = tempfile.mkdtemp(prefix="rea-extract-")
    writer: _Writer | None = None
    try:
        writer = _Writer(out_dir)
        files: list[dict[str, Any]] = []
        contradictions: list[dict[str, Any]] = []
        total = 0
        for e in keep:
            ctx.check("extracting")
            if total + e.size > limits.max_total_bytes:
                raise limit_exceeded("total_bytes", limits.max_total_bytes, total + e.size, path=e.path)
            fd = writer.create(e.path, e.executable)
            budget = [limits.max_total_bytes - total]

            def sink(chunk: bytes, fd: int = fd, path: str = e.path, budget: list[int] = budget) -> None:
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise limit_exceeded("total_bytes", limits.max_total_bytes, path=path)
                _write_all(fd, chunk)

            try:
                got = reader.stream(e, sink, policy=policy, ctx=ctx)
            finally:
                os.close(fd)
            total += got.size
            if got.contradiction is not None:
                contradictions.append(got.contradiction)
            files.append({"path": e.path, "size": got.size, "sha256": got.sha256, "unpacked": e.unpacked,
                          "executable": e.executable, "integrity": _STATE[got.verified]})
            if len(files) % 1000 == 0:
                ctx.progress(f"extract: {len(files)} files")
        writer.close()
        writer = None
    except BaseException as exc:
        if writer is not None:
            writer.close()
        _remove(out_dir, exc)
        if isinstance(exc, OSError):
            raise ReaError("artifact_operation_failed", f"extraction failed: {exc.strerror or exc}",
                           details={"reason": "write_failed"}) from None
        raise
    return {"output_directory": out_dir, "files": files, "refused": refused,
            "integrity_contradictions": contradictions, "file_count": len(files), "total_bytes": total}


def _remove(out_dir: str, cause: BaseException) -> None:
    """Remove everything this call wrote; a failure to do so becomes ``cleanup_incomplete``."""
    try:
        shutil.rmtree(out_dir)
    except OSError as exc:
        base = cause if isinstance(cause, ReaError) else ReaError(
            "artifact_operation_failed", f"extraction failed: {cause}", details={"reason": "write_failed"})
        raise base.with_cleanup_incomplete([out_dir], f"could not remove {out_dir}: {exc.strerror}") from None
