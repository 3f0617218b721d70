"""Electron ASAR reader: bounds-checked header parsing and integrity-verified entry reads."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import struct
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from rea.context import CallContext
from rea.errors import ReaError
from rea.unpackers import (
    DeclaredIntegrity,
    EntryRead,
    IntegrityPolicy,
    Sink,
    is_missing,
    limit_exceeded,
    link_escapes,
    open_beneath,
    path_problem,
)

AsarIntegrity = DeclaredIntegrity
EntryType = Literal["file", "directory", "link"]

READ_CHUNK = 4 << 20
DEFAULT_MAX_ENTRIES = 1_000_000
DEFAULT_MAX_HEADER_BYTES = 64 << 20
# msgspec's fixed nesting bound for JSON decoding; deeper headers are refused rather than recursed.
MAX_JSON_DEPTH = 1000
_HEX = frozenset("0123456789abcdef")
UNPACKED_CAUSE = ("Packaging tools commonly sign or strip .asar.unpacked files after the header was written, "
                  "so their declared hashes no longer match.")


class AsarEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One header node: a file, directory or link at a logical path."""

    path: str
    kind: EntryType
    size: int
    offset: int | None
    unpacked: bool
    executable: bool
    link: str | None
    integrity: AsarIntegrity | None
    # Why this name cannot be materialized safely ("parent_traversal", "link_escape", ...), or None.
    problem: str | None = None


class AsarRead(msgspec.Struct, kw_only=True):
    data: bytes
    verified: bool | None
    contradiction: dict[str, Any] | None


def _malformed(reason: str, message: str, **details: Any) -> ReaError:
    return ReaError("artifact_operation_failed", f"malformed ASAR header: {message}",
                    remediation="Not a well-formed ASAR archive; check that it was written whole.",
                    details={"reason": reason, **details})


def _truncated(message: str, **details: Any) -> ReaError:
    return ReaError("truncated", f"ASAR archive is truncated: {message}",
                    remediation="Obtain the complete archive: its header declares more bytes than it has.",
                    details={"reason": "truncated", **details})


def _is_hex64(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in _HEX for c in value)


