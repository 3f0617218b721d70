"""What a killed rea leaves behind, marked with its owner, and removed by the next start that can prove it dead.

An owned process's private directory, an export's staging file and a corpus triage's staging directory are
removed by the process that made them; a server killed with SIGKILL cannot. Each therefore names its owner (pid,
start time, boot and uid): a private directory by a marker file inside it, a staging file by a note in the
temporary directory, a staging directory (which may lie anywhere, e.g. beside a corpus index) by both. A later start
removes only what this user owns and whose owner is provably gone; a live server's and another user's are never
touched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from typing import TypeVar

import msgspec

from rea.process import procfs

OWNER_FILE = ".rea-owner"
NOTE_PREFIX = "rea-staging-"
# Only names rea gives its own things; output directories (``rea-extract-*``) are the user's to keep.
PRIVATE_PREFIX = "rea-"
EXTRACT_PREFIX = "rea-extract-"
KEPT_PREFIXES = (EXTRACT_PREFIX, NOTE_PREFIX)
MAX_MARKER_BYTES = 4096
MAX_ENTRIES = 20_000

T = TypeVar("T")


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    """One process for good: pid and start time within one boot, and the user it ran as."""

    pid: int
    start: int
    boot: str
    uid: int

    def gone(self) -> bool:
        """True only when the owner provably no longer runs (another boot, or its pid names another process)."""
        if self.boot != _boot_id():
            return True
        now = procfs.read(self.pid)
        return now is None or now.start != self.start or now.state == "Z"


class PrivateMark(Owner, frozen=True, kw_only=True):
    """A private directory's marker: its owner, and whether it can hold secrets (removed before the rest)."""

    holds_secrets: bool = False


class StagingNote(msgspec.Struct, frozen=True, kw_only=True):
    owner: Owner
    path: str
    prefix: str


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def current() -> Owner | None:
    """This process as an owner; None where there is no /proc to prove it later."""
    me = procfs.read(os.getpid())
    boot = _boot_id()
    if me is None or not boot:
        return None
    return Owner(pid=me.pid, start=me.start, boot=boot, uid=os.getuid())


def _write_new(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def mark(directory: str, holds_secrets: bool = False) -> None:
    """Name this process as the owner of ``directory`` (a private directory it just made)."""
    owner = current()
    if owner is not None:
        marker = PrivateMark(**msgspec.structs.asdict(owner), holds_secrets=holds_secrets)
        with contextlib.suppress(OSError):
            _write_new(os.path.join(directory, OWNER_FILE), msgspec.json.encode(marker))


def _read_small(path: str) -> bytes | None:
    """A small regular file of this user, read without following links or blocking (None otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > MAX_MARKER_BYTES:
            return None
        return os.read(fd, MAX_MARKER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def _decode(data: bytes | None, kind: type[T]) -> T | None:
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


@contextlib.contextmanager
def staging_noted(path: str, prefix: str) -> Iterator[None]:
    """Note ``path`` (a staging file named ``prefix``..., or a staging directory ``mark``ed by this process) as this
    process's while the block runs: a start after this process was killed removes it."""
    owner = current()
    note = os.path.join(tempfile.gettempdir(), f"{NOTE_PREFIX}{os.getpid()}-{secrets.token_hex(6)}")
    written = False
    if owner is not None:
        with contextlib.suppress(OSError):
            _write_new(note, msgspec.json.encode(StagingNote(owner=owner, path=os.path.abspath(path), prefix=prefix)))
            written = True
    try:
        yield
    finally:
        if written:
            with contextlib.suppress(OSError):
                os.unlink(note)


def _remove_staging(note: StagingNote) -> bool:
    """Remove the noted staging file or directory if it still is one: this user's, with the noted name prefix (a
    directory also with the note's owner in its marker file, so a folder that merely took the name is kept; an
    extraction's output folder, which holds only the archive's files, by its note alone)."""
    if not os.path.basename(note.path).startswith(note.prefix):
        return False
    if not (note.prefix.startswith(".rea-") or note.prefix == EXTRACT_PREFIX):
        return False
    try:
        st = os.lstat(note.path)
    except OSError:
        return False
    if st.st_uid != os.getuid():
        return False
    if stat.S_ISDIR(st.st_mode):
        if note.prefix != EXTRACT_PREFIX:
            marker = _decode(_read_small(os.path.join(note.path, OWNER_FILE)), PrivateMark)
            if marker is None or (marker.pid, marker.start, marker.boot, marker.uid) != (
                note.owner.pid,
                note.owner.start,
                note.owner.boot,
                note.owner.uid,
            ):
                return False
        shutil.rmtree(note.path, ignore_errors=True)
        return not os.path.lexists(note.path)
    if not stat.S_ISREG(st.st_mode):
        return False
    with contextlib.suppress(OSError):
        os.unlink(note.path)
        return True
    return False


def sweep(directory: str | None = None) -> list[str]:
    """Remove what dead owners of this user left in the temporary directory (directories that can hold secrets,
    such as a browser profile, first), after ending the processes they left in their pids cgroups; the paths
    removed."""
    from rea.process import confine

    confine.sweep()  # first: a sandbox still running would hold its private directory
    root = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(root)[:MAX_ENTRIES]
    except OSError:
        return removed
    uid = os.getuid()
    dead: list[tuple[bool, str]] = []
    for name in names:
        if not name.startswith(PRIVATE_PREFIX):
            continue
        path = os.path.join(root, name)
        if name.startswith(NOTE_PREFIX):
            note = _decode(_read_small(path), StagingNote)
            if note is not None and note.owner.uid == uid and note.owner.gone():
                if _remove_staging(note):
                    removed.append(note.path)
                with contextlib.suppress(OSError):
                    os.unlink(path)
            continue
        if name.startswith(KEPT_PREFIXES):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            continue
        marker = _decode(_read_small(os.path.join(path, OWNER_FILE)), PrivateMark)
        if marker is not None and marker.uid == uid and marker.gone():
            dead.append((not marker.holds_secrets, path))
    for _, path in sorted(dead):
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
