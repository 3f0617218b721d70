"""What the ZIP reader needs beyond ``zipfile`` on hostile input: plain failure descriptions, and a view
of the file in which an entry flagged as UTF-8 whose name is not UTF-8 can be listed (and refused)
instead of failing the whole archive."""

from __future__ import annotations

import bz2
import io
import lzma
import struct
import zipfile
import zlib
from typing import IO
from typing import NamedTuple

# Central directory record: signature, versions, flags (offset 8), ..., name/extra/comment lengths at 28.
_CD = struct.Struct("<4s4B4HL2L5H2L")
_CD_MAGIC = b"PK\x01\x02"
_UTF8_FLAG = 0x0800
# A ZIP64 end record (56 bytes) and its locator (20 bytes) sit between the directory and the end record.
_END64_MAGIC = b"PK\x06\x06"
_END64_BYTES = 56 + 20
_SCAN_CHUNK = 1 << 20
_ZIP64_MARK = 0xFFFFFFFF
# Offsets of the high byte of the general-purpose flags in a central record and in a local header.
CD_FLAG_HIGH = 9
LOCAL_FLAG_HIGH = 7


def describe(exc: BaseException, *, entry: bool = False) -> str:
    """What is malformed, in words, for an exception ``zipfile`` or a decompressor raised on bad input.

    ``zipfile.BadZipFile`` messages are already plain ("Truncated central directory"); every other type
    is described here, so neither an exception's name nor its internal text (``[Errno 22] ...``) reaches
    a caller.
    """
    if isinstance(exc, zipfile.BadZipFile):
        text = str(exc).strip()
        if text.startswith("File name in directory"):  # zipfile quotes both names, one as a bytes repr
            return "its local header names a different file than the central directory does"
        return text[0].lower() + text[1:] if text else "not a ZIP archive"
    if isinstance(exc, UnicodeDecodeError):
        return (
            "its local header names it in bytes that are not UTF-8 although it is flagged as UTF-8"
            if entry
            else "an entry name flagged as UTF-8 is not valid UTF-8"
        )
    if isinstance(exc, zlib.error | lzma.LZMAError):
        return "its compressed data is corrupt"
    if isinstance(exc, NotImplementedError):
        return (
            "it uses a compression method or feature this reader does not support"
            if entry
            else "it requires a ZIP version or feature this reader does not support"
        )
    if isinstance(exc, EOFError):
        return "its compressed data ends early" if entry else "the archive ends inside its central directory"
    if isinstance(exc, OverflowError | struct.error):
        return "a size or offset field is out of range"
    if isinstance(exc, OSError | ValueError):
        # Negative or impossible seeks (EINVAL), bz2 streams that do not decode, inconsistent offsets.
        return (
            "its data lies outside the file or does not decode"
            if entry
            else "the central directory's offsets point outside the file"
        )
    return "the archive is inconsistent"


class PatchedFile(io.RawIOBase):
    """A read-only view of ``fh`` with single bytes replaced (``offset -> value``)."""

    def __init__(self, fh: IO[bytes], patches: dict[int, int]) -> None:
        super().__init__()
        self._fh = fh
        self.patches = patches

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def read(self, size: int | None = -1) -> bytes:
        start = self._fh.tell()
        data = self._fh.read(-1 if size is None else size)
        hits = [o for o in self.patches if start <= o < start + len(data)]
        if not hits:
            return data
        buf = bytearray(data)
        for o in hits:
            buf[o - start] = self.patches[o]
        return bytes(buf)

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._fh.close()
        super().close()


def directory_span(fh: IO[bytes]) -> tuple[int, int] | None:
    """Where the central directory starts and how many of its declared bytes the file holds, or None.

    Computed as ``zipfile`` does (an archive may be prefixed, so the start is taken from the end record's
    position); None when there is no end record or the start is impossible (``zipfile`` then says why).
    """
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:
        return None
    try:
        endrec = end_record(fh)
        if not endrec:
            return None
        size_cd, offset_cd, location = endrec[5], endrec[6], endrec[9]
        concat = location - size_cd - offset_cd
        if endrec[0] == _END64_MAGIC:
            concat -= _END64_BYTES
        start = offset_cd + concat
        if start < 0:
            return None
        return start, max(0, min(size_cd, fh.seek(0, io.SEEK_END) - start))
    except (OSError, ValueError, OverflowError, struct.error):
        return None


class DirectoryScan(NamedTuple):
    """What a pass over the central records found, before any per-record object exists."""

    records: int
    declared_bytes: int  # uncompressed sizes summed (ZIP64-marked sizes are left to zipfile's reading)
    # The record declaring the highest compression ratio: (uncompressed, compressed, raw name).
    steepest: tuple[int, int, bytes]


