"""Opening a path rea expects to be a regular file: never blocks on a FIFO or device, refuses anything else."""

from __future__ import annotations

import os
import stat

from rea.errors import ReaError

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


def not_regular(path: str, mode: int, code: str = "invalid_request", what: str = "file") -> ReaError:
    """The typed refusal of a path that is not a regular file."""
    kind = file_kind(mode)
    return ReaError(
        code,
        f"{path} is {kind}, not a regular file; rea reads a {what} here only from a regular file",
        remediation="Replace it with a regular file, or pass another path.",
        details={"path": path, "reason": "not_regular_file", "kind": kind},
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
) -> int:
    """Open ``path`` without blocking, ``fstat`` it, and return a blocking fd only if it is a regular file.

    OSError (missing, permission) propagates for the caller to type; anything but a regular file is ``code``.
    """
    extra = _OPEN_FLAGS | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags | extra, mode, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode, code, what)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
