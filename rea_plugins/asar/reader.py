"""Electron ASAR reader: bounds-checked header parsing and integrity-verified entry reads."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import re
import stat
import struct
from collections.abc import Callable
from typing import Annotated
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import CallContext
from rea.plugin import DeclaredIntegrity
from rea.plugin import EntryRead
from rea.plugin import IntegrityPolicy
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import Sink
from rea.plugin import is_missing
from rea.plugin import limit_exceeded
from rea.plugin import link_escapes
from rea.plugin import open_beneath
from rea.plugin import path_problem

AsarIntegrity = DeclaredIntegrity
EntryType = Literal["file", "directory", "link"]

READ_CHUNK = 4 << 20
DEFAULT_MAX_ENTRIES = 1_000_000
DEFAULT_MAX_HEADER_BYTES = 64 << 20
# msgspec's fixed nesting bound for JSON decoding; deeper headers are refused rather than recursed.
MAX_JSON_DEPTH = 1000
_HEX_RUN = re.compile(r"[0-9a-f]*")
UNPACKED_CAUSE = (
    "Packaging tools commonly sign or strip .asar.unpacked files after the header was written, "
    "so their declared hashes no longer match."
)


class AsarEntry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
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
    # The kernel's EntryRead form of the contradiction (``contradiction`` below, as JSON), or None.
    contradiction: JSONObject | None


def _malformed(reason: str, message: str, **details: Any) -> ReaError:
    return ReaError(
        "artifact_operation_failed",
        f"malformed ASAR header: {message}",
        remediation="Not a well-formed ASAR archive; check that it was written whole.",
        details={"reason": reason, **details},
    )


def _truncated(message: str, **details: Any) -> ReaError:
    return ReaError(
        "truncated",
        f"ASAR archive is truncated: {message}",
        remediation="Obtain the complete archive: its header declares more bytes than it has.",
        details={"reason": "truncated", **details},
    )


class _RawIntegrity(msgspec.Struct, gc=False):
    algorithm: Literal["SHA256"]
    hash: str
    blockSize: Annotated[int, msgspec.Meta(gt=0)]
    blocks: list[str]


class _RawNode(msgspec.Struct, gc=False):
    """One header node as @electron/asar writes it; typed decoding validates shapes in C."""

    files: dict[str, _RawNode] | None = None
    size: Annotated[int, msgspec.Meta(ge=0)] | None = None
    offset: str | Annotated[int, msgspec.Meta(ge=0)] | None = None
    unpacked: bool | None = None
    executable: bool = False
    link: str | None = None
    integrity: _RawIntegrity | None = None


def _validation_reason(message: str) -> str:
    where = message.rsplit("at `", 1)[-1].rstrip("`") if "at `" in message else ""
    if ".integrity" in where:
        return "bad_integrity"
    if where.endswith(".size"):
        return "bad_size"
    if where.endswith(".offset"):
        return "bad_offset"
    return "bad_node" if where.startswith("$.files[") else "no_root"


def _check_hashes(entries: list[AsarEntry]) -> None:
    """Every declared digest is 64 lowercase hex digits: one regex pass over all of them."""
    digests = [d for e in entries if e.integrity is not None for d in (e.integrity.hash, *e.integrity.blocks)]
    if all(len(d) == 64 for d in digests) and _HEX_RUN.fullmatch("".join(digests)):
        return
    for e in entries:
        if e.integrity is not None and not all(
            len(d) == 64 and _HEX_RUN.fullmatch(d) for d in (e.integrity.hash, *e.integrity.blocks)
        ):
            raise _malformed(
                "bad_integrity", f"integrity of {e.path!r} must hold hex SHA-256 digests", logical_path=e.path
            )


class _Source:
    """Random access to archive bytes: a file descriptor or an in-memory nested archive."""

    def __init__(self, fd: int | None, data: bytes | None, size: int) -> None:
        self.fd = fd
        self.data = memoryview(data) if data is not None else None
        self.size = size

    def pread(self, length: int, offset: int) -> bytes:
        if self.data is not None:
            return bytes(self.data[offset : offset + length])
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

    def __init__(
        self, source: _Source, header_size: int, entries: list[AsarEntry], name: str, companion: str | None
    ) -> None:
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
    def open(
        cls,
        path: str,
        ctx: CallContext | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> AsarArchive:
        """Open and validate the archive at ``path``; ``ReaError`` on malformed or truncated input."""
        try:
            # O_NONBLOCK: a FIFO swapped in for the archive is refused below, never waited on at open.
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as exc:
            code = "access_denied" if exc.errno in (errno.EACCES, errno.EPERM) else "target_unavailable"
            raise ReaError(
                code, f"cannot open {path}: {exc.strerror}", details={"path": path, "reason": "unreadable"}
            ) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ReaError(
                    "unsupported_target", f"{path} is not a regular file", details={"path": path, "format": "special"}
                )
            os.set_blocking(fd, True)
            source = _Source(fd, None, st.st_size)
            return cls._load(source, os.path.basename(path), path + ".unpacked", ctx, max_entries, max_header_bytes)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        name: str = "",
        ctx: CallContext | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> AsarArchive:
        """Open an ASAR held in memory (a nested archive); it has no unpacked companion."""
        return cls._load(_Source(None, data, len(data)), name, None, ctx, max_entries, max_header_bytes)

    @classmethod
    def from_spool(
        cls,
        fd: int,
        name: str = "",
        ctx: CallContext | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> AsarArchive:
        """Open a nested ASAR spooled to a private file (``fd`` is the archive's; it has no companion)."""
        try:
            return cls._load(_Source(fd, None, os.fstat(fd).st_size), name, None, ctx, max_entries, max_header_bytes)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def _load(
        cls,
        source: _Source,
        name: str,
        companion: str | None,
        ctx: CallContext | None,
        max_entries: int,
        max_header_bytes: int,
    ) -> AsarArchive:
        if source.size < 16:
            raise _truncated(f"{source.size} bytes is shorter than the 16-byte ASAR prefix", size=source.size)
        size_pickle_len, header_size, payload_len, json_len = struct.unpack("<IIII", source.pread(16, 0))
        if size_pickle_len != 4:
            raise _malformed("bad_size_pickle", f"size pickle declares {size_pickle_len} bytes (expected 4)")
        if header_size > max_header_bytes:
            raise limit_exceeded(
                "asar_header_bytes",
                max_header_bytes,
                header_size,
                message=f"ASAR header declares {header_size} bytes, more than the {max_header_bytes}-byte limit",
            )
        if header_size < 8 or payload_len != header_size - 4 or json_len > payload_len - 4:
            raise _malformed(
                "bad_header_size",
                f"inconsistent header sizes (header {header_size}, payload {payload_len}, string {json_len})",
                header_size=header_size,
            )
        if 8 + header_size > source.size:
            raise _truncated(
                f"header of {header_size} bytes runs past the end of a {source.size}-byte file",
                header_size=header_size,
                size=source.size,
            )
        raw = source.pread(json_len, 16)
        try:
            tree = msgspec.json.decode(raw, type=_RawNode)
        except RecursionError:
            raise _too_deep() from None
        except msgspec.ValidationError as exc:
            raise _malformed(_validation_reason(str(exc)), f"unexpected header content: {exc}") from None
        except msgspec.DecodeError as exc:
            if "recursion" in str(exc):
                raise _too_deep() from None
            raise _malformed("not_json", f"header is not JSON ({exc})") from None
        if tree.files is None:
            raise _malformed("no_root", "header has no root 'files' object")
        data_len = source.size - 8 - header_size
        entries = _walk(tree, data_len, ctx, max_entries)
        _check_hashes(entries)
        return cls(source, header_size, entries, name, companion)

    # -- queries ----------------------------------------------------------------------------

    def entries(self) -> list[AsarEntry]:
        """Every entry sorted by logical path (code-point order)."""
        return list(self._entries)

    def entry(self, path: str) -> AsarEntry:
        found = self._by_path.get(path)
        if found is None:
            raise ReaError(
                "invalid_request",
                f"{path!r} is not an entry of {self.name or 'the archive'}",
                details={"issues": [{"path": "path", "reason": "invalid_value", "message": f"no entry {path!r}"}]},
            )
        return found

    def read(self, path: str, *, policy: IntegrityPolicy = "fail", ctx: CallContext | None = None) -> AsarRead:
        """The entry's bytes, verified against its declared integrity under ``policy``."""
        chunks: list[bytes] = []
        out = self.stream(self.entry(path), chunks.append, policy=policy, ctx=ctx)
        return AsarRead(data=b"".join(chunks), verified=out.verified, contradiction=out.contradiction)

    def stream(
        self,
        entry: AsarEntry,
        sink: Sink,
        *,
        policy: IntegrityPolicy = "fail",
        ctx: CallContext | None = None,
        budget: Callable[[int], None] | None = None,
    ) -> EntryRead:
        """Feed a file entry's bytes to ``sink`` chunk by chunk, hashing whole file and blocks."""
        if entry.kind != "file":
            raise ReaError(
                "invalid_request",
                f"{entry.path!r} is a {entry.kind}, not a file",
                details={
                    "issues": [
                        {"path": "path", "reason": "invalid_value", "message": f"{entry.path!r} is a {entry.kind}"}
                    ]
                },
            )
        declared = entry.integrity
        if not entry.unpacked and entry.size <= READ_CHUNK and (declared is None or entry.size < declared.block_size):
            return self._stream_small(entry, sink, policy, ctx, budget)
        whole = hashlib.sha256()
        # Blocks are hashed on their own only when the file spans more than one; otherwise the single
        # block is the whole file and one hash serves both.
        per_block = declared is not None and entry.size >= declared.block_size
        bs = declared.block_size if declared is not None else 0
        blocks: list[str] = []
        blk = hashlib.sha256()
        fill = 0
        total = 0
        for chunk in self._chunks(entry):
            if ctx is not None:
                ctx.check("reading ASAR entry")
            total += len(chunk)
            if budget is not None:
                budget(len(chunk))
            whole.update(chunk)
            if per_block:
                view = memoryview(chunk)
                while view:
                    take = min(len(view), bs - fill)
                    blk.update(view[:take])
                    fill += take
                    view = view[take:]
                    if fill == bs:
                        blocks.append(blk.hexdigest())
                        blk, fill = hashlib.sha256(), 0
            sink(chunk)
        observed = whole.hexdigest()
        if declared is None:
            return EntryRead(sha256=observed, size=total, verified=None)
        if not per_block:
            blocks = [observed]
        # @electron/asar always closes with the (possibly empty) partial block; other writers do not.
        if per_block and (fill or len(blocks) < len(declared.blocks)):
            blocks.append(blk.hexdigest())
        bad_blocks = [i for i, (a, b) in enumerate(zip(declared.blocks, blocks, strict=False)) if a != b]
        if observed == declared.hash and not bad_blocks and len(blocks) == len(declared.blocks):
            return EntryRead(sha256=observed, size=total, verified=True)
        if policy == "fail":
            raise integrity_error(entry, observed)
        return EntryRead(
            sha256=observed,
            size=total,
            verified=False,
            contradiction=contradiction(entry, observed, bad_blocks, self.name),
        )

    def _stream_small(
        self,
        entry: AsarEntry,
        sink: Sink,
        policy: IntegrityPolicy,
        ctx: CallContext | None,
        budget: Callable[[int], None] | None,
    ) -> EntryRead:
        # Most entries are one read and one hash: this path skips the chunk generator and block split.
        if ctx is not None:
            ctx.check("reading ASAR entry")
        assert entry.offset is not None
        data = self._source.pread(entry.size, self._data_start + entry.offset) if entry.size else b""
        if budget is not None:
            budget(len(data))
        observed = hashlib.sha256(data).hexdigest()
        sink(data)
        declared = entry.integrity
        if declared is None:
            return EntryRead(sha256=observed, size=len(data), verified=None)
        if observed == declared.hash and declared.blocks == [observed]:
            return EntryRead(sha256=observed, size=len(data), verified=True)
        if policy == "fail":
            raise integrity_error(entry, observed)
        bad = [i for i, b in enumerate(declared.blocks[:1]) if b != observed]
        return EntryRead(
            sha256=observed,
            size=len(data),
            verified=False,
            contradiction=contradiction(entry, observed, bad, self.name),
        )

    def _chunks(self, entry: AsarEntry) -> Any:
        if entry.unpacked:
            yield from self._companion_chunks(entry, READ_CHUNK)
            return
        assert entry.offset is not None
        start = self._data_start + entry.offset
        done = 0
        while done < entry.size:
            n = min(READ_CHUNK, entry.size - done)
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
            raise _companion_unreadable(entry.path, exc) from None
        try:
            try:
                fd = open_beneath(root, entry.path.split("/"))
            except OSError as exc:
                if is_missing(exc):
                    raise _companion_missing(entry.path, "its companion file is absent or not a regular file") from None
                raise _companion_unreadable(entry.path, exc) from None
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

    @property
    def fd(self) -> int | None:
        """The descriptor the archive is read through (None when it is held in memory)."""
        return self._source.fd

    def close(self) -> None:
        self._source.close()

    def __enter__(self) -> AsarArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _companion_missing(path: str, why: str) -> ReaError:
    return ReaError(
        "target_unavailable",
        f"unpacked ASAR entry {path!r} cannot be materialized: {why}",
        remediation="Keep the archive's .asar.unpacked directory next to it and retry.",
        details={"reason": "unavailable", "logical_path": path},
    )


def _companion_unreadable(path: str, exc: OSError) -> ReaError:
    code = "access_denied" if exc.errno in (errno.EACCES, errno.EPERM) else "target_unavailable"
    return ReaError(
        code,
        f"unpacked ASAR entry {path!r} cannot be read from its companion: {exc.strerror or 'read failed'}",
        remediation="Make the archive's .asar.unpacked directory readable and retry.",
        details={"reason": "unreadable", "logical_path": path},
    )


def integrity_error(entry: AsarEntry, observed: str) -> ReaError:
    """The fail-closed error for one contradicted entry."""
    assert entry.integrity is not None
    # ReaError details: JSON the error carries to the caller.
    details: JSONObject = {
        "logical_path": entry.path,
        "declared_sha256": entry.integrity.hash,
        "calculated_sha256": observed,
        "unpacked": entry.unpacked,
    }
    message = f"ASAR entry {entry.path!r}: declared SHA-256 does not match its bytes"
    remediation = (
        "Rerun with integrity_policy 'record-and-continue' "
        "(CLI: --integrity-policy record-and-continue) "
        "to record the contradiction and continue with verified entries."
    )
    if entry.unpacked:
        details["likely_cause"] = UNPACKED_CAUSE
        message += f" (unpacked entry; {UNPACKED_CAUSE})"
    details["rerun_with"] = {"integrity_policy": "record-and-continue"}
    return ReaError("artifact_integrity_mismatch", message, remediation=remediation, details=details)


class ContradictionProvenance(Record):
    declared_by: str
    observed_from: str
    archive: str


class Contradiction(Record):
    """One entry whose bytes contradict the hash the header declares."""

    logical_path: str
    algorithm: str
    declared_sha256: str
    observed_sha256: str
    mismatched_blocks: list[int]
    unpacked: bool
    trust: str
    provenance: ContradictionProvenance
    quarantined: bool
    likely_cause: str | None = None


def contradiction(entry: AsarEntry, observed: str, bad_blocks: list[int], archive: str) -> JSONObject:
    """The canonical ``integrity_contradictions`` record for one entry, as the JSON the kernel's EntryRead carries
    (its ``contradiction`` is a JSON object, each unpacker's own fields)."""
    assert entry.integrity is not None
    record = Contradiction(
        logical_path=entry.path,
        algorithm="sha256",
        declared_sha256=entry.integrity.hash,
        observed_sha256=observed,
        mismatched_blocks=bad_blocks,
        unpacked=entry.unpacked,
        trust="contradicted",
        provenance=ContradictionProvenance(
            declared_by="asar-header",
            observed_from="asar-unpacked-companion" if entry.unpacked else "asar-data",
            archive=archive,
        ),
        quarantined=True,
        likely_cause=UNPACKED_CAUSE if entry.unpacked else None,
    )
    out: JSONObject = msgspec.to_builtins(record)
    return out


def _too_deep() -> ReaError:
    return limit_exceeded(
        "asar_header_depth", MAX_JSON_DEPTH, message="ASAR header nests deeper than the JSON decoder allows"
    )


def _walk(tree: _RawNode, data_len: int, ctx: CallContext | None, max_entries: int) -> list[AsarEntry]:
    """Flatten the header tree iteratively (hostile depth cannot exhaust the stack)."""
    out: list[AsarEntry] = []
    stack: list[tuple[str, _RawNode, bool, str | None]] = [("", tree, False, None)]
    while stack:
        prefix, node, parent_unpacked, parent_problem = stack.pop()
        assert node.files is not None
        if len(out) + len(node.files) > max_entries:
            raise limit_exceeded("entries", max_entries, message=f"ASAR header lists more than {max_entries} entries")
        if ctx is not None:
            ctx.check("reading ASAR header")
        for name, child in node.files.items():
            path = f"{prefix}/{name}" if prefix else name
            unpacked = parent_unpacked if child.unpacked is None else child.unpacked
            problem = parent_problem
            if problem is None and (name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name):
                # A "/" inside one name would alias another path, so it is unsafe even when canonical.
                problem = path_problem(path) or "unsafe_name"
            if child.files is not None:
                out.append(
                    AsarEntry(
                        path=path,
                        kind="directory",
                        size=0,
                        offset=None,
                        unpacked=unpacked,
                        executable=False,
                        link=None,
                        integrity=None,
                        problem=problem,
                    )
                )
                stack.append((path, child, unpacked, problem))
            elif child.link is not None:
                # ASAR links are relative to the archive root, not to the link's directory.
                escape = link_escapes("link", child.link)
                out.append(
                    AsarEntry(
                        path=path,
                        kind="link",
                        size=0,
                        offset=None,
                        unpacked=unpacked,
                        executable=False,
                        link=child.link,
                        integrity=None,
                        problem=problem or ("link_escape" if escape else None),
                    )
                )
            else:
                out.append(_file_entry(path, child, unpacked, data_len, problem))
    out.sort(key=lambda e: e.path)
    for a, b in itertools.pairwise(out):
        if a.path == b.path:
            raise _malformed("duplicate_path", f"logical path {a.path!r} appears twice", logical_path=a.path)
    return out


def _file_entry(path: str, node: _RawNode, unpacked: bool, data_len: int, problem: str | None) -> AsarEntry:
    size = node.size
    if size is None:
        raise _malformed("bad_size", f"file {path!r} declares no size", logical_path=path)
    integrity = None
    if node.integrity is not None:
        raw_i = node.integrity
        # ceil(size / blockSize) blocks (at least one), or one more: @electron/asar always appends the
        # trailing partial block, even when it is empty.
        expected_blocks = max(1, -(-size // raw_i.blockSize))
        if len(raw_i.blocks) not in (expected_blocks, size // raw_i.blockSize + 1):
            raise _malformed(
                "bad_integrity",
                f"{path!r} declares {len(raw_i.blocks)} blocks for {size} bytes (expected {expected_blocks})",
                logical_path=path,
            )
        integrity = AsarIntegrity(algorithm="SHA256", hash=raw_i.hash, block_size=raw_i.blockSize, blocks=raw_i.blocks)
    offset: int | None = None
    if not unpacked:
        raw = node.offset
        # The header writes offsets as decimal strings (64-bit values do not fit a JSON number safely).
        if isinstance(raw, str) and raw.isdigit() and raw.isascii():
            offset = int(raw)
        elif isinstance(raw, int):
            offset = raw
        else:
            raise _malformed("bad_offset", f"offset of {path!r} must be a decimal string", logical_path=path)
        if offset + size > data_len:
            raise _truncated(
                f"entry {path!r} at offset {offset} with {size} bytes runs past the {data_len}-byte data region",
                logical_path=path,
                offset=offset,
                size=size,
                data_bytes=data_len,
            )
    return AsarEntry(
        path=path,
        kind="file",
        size=size,
        offset=offset,
        unpacked=unpacked,
        executable=node.executable,
        link=None,
        integrity=integrity,
        problem=problem,
    )