def scan_records(fh: IO[bytes], span: tuple[int, int], most: int) -> DirectoryScan:
    """Count the central records in ``span`` the way ``zipfile`` walks them (stopping once past ``most``),
    with their declared sizes.

    Read in chunks, and nothing kept per record: the count is known before ``zipfile`` builds one object
    per record (a lying end record cannot hide a million records from it: ``zipfile`` walks the bytes).
    """
    start, size = span
    pos = count = declared = 0
    steepest = (0, 1, b"")
    buf = b""
    base = 0  # offset of buf[0] within the directory
    while pos + _CD.size <= size and count <= most:
        if pos + _CD.size > base + len(buf):
            fh.seek(start + pos)
            buf = fh.read(min(size - pos, _SCAN_CHUNK))
            base = pos
            if len(buf) < _CD.size:
                break
        fields = _CD.unpack_from(buf, pos - base)
        if fields[0] != _CD_MAGIC:
            break
        count += 1
        packed, unpacked = fields[10], fields[11]
        if unpacked != _ZIP64_MARK and packed != _ZIP64_MARK:
            declared += unpacked
            if unpacked * steepest[1] > steepest[0] * max(packed, 1):
                at = pos - base + _CD.size
                steepest = (unpacked, max(packed, 1), buf[at : at + min(fields[12], 200)])
        pos += _CD.size + fields[12] + fields[13] + fields[14]
    return DirectoryScan(records=count, declared_bytes=declared, steepest=steepest)


def undecodable_names(fh: IO[bytes]) -> dict[int, int]:
    """Central records flagged UTF-8 whose names are not: ``{record index: offset of its flag byte}``.

    Clearing the flag there makes ``zipfile`` read the name as CP437 (every byte string is CP437), so the
    entry can be listed under its raw bytes and refused instead of aborting the whole listing.
    """
    span = directory_span(fh)
    if span is None:
        return {}
    start, size = span
    try:
        fh.seek(start)
        directory = fh.read(size)
    except (OSError, ValueError, OverflowError):
        return {}
    found: dict[int, int] = {}
    pos = index = 0
    while pos + _CD.size <= len(directory):
        fields = _CD.unpack_from(directory, pos)
        if fields[0] != _CD_MAGIC:
            break
        flags, name_len, extra_len, comment_len = fields[5], fields[12], fields[13], fields[14]
        if flags & _UTF8_FLAG:
            try:
                directory[pos + _CD.size : pos + _CD.size + name_len].decode("utf-8")
            except UnicodeDecodeError:
                found[index] = start + pos + CD_FLAG_HIGH
        pos += _CD.size + name_len + extra_len + comment_len
        index += 1
    return found


class BoundedDecompressor:
    """A bzip2 or ZIP-LZMA member's decompressor that never yields more than ``cap`` bytes per call.

    ``zipfile`` calls these decompressors without an output bound: 2 KiB of bzip2 can expand to gigabytes
    in one call, whatever sizes the directory declares. Read through ``feed``/``more`` instead.
    """

    def __init__(self, method: int, cap: int) -> None:
        self.cap = cap
        self._lzma_props: bytes | None = b"" if method == zipfile.ZIP_LZMA else None
        self._d: bz2.BZ2Decompressor | lzma.LZMADecompressor | None = (
            bz2.BZ2Decompressor() if method == zipfile.ZIP_BZIP2 else None
        )

    @property
    def eof(self) -> bool:
        return self._d is not None and self._d.eof

    @property
    def needs_input(self) -> bool:
        return self._d is None or self._d.needs_input

    def feed(self, data: bytes) -> bytes:
        """Output (at most ``cap`` bytes) after taking ``data`` in."""
        if self._d is None:
            # ZIP's LZMA header: version (2 bytes), properties size (2 bytes), then the LZMA1 properties.
            assert self._lzma_props is not None
            self._lzma_props += data
            if len(self._lzma_props) < 4:
                return b""
            psize = struct.unpack_from("<H", self._lzma_props, 2)[0]
            if len(self._lzma_props) < 4 + psize:
                return b""
            props = self._lzma_props[4 : 4 + psize]
            data = self._lzma_props[4 + psize :]
            filt = lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)  # type: ignore[attr-defined]
            self._d = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[filt])
        return self._d.decompress(data, self.cap)

    def more(self) -> bytes:
        """Output still held back from earlier input (at most ``cap`` bytes)."""
        return b"" if self._d is None else self._d.decompress(b"", self.cap)


def raw_name(cp437_name: str) -> bytes:
    """The bytes a CP437-decoded name came from."""
    return cp437_name.encode("cp437")
