"""Read an APK, AAB or bare DEX once, bounded and checked, into androguard objects kept for the next call."""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import struct
import threading
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import identify
from rea.plugin import read_identified
from rea_plugins.android.model import InputKind

MAX_FILE_BYTES = 1 << 30
# One entry that androguard reads into memory (manifest, resource table, DEX, signature files).
MAX_ENTRY_BYTES = 256 << 20
MAX_ENTRIES = 200_000
MAX_DEX_FILES = 256
INFLATE_SLICE = 1 << 20
# Parsed applications kept between calls: parsing and cross-referencing a large APK takes seconds.
CACHE_SIZE = 2

DEX_NAME = re.compile(r"^classes\d*\.dex$")
AAB_DEX_NAME = re.compile(r"^[^/]+/dex/classes\d*\.dex$")
# (size field offset, offset field offset, item bytes) of the DEX header's id sections.
_DEX_SECTIONS = {
    "string_ids": (0x38, 0x3C, 4),
    "type_ids": (0x40, 0x44, 4),
    "proto_ids": (0x48, 0x4C, 12),
    "field_ids": (0x50, 0x54, 8),
    "method_ids": (0x58, 0x5C, 8),
    "class_defs": (0x60, 0x64, 32),
}
DEX_HEADER_BYTES = 0x70
# The map item type of string_data_item.
STRING_DATA_ITEM = 0x2002

# androguard is not thread-safe (its decompiler and lazy loaders mutate shared objects): one call at a time.
LOCK = threading.RLock()
_CACHE: OrderedDict[str, Loaded] = OrderedDict()
_silenced = False


class Loaded:
    """One application: its target, kind, ZIP entries and androguard objects."""

    def __init__(self, target: Target, kind: InputKind, entries: dict[str, int]) -> None:
        self.target = target
        self.kind = kind
        # ZIP entry name -> uncompressed size (declared); empty for a bare DEX.
        self.entries = entries
        self.apk: Any = None
        self.dexes: list[tuple[str, Any]] = []
        # DEX name -> (bytes, SHA-256) of its raw bytes.
        self.dex_digests: dict[str, tuple[int, str]] = {}
        self.analysis: Any = None
        self._classes: dict[str, tuple[str, Any]] | None = None
        # Method id -> (decompiled source or None, reason): paging a long method decompiles it once.
        self.sources: dict[str, tuple[str | None, str]] = {}

    def classes(self) -> dict[str, tuple[str, Any]]:
        """Class descriptor -> (DEX name, ClassDefItem); the first DEX defining a class wins, as on Android."""
        if self._classes is None:
            out: dict[str, tuple[str, Any]] = {}
            for name, dex in self.dexes:
                for cls in dex.get_classes():
                    out.setdefault(cls.get_name(), (name, cls))
            self._classes = out
        return self._classes


def silence() -> None:
    """androguard logs every step through loguru; a server's stderr is no place for that."""
    global _silenced
    if not _silenced:
        from loguru import logger

        logger.disable("androguard")
        _silenced = True


def malformed(what: str, **details: Any) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{what}; it cannot be read as an Android application",
        remediation="Check the file is an intact APK, AAB or DEX (apksigner verify, unzip -t).",
        details=details,
    )


def too_large(what: str, limit: int, **details: Any) -> ReaError:
    return ReaError(
        "resource_constraint",
        f"{what} exceeds the {limit >> 20} MiB bound",
        remediation="Inspect a smaller application, or extract its DEX files and inspect each.",
        details={"limit_bytes": limit, **details},
    )


@contextlib.contextmanager
def guarded(what: str, **details: Any) -> Iterator[None]:
    """Turn whatever androguard raises on hostile bytes into a typed error that never quotes the exception."""
    try:
        yield
    except ReaError:
        raise
    except MemoryError:
        raise too_large(what, MAX_ENTRY_BYTES, **details) from None
    except RecursionError:
        raise malformed(f"{what} nests too deeply", **details) from None
    except Exception:  # any library failure on hostile input is a malformed target
        raise malformed(f"{what} is malformed", **details) from None


def load(path: str, ctx: CallContext) -> Loaded:
    """The parsed application at ``path`` (cached by SHA-256); typed errors for anything unreadable."""
    target = identify(path, ctx)
    with LOCK:
        hit = _CACHE.get(target.sha256)
        if hit is not None:
            _CACHE.move_to_end(target.sha256)
            return hit
    if target.size > MAX_FILE_BYTES:
        raise too_large("the file", MAX_FILE_BYTES, size=target.size)
    data = read_identified(
        target,
        MAX_FILE_BYTES,
        code="artifact_changed",
        remediation="Call again once the file is no longer being written.",
    )
    silence()
    with LOCK:
        loaded = _parse(target, data, ctx)
        _CACHE[target.sha256] = loaded
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return loaded


