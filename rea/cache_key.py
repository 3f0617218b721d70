"""The analysis cache's per-user secret: entries are authenticated with HMAC-SHA256 under it."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from typing import Final

import msgspec

from rea.errors import ReaError
from rea.files import open_regular

KEY_FILE: Final = "key"
KEY_BYTES: Final = 32


class CacheSecret(msgspec.Struct, frozen=True, kw_only=True):
    """The key, or why there is none usable (then the cache reads and writes nothing)."""

    path: str
    key: bytes | None
    problem: str | None = None


def _create(directory: str, path: str) -> None:
    """Publish a fresh random key with link(), so two first users never both win (0600 from mkstemp)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".key-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load_secret(directory: str, *, create: bool = True) -> CacheSecret:
    """The key kept beside the cache, created on first use; refused unless a 0600 regular file of this user.

    With ``create`` false (inspection: ``rea cache info``, ``rea doctor``) an absent key is no problem.
    """
    path = os.path.join(directory, KEY_FILE)
    try:
        if not os.path.lexists(path):
            if not create:
                return CacheSecret(path=path, key=None)
            _create(directory, path)
        fd = open_regular(path, follow=False, what="cache key")
    except ReaError as exc:
        return CacheSecret(path=path, key=None, problem=exc.message)
    except OSError as exc:
        return CacheSecret(path=path, key=None, problem=f"cannot read the cache key {path}: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            return CacheSecret(
                path=path, key=None, problem=f"the cache key {path} belongs to uid {st.st_uid}, not this user"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            return CacheSecret(
                path=path,
                key=None,
                problem=f"the cache key {path} has mode "
                f"{stat.S_IMODE(st.st_mode):04o}; only its owner may read it (0600)",
            )
        key = os.read(fd, KEY_BYTES + 1)
    except OSError as exc:
        return CacheSecret(path=path, key=None, problem=f"cannot read the cache key {path}: {exc.strerror}")
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        return CacheSecret(path=path, key=None, problem=f"the cache key {path} is not {KEY_BYTES} bytes")
    return CacheSecret(path=path, key=key)
