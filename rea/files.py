"""Opening a path rea expects to be a regular file: never blocks on a FIFO or device, refuses anything else.

Every path the server reads goes through ``open_regular`` (or ``read_regular``/``require_regular``, built on it):
a FIFO, a device or a socket opened with a plain ``open`` can block forever, and inside a C extension that holds
the GIL (yara's compiler did) it froze the whole server. Path arguments are also checked by ``refuse_special``
when the kernel resolves them, before any handler runs.
"""

from __future__ import annotations

import os
import stat

from rea.errors import ReaError
from rea.errors import issue
from rea.records import JSONValue

# O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; regular files ignore it.
_OPEN_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def file_kind(mode: int) -> str:
    """A reader's name for what a mode says the path is."""
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def not_regular(
    path: str, mode: int, code: str = "invalid_request", what: str = "file", field: str | None = None
) -> ReaError:
    """The typed refusal of a path that is not a regular file (``field``: the argument that named it)."""
    kind = file_kind(mode)
    details: dict[str, JSONValue] = {"path": path, "reason": "not_regular_file", "kind": kind}
    if field is not None:
        details["issues"] = [issue(field, "invalid_value", f"{kind}, not a regular file")]
    return ReaError(
        code,
        f"{path} is {kind}, not a regular file; rea reads a {what} here only from a regular file",
        remediation="Replace it with a regular file, or pass another path.",
        details=details,
    )


def refuse_special(path: str, field: str) -> None:
    """Refuse a path argument that names a FIFO, a device or a socket, without opening it.

    ``stat`` never blocks, and a missing path, a regular file or a folder passes (tools that take a folder or a
    destination read it themselves, through ``open_regular``). The kernel applies it to every path argument.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # absent or unreadable: the tool says so in its own words
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        kind = file_kind(st.st_mode)
        raise ReaError(
            "invalid_request",
            f"{field} {path} is {kind}, not a regular file or a folder; rea does not wait on it",
            remediation=f"Pass a regular file (or a folder, where {field} takes one) instead.",
            details={
                "path": path,
                "reason": "not_regular_file",
                "kind": kind,
                "issues": [issue(field, "invalid_value", f"{kind}, not a regular file")],
            },
        )


def open_regular(
    path: str,
    flags: int = os.O_RDONLY,
    mode: int = 0o600,
    *,
    dir_fd: int | None = None,
    follow: bool = True,
    code: str = "invalid_request",
    what: str = "file",
    field: str | None = None,
) -> int:
    """Open ``path`` without blocking, ``fstat`` it, and return a blocking fd only if it is a regular file.

    OSError (missing, permission) propagates for the caller to type; anything but a regular file is ``code``.
    """
    extra = _OPEN_FLAGS | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags | extra, mode, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode, code, what, field)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(
    path: str, max_bytes: int, *, code: str = "invalid_request", what: str = "file", field: str | None = None
) -> bytes:
    """The bytes of regular file ``path``, opened through ``open_regular``; ``resource_constraint`` past ``max_bytes``
    (checked before reading, and again on what was read: the file may grow). OSError propagates."""
    with os.fdopen(open_regular(path, code=code, what=what, field=field), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        where = f"{field} " if field else ""
        raise ReaError(
            "resource_constraint",
            f"{where}{path} is larger than the {max_bytes}-byte limit for a {what}",
            remediation=f"Pass a smaller {what} (at most {max_bytes} bytes).",
            details={"path": path, "resource": "file_size", "reported_limits": {"max_bytes": max_bytes}},
        )
    return data


def require_regular(
    path: str, *, missing_ok: bool = False, code: str = "invalid_request", what: str = "file", field: str | None = None
) -> None:
    """Check through ``open_regular`` that ``path`` is a regular file (or absent, with ``missing_ok``), for readers
    that only take a path (SQLite, an engine's loader). OSError other than a missing file propagates."""
    try:
        os.close(open_regular(path, code=code, what=what, field=field))
    except FileNotFoundError:
        if not missing_ok:
            raise


def fsync_dir(directory: str) -> None:
    """Make a rename in ``directory`` durable, where the filesystem allows fsync on a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory; the rename is still atomic
        pass
    finally:
        os.close(fd)