def _parse(target: Target, data: bytes, ctx: CallContext) -> Loaded:
    if data.startswith(b"dex\n"):
        loaded = Loaded(target, "dex", {})
        loaded.dexes = [(target.name, _dex(data, target.name, None))]
        loaded.dex_digests[target.name] = (len(data), target.sha256)
    elif data.startswith(b"PK\x03\x04"):
        loaded = _parse_zip(target, data, ctx)
    else:
        raise ReaError(
            "unsupported_target",
            f"{target.path} is neither an APK/AAB (ZIP) nor a DEX file",
            remediation="Pass an .apk, .aab or .dex file.",
            details={"format": target.format},
        )
    ctx.check("cross-referencing code")
    from androguard.core.analysis.analysis import Analysis  # type: ignore[import-untyped]

    with guarded("the DEX code", dex=[n for n, _ in loaded.dexes]):
        analysis = Analysis()
        for _, dex in loaded.dexes:
            analysis.add(dex)
        analysis.create_xref()
    loaded.analysis = analysis
    return loaded


def _parse_zip(target: Target, data: bytes, ctx: CallContext) -> Loaded:
    from androguard.core.apk import APK  # type: ignore[import-untyped]

    entries = _check_zip(data)
    names = set(entries)
    kind: InputKind = (
        "aab" if "base/manifest/AndroidManifest.xml" in names and "AndroidManifest.xml" not in names else "apk"
    )
    if kind == "apk" and "AndroidManifest.xml" not in names:
        raise malformed("the archive has no AndroidManifest.xml", entries=len(names))
    with guarded("the ZIP structure"):
        apk = APK(data, raw=True, skip_analysis=True)
    # androguard inflates entries without an output bound: check each one it will read, with one.
    for name in sorted(names):
        if (
            name in ("AndroidManifest.xml", "resources.arsc")
            or name.startswith("META-INF/")
            or DEX_NAME.match(name)
            or AAB_DEX_NAME.match(name)
        ):
            ctx.check("checking entries")
            _check_entry(apk.zip, name)
    if kind == "apk":
        # skip_analysis deferred the manifest until its entry passed the check above; parse it now.
        with guarded("AndroidManifest.xml (binary XML)", entry="AndroidManifest.xml"):
            apk._apk_analysis()
        if not apk.is_valid_APK():
            raise malformed(
                "AndroidManifest.xml is not valid binary XML with a <manifest> root", entry="AndroidManifest.xml"
            )
    loaded = Loaded(target, kind, entries)
    loaded.apk = apk
    pattern = DEX_NAME if kind == "apk" else AAB_DEX_NAME
    dex_names = sorted((n for n in names if pattern.match(n)), key=_dex_order)
    if len(dex_names) > MAX_DEX_FILES:
        raise ReaError(
            "resource_constraint",
            f"the archive holds {len(dex_names)} DEX files (bound {MAX_DEX_FILES})",
            details={"dex_files": len(dex_names)},
        )
    api = None
    if kind == "apk":
        with guarded("AndroidManifest.xml (binary XML)", entry="AndroidManifest.xml"):
            sdk = apk.get_target_sdk_version()
            api = int(sdk) if sdk and str(sdk).isdigit() else None
    for name in dex_names:
        ctx.check("reading DEX files")
        with guarded(name, entry=name):
            raw = apk.zip.read(name)
        loaded.dexes.append((name, _dex(raw, name, api)))
        loaded.dex_digests[name] = (len(raw), hashlib.sha256(raw).hexdigest())
    return loaded


def _dex_order(name: str) -> tuple[str, int]:
    # classes.dex, classes2.dex, ... classes10.dex: numeric order, as the runtime loads them.
    base = name.rsplit("/", 1)[-1]
    digits = base[len("classes") : -len(".dex")]
    return name[: len(name) - len(base)], int(digits) if digits else 1


