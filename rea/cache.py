"""The analysis cache: whole-program analyses (and the CLI's Evidence) kept across processes.

A provider persists what it computed for a target (an index, a parsed model) under a ``CacheKey`` that
names everything the value depends on: the target's SHA-256, the provider's id and version, the
analysis-profile digest, and the kind of value with its own format version. One file per entry under
the user cache directory (``rea.config.cache_dir``), named by the key's digest:

    MAGIC | header length (4 bytes, big-endian) | header (msgpack) | payload (msgpack) | tag (32 bytes)

The tag is HMAC-SHA256 of everything before it under a per-user key kept 0600 beside the entries
(``rea.cache_key``): an entry written by anyone without that key is not authentic. The header repeats the
key, the entry format version, the value type's fingerprint and the payload's length and SHA-256. A load
checks the tag first, then all of them, and decodes the payload into the requested type; an entry that
fails any check (forged, corrupt, truncated, written for another key or another type layout) is removed and
reported as a miss, never trusted. Without a usable key the cache reads and writes nothing.
Writers publish by rename from a private temporary file, so readers
and concurrent writers of the same entry only ever see whole entries. The directory is bounded in bytes:
after a store, the least recently used entries (by modification time, which a hit refreshes) are evicted
under an exclusive ``flock``. A cache failure (read-only or full disk) never fails an analysis: the value
is simply not kept.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac
import os
import re
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import TypeVar

import msgspec

from rea.cache_key import CacheSecret
from rea.cache_key import load_secret
from rea.canonical import canonical_digest
from rea.errors import ReaError
from rea.files import open_regular

if TYPE_CHECKING:
    from rea.evidence import Evidence
    from rea.providers import AnalysisProvider
    from rea.providers import ProviderDescriptor
    from rea.target import Target

T = TypeVar("T")

# 2: entries end with an HMAC tag (format 1 entries are misses, removed on load).
FORMAT_VERSION: Final = 2
TAG_BYTES: Final = 32
MAGIC: Final = b"REA-CACHE\n"
ENTRIES: Final = "entries"
SUFFIX: Final = ".entry"
LOCK_FILE: Final = ".lock"
# The running total of entry bytes, kept so a store need not list the directory (corrected by each eviction).
USAGE_FILE: Final = ".usage"
# Eviction frees down to this share of the bound, so the next few stores do not evict again.
LOW_WATER: Final = 0.9
TEMP_PREFIX: Final = ".tmp-"
# A temporary file this old belongs to a writer that died before publishing it.
STALE_TEMP_S: Final = 3600.0
MAX_HEADER_BYTES: Final = 64 << 10
EVICTION_LOCK_TIMEOUT_S: Final = 10.0
EVIDENCE_KIND: Final = "evidence/1"
_ENTRY_NAME = re.compile(r"^[0-9a-f]{64}\.entry$")
_HEADER_LENGTH = struct.Struct(">I")


class CacheKey(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a cached value depends on; equal keys name the same entry."""

    # What the value is, with its own format version (e.g. "native-program-index/1"): bump it when the
    # value's meaning changes without its type changing.
    kind: str
    target_sha256: str
    provider_id: str
    provider_version: str
    profile_digest: str

    @classmethod
    def for_target(cls, target: Target, provider: ProviderDescriptor, profile_digest: str, kind: str) -> CacheKey:
        """The key of ``kind`` computed by ``provider`` for ``target`` under the analysis profile ``profile_digest``."""
        return cls(
            kind=kind,
            target_sha256=target.sha256,
            provider_id=provider.id,
            provider_version=provider.version,
            profile_digest=profile_digest,
        )

    @classmethod
    def for_evidence(cls, evidence_id: str) -> CacheKey:
        """The key of a persisted Evidence record (the CLI's retained Evidence)."""
        return cls(
            kind=EVIDENCE_KIND,
            target_sha256=evidence_id.removeprefix("ev_"),
            provider_id="rea",
            provider_version=str(FORMAT_VERSION),
            profile_digest="",
        )

    def digest(self) -> str:
        """The entry's file name (without suffix): the SHA-256 of the key's canonical JSON."""
        return canonical_digest(self)


class _Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format_version: int
    key: CacheKey
    value_type: str
    payload_bytes: int
    payload_sha256: str
    created: float