def _parse_integrity(node: dict[str, Any], path: str, size: int) -> AsarIntegrity | None:
    raw = node.get("integrity")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _malformed("bad_integrity", f"integrity of {path!r} is not an object", logical_path=path)
    algorithm, digest, block_size, blocks = (raw.get("algorithm"), raw.get("hash"), raw.get("blockSize"),
                                             raw.get("blocks"))
    if algorithm != "SHA256" or not _is_hex64(digest):
        raise _malformed("bad_integrity", f"integrity of {path!r} must be SHA256 with a 64-digit hex hash",
                         logical_path=path)
    if type(block_size) is not int or block_size <= 0:
        raise _malformed("bad_integrity", f"integrity blockSize of {path!r} must be a positive integer",
                         logical_path=path)
    if not isinstance(blocks, list) or not all(_is_hex64(b) for b in blocks):
        raise _malformed("bad_integrity", f"integrity blocks of {path!r} must be hex SHA-256 digests",
                         logical_path=path)
    expected_blocks = max(1, -(-size // block_size))
    if len(blocks) != expected_blocks:
        raise _malformed("bad_integrity", f"{path!r} declares {len(blocks)} blocks for {size} bytes "
                         f"(expected {expected_blocks})", logical_path=path)
    assert isinstance(digest, str)
    return AsarIntegrity(algorithm="SHA256", hash=digest, block_size=block_size, blocks=list(blocks))


class _Source:
    """Random access to archive bytes: a file descriptor or an in-memory nested archive."""

    def __init__(self, fd: int | None, data: bytes | None, size: int) -> None:
        self.fd = fd
        self.data = memoryview(data) if data is not None else None
        self.size = size

    def pread(self, length: int, offset: int) -> bytes:
        if self.data is not None:
            return bytes(self.data[offset:offset + length])
        assert self.fd is not None
        out = os.pread(self.fd, length, offset)
        if len(out) != length:
            raise _truncated(f"expected {length} bytes at offset {offset}, read {len(out)}", offset=offset)
        return out

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.data = None


class AsarArchive:
    """An open ASAR archive; ``open`` validates the whole header before anything is read."""

    def __init__(self, source: _Source, header_size: int, entries: list[AsarEntry], name: str,
                 companion: str | None) -> None:
        self._source = source
        self._data_start = 8 + header_size
        self._entries = entries
        self._by_path = {e.path: e for e in entries}
        self.name = name
        self.header_size = header_size
        # ``<archive>.unpacked``: where entries marked ``unpacked`` live; None for nested archives.
        self.companion = companion

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, ctx: CallContext | None = None, *, max_entries: int = DEFAULT_MAX_ENTRIES,
             max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> AsarArchive:
        """Open and validate the archive at ``path``; ``ReaError`` on malformed or truncated input."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            code = "access_denied" if exc.errno in (errno.EACCES, errno.EPERM) else "target_unavailable"
            raise ReaError(code, f"cannot open {path}: {exc.strerror}",
                           details={"path": path, "reason": "unreadable"}) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ReaError("unsupported_target", f"{path} is not a regular file",
                               details={"path": path, "format": "special"})
            source = _Source(fd, None, st.st_size)
            return cls._load(source, os.path.basename(path), path + ".unpacked", ctx, max_entries,
                             max_header_bytes)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "", ctx: CallContext | None = None, *,
                   max_entries: int = DEFAULT_MAX_ENTRIES,
                   max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> AsarArchive:
        """Open an ASAR held in memory (a nested archive); it has no unpacked companion."""
        return cls._load(_Source(None, data, len(data)), name, None, ctx, max_entries, max_header_bytes)

    @classmethod
    def _load(cls, source: _Source, name: str, companion: str | None, ctx: CallContext | None,
              max_entries: int, max_header_bytes: int) -> AsarArchive:
        if source.size < 16:
            raise _truncated(f"{source.size} bytes is shorter than the 16-byte ASAR prefix", size=source.size)
        size_pickle_len, header_size, payload_len, json_len = struct.unpack("<IIII", source.pread(16, 0))
        if size_pickle_len != 4:
            raise _malformed("bad_size_pickle", f"size pickle declares {size_pickle_len} bytes (expected 4)")
        if header_size > max_header_bytes:
            raise limit_exceeded("asar_header_bytes", max_header_bytes, header_size,
                                 message=f"ASAR header declares {header_size} bytes, more than the "
                                         f"{max_header_bytes}-byte limit")
        if header_size < 8 or payload_len != header_size - 4 or json_len > payload_len - 4:
            raise _malformed("bad_header_size", f"inconsistent header sizes (header {header_size}, "
                             f"payload {payload_len}, string {json_len})", header_size=header_size)
        if 8 + header_size > source.size:
            raise _truncated(f"header of {header_size} bytes runs past the end of a {source.size}-byte file",
                             header_size=header_size, size=source.size)
        raw = source.pread(json_len, 16)
        try:
            tree = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            if isinstance(exc, RecursionError) or "recursion" in str(exc):
                raise limit_exceeded("asar_header_depth", MAX_JSON_DEPTH,
                                     message="ASAR header nests deeper than the JSON decoder allows") from None
            raise _malformed("not_json", f"header is not JSON ({exc})") from None
        if not isinstance(tree, dict) or not isinstance(tree.get("files"), dict):
            raise _malformed("no_root", "header has no root 'files' object")
        data_len = source.size - 8 - header_size
        entries = _walk(tree, data_len, ctx, max_entries)
        return cls(source, header_size, entries, name, companion)

    # -- queries ----------------------------------------------------------------------------

    def entries(self) -> list[AsarEntry]:
        """Every entry sorted by logical path (code-point order)."""
        return list(self._entries)

    def entry(self, path: str) -> AsarEntry:
        found = self._by_path.get(path)
        if found is None:
            raise ReaError("invalid_request", f"{path!r} is not an entry of {self.name or 'the archive'}",
                           details={"issues": [{"path": "path", "reason": "invalid_value",
                                                "message": f"no entry {path!r}"}]})
        return found

    def read(self, path: str, *, policy: IntegrityPolicy = "fail",
             ctx: CallContext | None = None) -> AsarRead:
        """The entry's bytes, verified against its declared integrity under ``policy``."""
        chunks: list[bytes] = []
        out = self.stream(self.entry(path), chunks.append, policy=policy, ctx=ctx)
        return AsarRead(data=b"".join(chunks), verified=out.verified, contradiction=out.contradiction)

    def stream(self, entry: AsarEntry, sink: Sink, *, policy: IntegrityPolicy = "fail",
               ctx: CallContext | None = None, budget: Callable[[int], None] | None = None) -> EntryRead:
        """Feed a file entry's bytes to ``sink`` chunk by chunk, hashing whole file and blocks."""
        if entry.kind != "file":
            raise ReaError("invalid_request", f"{entry.path!r} is a {entry.kind}, not a file",
                           details={"issues": [{"path": "path", "reason": "invalid_value",
                                                "message": f"{entry.path!r} is a {entry.kind}"}]})
        block_size = entry.integrity.block_size if entry.integrity else READ_CHUNK
        whole = hashlib.sha256()
        blocks: list[str] = []
        total = 0
        for chunk in self._chunks(entry, block_size):
            if ctx is not None:
                ctx.check("reading ASAR entry")
            total += len(chunk)
            if budget is not None:
                budget(len(chunk))
            whole.update(chunk)
            if entry.integrity is not None:
                blocks.append(hashlib.sha256(chunk).hexdigest())
            sink(chunk)
        if entry.integrity is not None and total == 0:
            blocks.append(hashlib.sha256(b"").hexdigest())
        observed = whole.hexdigest()
        declared = entry.integrity
        if declared is None:
            return EntryRead(sha256=observed, size=total, verified=None)
        bad_blocks = [i for i, (a, b) in enumerate(zip(declared.blocks, blocks, strict=False)) if a != b]
        if observed == declared.hash and not bad_blocks and len(blocks) == len(declared.blocks):
            return EntryRead(sha256=observed, size=total, verified=True)
        if policy == "fail":
            raise integrity_error(entry, observed)
        return EntryRead(sha256=observed, size=total, verified=False,
                         contradiction=contradiction(entry, observed, bad_blocks, self.name))

    def _chunks(self, entry: AsarEntry, block_size: int) -> Any:
        # Reading in whole integrity blocks lets one read serve both the file and the block hashes.
        step = block_size if block_size <= (64 << 20) else READ_CHUNK
        if entry.unpacked:
            yield from self._companion_chunks(entry, step)
            return
        assert entry.offset is not None
        start = self._data_start + entry.offset
        done = 0
        while done < entry.size:
            n = min(step, entry.size - done)
            yield self._source.pread(n, start + done)
            done += n

    def _companion_chunks(self, entry: AsarEntry, step: int) -> Any:
        if self.companion is None:
            raise _companion_missing(entry.path, "a nested archive has no .asar.unpacked companion")
        try:
            root = os.open(self.companion, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            if is_missing(exc):
                raise _companion_missing(entry.path, f"{self.companion} does not exist") from None
            raise
        try:
            try:
                fd = open_beneath(root, entry.path.split("/"))
            except OSError as exc:
                if is_missing(exc):
                    raise _companion_missing(entry.path, "its companion file is absent or not a regular file"
                                             ) from None
                raise
        finally:
            os.close(root)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _companion_missing(entry.path, "its companion is not a regular file")
            while True:
                chunk = os.read(fd, step)
                if not chunk:
                    break
                # A short read mid-file is normal for os.read; accumulate to whole blocks.
                while len(chunk) < step:
                    more = os.read(fd, step - len(chunk))
                    if not more:
                        break
                    chunk += more
                yield chunk
        finally:
            os.close(fd)

    def close(self) -> None:
        self._source.close()

    def __enter__(self) -> AsarArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _companion_missing(path: str, why: str) -> ReaError:
    return ReaError("target_unavailable", f"unpacked ASAR entry {path!r} cannot be materialized: {why}",
                    remediation="Keep the archive's .asar.unpacked directory next to it and retry.",
                    details={"reason": "unavailable", "logical_path": path})


def integrity_error(entry: AsarEntry, observed: str) -> ReaError:
    """The fail-closed error for one contradicted entry."""
    assert entry.integrity is not None
    details: dict[str, Any] = {"logical_path": entry.path, "declared_sha256": entry.integrity.hash,
                               "calculated_sha256": observed, "unpacked": entry.unpacked}
    message = f"ASAR entry {entry.path!r}: declared SHA-256 does not match its bytes"
    remediation = ("Rerun with integrity_policy 'record-and-continue' "
                   "(CLI: --integrity-policy record-and-continue) "
                   "to record the contradiction and continue with verified entries.")
    if entry.unpacked:
        details["likely_cause"] = UNPACKED_CAUSE
        message += f" (unpacked entry; {UNPACKED_CAUSE})"
    details["rerun_with"] = {"integrity_policy": "record-and-continue"}
    return ReaError("artifact_integrity_mismatch", message, remediation=remediation, details=details)


def contradiction(entry: AsarEntry, observed: str, bad_blocks: list[int], archive: str) -> dict[str, Any]:
    """The canonical ``integrity_contradictions`` record for one entry."""
    assert entry.integrity is not None
    record: dict[str, Any] = {
        "logical_path": entry.path,
        "algorithm": "sha256",
        "declared_sha256": entry.integrity.hash,
        "observed_sha256": observed,
        "mismatched_blocks": bad_blocks,
        "unpacked": entry.unpacked,
        "trust": "contradicted",
        "provenance": {"declared_by": "asar-header",
                       "observed_from": "asar-unpacked-companion" if entry.unpacked else "asar-data",
                       "archive": archive},
        "quarantined": True,
    }
    if entry.unpacked:
        record["likely_cause"] = UNPACKED_CAUSE
    return record


def _walk(tree: dict[str, Any], data_len: int, ctx: CallContext | None, max_entries: int) -> list[AsarEntry]:
    """Flatten the header tree iteratively (hostile depth cannot exhaust the stack)."""
    out: list[AsarEntry] = []
    stack: list[tuple[str, dict[str, Any], bool]] = [("", tree, False)]
    while stack:
        prefix, node, parent_unpacked = stack.pop()
        files = node["files"]
        for name, child in files.items():
            if ctx is not None and len(out) % 4096 == 0:
                ctx.check("reading ASAR header")
            if len(out) >= max_entries:
                raise limit_exceeded("entries", max_entries, message=f"ASAR header lists more than "
                                     f"{max_entries} entries")
            path = f"{prefix}/{name}" if prefix else name
            if not isinstance(child, dict):
                raise _malformed("bad_node", f"node {path!r} is not an object", logical_path=path)
            unpacked = child.get("unpacked", parent_unpacked)
            if not isinstance(unpacked, bool):
                raise _malformed("bad_node", f"'unpacked' of {path!r} is not a boolean", logical_path=path)
            # A "/" inside one name would alias another path; checked apart from the joined path.
            problem = path_problem(path) or ("unsafe_name" if "/" in name else None)
            if "files" in child:
                if not isinstance(child["files"], dict):
                    raise _malformed("bad_node", f"'files' of {path!r} is not an object", logical_path=path)
                out.append(AsarEntry(path=path, kind="directory", size=0, offset=None, unpacked=unpacked,
                                     executable=False, link=None, integrity=None,
                                     problem=problem))
                stack.append((path, child, unpacked))
            elif "link" in child:
                link = child["link"]
                if not isinstance(link, str):
                    raise _malformed("bad_node", f"link of {path!r} is not a string", logical_path=path)
                # ASAR links are relative to the archive root, not to the link's directory.
                escape = link_escapes("link", link)
                out.append(AsarEntry(path=path, kind="link", size=0, offset=None, unpacked=unpacked,
                                     executable=False, link=link, integrity=None,
                                     problem=problem or ("link_escape" if escape else None)))
            else:
                out.append(_file_entry(path, child, unpacked, data_len, problem))
    out.sort(key=lambda e: e.path)
    for a, b in itertools.pairwise(out):
        if a.path == b.path:
            raise _malformed("duplicate_path", f"logical path {a.path!r} appears twice", logical_path=a.path)
    return out


def _file_entry(path: str, node: dict[str, Any], unpacked: bool, data_len: int,
                problem: str | None) -> AsarEntry:
    size = node.get("size")
    if type(size) is not int or size < 0:
        raise _malformed("bad_size", f"size of {path!r} must be a non-negative integer", logical_path=path)
    executable = node.get("executable", False)
    if not isinstance(executable, bool):
        raise _malformed("bad_node", f"'executable' of {path!r} is not a boolean", logical_path=path)
    integrity = _parse_integrity(node, path, size)
    offset: int | None = None
    if not unpacked:
        raw = node.get("offset")
        # The header writes offsets as decimal strings (64-bit values do not fit a JSON number safely).
        if isinstance(raw, str) and raw.isdigit() and raw.isascii():
            offset = int(raw)
        elif type(raw) is int and raw >= 0:
            offset = raw
        else:
            raise _malformed("bad_offset", f"offset of {path!r} must be a decimal string", logical_path=path)
        if offset + size > data_len:
            raise _truncated(f"entry {path!r} at offset {offset} with {size} bytes runs past the "
                             f"{data_len}-byte data region", logical_path=path, offset=offset, size=size,
                             data_bytes=data_len)
    return AsarEntry(path=path, kind="file", size=size, offset=offset, unpacked=unpacked,
                     executable=executable, link=None, integrity=integrity, problem=problem)