def _check_zip(data: bytes) -> dict[str, int]:
    """Entry names and declared sizes; refuse duplicates, too many entries and impossible sizes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        OSError,
        ValueError,
        EOFError,
        struct.error,
        NotImplementedError,
        UnicodeDecodeError,
        OverflowError,
    ):
        raise malformed("the ZIP central directory is unreadable") from None
    if len(infos) > MAX_ENTRIES:
        raise ReaError(
            "resource_constraint",
            f"the archive lists {len(infos)} entries (bound {MAX_ENTRIES})",
            details={"entries": len(infos)},
        )
    out: dict[str, int] = {}
    duplicates: list[str] = []
    for info in infos:
        if info.filename in out:
            duplicates.append(info.filename)
        out[info.filename] = info.file_size
    if duplicates:
        # Readers disagree on which copy counts (Android refuses such packages): never pick one silently.
        raise ReaError(
            "unsupported_target",
            f"the archive lists {len(duplicates)} entry name(s) more than once",
            remediation="Rebuild the package; Android refuses archives with duplicate entries.",
            details={"duplicates": sorted(set(duplicates))[:20]},
        )
    return out


def _check_entry(zentry: Any, name: str) -> None:
    """Inflate ``name`` exactly as androguard will, with an output bound, so a bomb fails here, typed."""
    try:
        local = zentry.get_local_header_dict(name)
        central = zentry.get_central_directory_entry_dict(name)
    except KeyError:
        raise malformed(f"entry {name} has no matching local header", entry=name) from None
    use_central = local["compressed_size"] == 0 or local["uncompressed_size"] == 0
    src = central if use_central else local
    compressed, declared = src["compressed_size"], src["uncompressed_size"]
    method = local["compression_method"]
    if declared > MAX_ENTRY_BYTES:
        raise too_large(f"entry {name}", MAX_ENTRY_BYTES, entry=name, declared_bytes=declared)
    if method == 0 or (method != 8 and compressed == declared):
        return  # stored: a slice of the file, bounded by its size
    start = (
        central["relative_offset_of_local_file_header"] + 30 + local["file_name_length"] + local["extra_field_length"]
    )
    view = zentry.zip.getbuffer()[start : start + compressed]
    pending: Any = view
    inflater = zlib.decompressobj(-15)
    total = 0
    try:
        # Counted in slices and dropped: checking a bomb must not hold what it inflates to.
        while pending and not inflater.eof:
            total += len(inflater.decompress(pending, INFLATE_SLICE))
            if total > MAX_ENTRY_BYTES:
                raise too_large(f"entry {name} inflates beyond its bound; it", MAX_ENTRY_BYTES, entry=name)
            pending = inflater.unconsumed_tail
    except zlib.error:
        return  # androguard fails on it too, inside a guarded read
    finally:
        del pending
        view.release()  # an exported buffer would pin the archive's BytesIO


def _dex(data: bytes, name: str, api: int | None) -> Any:
    """An androguard DEX of ``data`` after its header's sizes and offsets are checked against its length."""
    _check_dex_header(data, name)
    from androguard.core.dex import DEX  # type: ignore[import-untyped]

    with guarded(name, dex=name):
        return DEX(data, using_api=api) if api else DEX(data)


def _check_dex_header(data: bytes, name: str) -> None:
    if len(data) < DEX_HEADER_BYTES or not data.startswith(b"dex\n") or data[7] != 0:
        raise malformed(f"{name} is not a DEX file (bad magic or short header)", dex=name)
    if len(data) > MAX_ENTRY_BYTES:
        raise too_large(name, MAX_ENTRY_BYTES, dex=name)
    (checksum,) = struct.unpack_from("<I", data, 8)
    if checksum != zlib.adler32(memoryview(data)[12:]):
        # androguard refuses it too; saying which check failed helps more than "malformed".
        raise malformed(f"{name}'s Adler-32 checksum does not match its bytes (damaged or edited)", dex=name)
    (file_size, header_size) = struct.unpack_from("<II", data, 0x20)
    if header_size != DEX_HEADER_BYTES or file_size > len(data):
        raise malformed(
            f"{name} declares a size its bytes do not have", dex=name, declared_bytes=file_size, actual_bytes=len(data)
        )
    (map_off,) = struct.unpack_from("<I", data, 0x34)
    if map_off + 4 > len(data):
        raise malformed(f"{name} points its map list outside the file", dex=name)
    (map_count,) = struct.unpack_from("<I", data, map_off)
    if map_off + 4 + 12 * map_count > len(data):
        raise malformed(f"{name} declares more map items than its bytes hold", dex=name)
    for i in range(map_count):
        kind, _unused, size, offset = struct.unpack_from("<HHII", data, map_off + 4 + 12 * i)
        if kind == STRING_DATA_ITEM:
            _check_string_data(data, name, offset, size)
    for section, (size_at, off_at, item) in _DEX_SECTIONS.items():
        size, off = struct.unpack_from("<II", data, size_at)[0], struct.unpack_from("<I", data, off_at)[0]
        if size and off + size * item > len(data):
            raise malformed(f"{name} declares a {section} section beyond its end", dex=name, section=section)
    data_size, data_off = struct.unpack_from("<II", data, 0x68)
    if data_off + data_size > len(data):
        raise malformed(f"{name} declares a data section beyond its end", dex=name)


def _check_string_data(data: bytes, name: str, offset: int, count: int) -> None:
    """Walk the string data as androguard will: each a ULEB128 length, then bytes up to a NUL.

    androguard's reader of a NUL-terminated string loops forever once it reaches the end of the bytes; a map item
    that declares more strings than the data holds must fail here instead.
    """
    pos, end = offset, len(data)
    for _ in range(count):
        for _byte in range(5):  # a ULEB128 is at most 5 bytes; the last one has its high bit clear
            if pos >= end:
                raise malformed(f"{name}'s string data runs past its end", dex=name)
            pos += 1
            if data[pos - 1] < 0x80:
                break
        nul = data.find(b"\0", pos)
        if nul < 0:
            raise malformed(f"{name}'s string data runs past its end", dex=name)
        pos = nul + 1


def clear_cache() -> None:
    with LOCK:
        _CACHE.clear()