class KindUsage(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    entries: int
    bytes: int


class CacheInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What ``rea cache info`` shows."""

    directory: str
    enabled: bool
    max_bytes: int
    entries: int
    bytes: int
    kinds: list[KindUsage]
    # Files that are not valid entries (removed on their next load or by ``clear``).
    unreadable: int
    oldest_use: float | None
    newest_use: float | None
    # Why entries cannot be authenticated (the key is missing, not private, or not this user's): then none is read.
    key_problem: str | None = None


class ClearOutcome(msgspec.Struct, frozen=True, kw_only=True):
    directory: str
    removed_entries: int
    removed_bytes: int


def profile_digest(provider: AnalysisProvider, target: Target) -> str:
    """The digest of ``provider``'s analysis profile for ``target``: the same one its Evidence carries."""
    from rea.evidence import ProviderIdentity
    from rea.evidence import make_profile

    d = provider.descriptor
    return make_profile(
        ProviderIdentity(id=d.id, name=d.name, version=d.version), provider.analysis_profile(target)
    ).digest


_FINGERPRINTS: dict[Any, str] = {}


def _layout(schema: Any) -> Any:
    """A JSON schema without its prose (docstrings are not layout)."""
    if isinstance(schema, dict):
        return {k: _layout(v) for k, v in schema.items() if k not in ("description", "title", "examples")}
    if isinstance(schema, list):
        return [_layout(v) for v in schema]
    return schema


def _fingerprint(value_type: Any) -> str:
    """The value type's name and a digest of its schema: a changed layout never decodes old entries."""
    found = _FINGERPRINTS.get(value_type)
    if found is None:
        name = getattr(value_type, "__qualname__", None) or repr(value_type)
        schema = msgspec.json.encode(_layout(msgspec.json.schema(value_type)))
        found = _FINGERPRINTS[value_type] = f"{name}:{hashlib.sha256(schema).hexdigest()[:32]}"
    return found


class AnalysisCache:
    """Size-bounded, validated, concurrency-safe entries under ``directory`` (``max_bytes`` 0: off)."""

    def __init__(self, directory: str, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.entries_dir = os.path.join(directory, ENTRIES)
        self._secret: CacheSecret | None = None
        self._secret_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def secret(self) -> CacheSecret:
        """The authentication key (loaded, or created, once per cache object)."""
        with self._secret_lock:
            if self._secret is None:
                self._secret = load_secret(self.directory)
            return self._secret

    def _tag(self, key: bytes, *parts: bytes | memoryview) -> bytes:
        mac = hmac.new(key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.digest()

    def path(self, key: CacheKey) -> str:
        return os.path.join(self.entries_dir, key.digest() + SUFFIX)

    # -- reading ----------------------------------------------------------------------------------------

    def load(self, key: CacheKey, value_type: type[T]) -> T | None:
        """The value stored under ``key`` decoded as ``value_type``, or None (a miss; a bad entry is removed)."""
        if not self.enabled:
            return None
        secret = self.secret().key
        if secret is None:
            return None  # nothing can be authenticated: every entry is a miss (``info`` says why)
        path = self.path(key)
        try:
            fd = open_regular(path, follow=False, what="cache entry")
        except (OSError, ReaError):  # absent, or not a regular file (a FIFO is never waited on): a miss
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                data = fh.read(size + 1) if size <= max(self.max_bytes, MAX_HEADER_BYTES) else b""
        except OSError:
            return None
        value = self._decode(data, key, value_type, secret)
        if value is None:
            self._discard(path)
            return None
        # A hit is a use: the modification time orders eviction (access times are often not kept).
        with contextlib.suppress(OSError):
            os.utime(path)
        return value

    def _decode(self, data: bytes, key: CacheKey, value_type: type[T], secret: bytes) -> T | None:
        if len(data) < TAG_BYTES:
            return None
        body = memoryview(data)[:-TAG_BYTES]
        # Authenticity first: a forged entry with a coherent header and payload digest fails here.
        if not hmac.compare_digest(self._tag(secret, body), data[-TAG_BYTES:]):
            return None
        # Read in place: a copy of the body would double a large entry's memory while it is decoded.
        header = _read_header(body)
        if header is None or header.format_version != FORMAT_VERSION or header.key != key:
            return None
        if header.value_type != _fingerprint(value_type):
            return None
        start = len(MAGIC) + _HEADER_LENGTH.size + _HEADER_LENGTH.unpack_from(body, len(MAGIC))[0]
        payload = body[start:]
        if len(payload) != header.payload_bytes or hashlib.sha256(payload).hexdigest() != header.payload_sha256:
            return None
        try:
            return msgspec.msgpack.decode(payload, type=value_type)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    # -- writing ----------------------------------------------------------------------------------------

    def store(self, key: CacheKey, value: Any, value_type: Any = None) -> bool:
        """Keep ``value`` under ``key``; False when it was not kept (cache off, value too large, disk error).

        ``value_type`` is the type ``load`` will ask for (default ``type(value)``; give it for containers such
        as ``list[Record]``).
        """
        if not self.enabled:
            return False
        secret = self.secret().key
        if secret is None:
            return False
        payload = msgspec.msgpack.encode(value)
        header = msgspec.msgpack.encode(
            _Header(
                format_version=FORMAT_VERSION,
                key=key,
                value_type=_fingerprint(value_type or type(value)),
                payload_bytes=len(payload),
                payload_sha256=hashlib.sha256(payload).hexdigest(),
                created=time.time(),
            )
        )
        size = len(MAGIC) + _HEADER_LENGTH.size + len(header) + len(payload) + TAG_BYTES
        if size > self.max_bytes:
            return False
        path = self.path(key)
        try:
            os.makedirs(self.entries_dir, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=self.entries_dir)
        except OSError:
            return False
        replaced = 0
        with contextlib.suppress(OSError):
            replaced = os.stat(path).st_size
        try:
            with os.fdopen(fd, "wb") as fh:
                prefix = MAGIC + _HEADER_LENGTH.pack(len(header))
                fh.write(prefix)
                fh.write(header)
                fh.write(payload)
                fh.write(self._tag(secret, prefix, header, payload))
            # Rename publishes a whole entry: readers and a concurrent writer of the same key never see a part.
            os.replace(tmp, path)
        except OSError:
            self._discard(tmp)
            return False
        if self._account(size - replaced) > self.max_bytes:
            self._evict(keep=path)
        return True

    # -- evidence (the CLI's retained records) -----------------------------------------------------------

    def store_evidence(self, records: list[Evidence]) -> int:
        """Persist Evidence records by id; how many were kept."""
        from rea.evidence import Evidence

        kept = 0
        for ev in records:
            if not isinstance(ev, Evidence):
                continue
            key = CacheKey.for_evidence(ev.evidence_id)
            try:
                os.utime(self.path(key))  # already kept (read back by this session, or produced again): a use
                kept += 1
                continue
            except OSError:
                pass
            if self.store(key, ev):
                kept += 1
        return kept

    def load_evidence(self, evidence_id: str) -> Evidence | None:
        """A persisted record, authenticated like an import (re-hashed; a mismatch is refused, not returned)."""
        from rea import evidence as ev_mod
        from rea.errors import ReaError

        key = CacheKey.for_evidence(evidence_id)
        ev = self.load(key, ev_mod.Evidence)
        if ev is None:
            return None
        try:
            if ev.evidence_id != evidence_id:
                raise ReaError(
                    "evidence_integrity_mismatch",
                    f"the cached record for {evidence_id} names another id",
                    remediation="Repeat the record's producer; the cached copy was removed.",
                    details={"evidence_id": evidence_id, "reason": "id_mismatch"},
                )
            return ev_mod.validate(ev)
        except ReaError:
            self._discard(self.path(key))
            raise

    # -- the bound -----------------------------------------------------------------------------------

    def _scan(self) -> Iterator[tuple[str, os.stat_result, bool]]:
        """(path, stat, is_entry) of every entry and temporary file."""
        try:
            with os.scandir(self.entries_dir) as it:
                for item in it:
                    entry = _ENTRY_NAME.match(item.name) is not None
                    if not entry and not item.name.startswith(TEMP_PREFIX):
                        continue
                    with contextlib.suppress(OSError):
                        yield item.path, item.stat(follow_symlinks=False), entry
        except OSError:
            return

    def _account(self, delta: int) -> int:
        """Add ``delta`` to the running total and return it (the exact total when there is none yet)."""
        try:
            fd = os.open(os.path.join(self.directory, USAGE_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return self.max_bytes + 1  # no total to trust: let eviction measure
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, 32, 0)
            total = int(raw) + delta if raw.strip().isdigit() else self._measure()
            os.pwrite(fd, b"%020d" % max(total, 0), 0)
            return total
        except (OSError, ValueError):
            return self.max_bytes + 1
        finally:
            os.close(fd)

    def _measure(self) -> int:
        return sum(st.st_size for _, st, entry in self._scan() if entry)

    def _set_total(self, total: int) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(os.path.join(self.directory, USAGE_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.pwrite(fd, b"%020d" % total, 0)
            finally:
                os.close(fd)

    def _evict(self, keep: str | None = None) -> None:
        """Remove the least recently used entries until the total is under the bound (stale temp files too)."""
        with self._locked() as locked:
            if not locked:
                return  # another process is evicting now
            now = time.time()
            files = list(self._scan())
            for path, st, entry in files:
                if not entry and now - st.st_mtime > STALE_TEMP_S:
                    self._discard(path)
            entries = sorted((st.st_mtime, path, st.st_size) for path, st, entry in files if entry)
            total = sum(size for _, _, size in entries)
            if total > self.max_bytes:
                for _, path, size in entries:
                    if total <= self.max_bytes * LOW_WATER:
                        break
                    if path == keep:
                        continue
                    self._discard(path)
                    total -= size
            self._set_total(total)

    @contextlib.contextmanager
    def _locked(self, timeout: float = EVICTION_LOCK_TIMEOUT_S) -> Iterator[bool]:
        """An exclusive flock of the directory's lock file (yields False when it cannot be had in time)."""
        try:
            os.makedirs(self.entries_dir, mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(self.directory, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            yield False
            return
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                        yield False
                        return
                    time.sleep(0.01)
            yield True
        finally:
            os.close(fd)

    @staticmethod
    def _discard(path: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)

    # -- inspection ---------------------------------------------------------------------------------------

    def info(self) -> CacheInfo:
        """Entries, bytes and kinds (read from each entry's header), and the bound."""
        kinds: dict[str, list[int]] = {}
        entries = total = unreadable = 0
        uses: list[float] = []
        for path, st, entry in self._scan():
            if not entry:
                continue
            header = _read_header_file(path)
            if header is None or header.format_version != FORMAT_VERSION:
                unreadable += 1
                continue
            entries += 1
            total += st.st_size
            usage = kinds.setdefault(header.key.kind, [0, 0])
            usage[0] += 1
            usage[1] += st.st_size
            uses.append(st.st_mtime)
        by_kind = [KindUsage(kind=k, entries=v[0], bytes=v[1]) for k, v in sorted(kinds.items())]
        return CacheInfo(
            directory=self.directory,
            enabled=self.enabled,
            max_bytes=self.max_bytes,
            entries=entries,
            bytes=total,
            kinds=by_kind,
            unreadable=unreadable,
            oldest_use=min(uses) if uses else None,
            newest_use=max(uses) if uses else None,
            key_problem=load_secret(self.directory, create=False).problem if self.enabled else None,
        )

    def clear(self) -> ClearOutcome:
        """Remove every entry (and leftover temporary file); what was removed."""
        removed = freed = 0
        with self._locked():
            for path, st, entry in list(self._scan()):
                self._discard(path)
                if entry:
                    removed += 1
                    freed += st.st_size
            self._set_total(self._measure())
        return ClearOutcome(directory=self.directory, removed_entries=removed, removed_bytes=freed)


def _read_header(data: bytes | memoryview) -> _Header | None:
    if len(data) < len(MAGIC) + _HEADER_LENGTH.size or bytes(data[: len(MAGIC)]) != MAGIC:
        return None
    (length,) = _HEADER_LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _HEADER_LENGTH.size
    if length > MAX_HEADER_BYTES or start + length > len(data):
        return None
    try:
        return msgspec.msgpack.decode(data[start : start + length], type=_Header)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _read_header_file(path: str) -> _Header | None:
    try:
        with os.fdopen(open_regular(path, follow=False, what="cache entry"), "rb") as fh:
            head = fh.read(len(MAGIC) + _HEADER_LENGTH.size + MAX_HEADER_BYTES)
    except (OSError, ReaError):
        return None
    if len(head) < len(MAGIC) + _HEADER_LENGTH.size:
        return None
    (length,) = _HEADER_LENGTH.unpack_from(head, len(MAGIC))
    return _read_header(head[: len(MAGIC) + _HEADER_LENGTH.size + length])


_DEFAULT: dict[tuple[str, int], AnalysisCache] = {}
_DEFAULT_LOCK = threading.Lock()


def default_cache(env: Mapping[str, str] | None = None) -> AnalysisCache:
    """The cache the settings name (``REA_CACHE_DIR``, ``REA_CACHE_MAX_BYTES``); ``configuration_invalid`` if bad."""
    from rea.config import CACHE_MAX_BYTES
    from rea.config import cache_dir

    env = os.environ if env is None else env
    where = (cache_dir(env), int(CACHE_MAX_BYTES.read(env)))
    with _DEFAULT_LOCK:
        found = _DEFAULT.get(where)
        if found is None:
            found = _DEFAULT[where] = AnalysisCache(*where)
        return found


__all__ = ["AnalysisCache", "CacheInfo", "CacheKey", "ClearOutcome", "default_cache", "profile_digest"]
