"""Reading a SQLite database from an isolated copy: the original is never opened by SQLite, never written.

SQLite writes beside the file it opens (a -shm index, a checkpoint of the WAL at close, a hot journal rolled
back), so the database and its write-ahead log are copied into a private directory first, the main file checked
against the hash rea identified it by, and SQLite opens only the copy.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import cancelled
from rea.plugin import leftovers
from rea.plugin import open_regular
from rea.plugin import pinned_copy
from rea_plugins.sqlite.shapes import Value

MAGIC = b"SQLite format 3\x00"
PREFIX = "rea-sqlite-"
# Past this a database (or its WAL) is not copied: the tool says so rather than filling the disk.
MAX_COPY_BYTES = 4 << 30
# The largest single value SQLite may materialize while reading (SQLITE_LIMIT_LENGTH): a hostile row beyond it is
# a typed resource_constraint, not a memory storm.
MAX_VALUE_BYTES = 64 << 20
# One call's SQLite work is interrupted past this (progress handler), and on cancellation.
DEADLINE_S = 60.0
# SQLite calls the progress handler every this many virtual-machine instructions.
_TICKS = 20_000
_STORAGE = {"null", "integer", "real", "text", "blob"}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def not_sqlite(target: Target) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{target.path} is not a SQLite 3 database (no 'SQLite format 3' header)",
        remediation="Pass a SQLite 3 database file; inspect_artifact names the tool that reads other kinds.",
        details={"path": target.path, "format": target.format, "reason": "not_sqlite"},
    )


def malformed(target: Target, exc: sqlite3.Error, where: str) -> ReaError:
    text = str(exc)
    if "too big" in text:
        return ReaError(
            "resource_constraint",
            f"a value in {where} is larger than the {MAX_VALUE_BYTES}-byte limit for one value",
            remediation="Read another table or rows, or inspect the database with a tool meant for huge values.",
            details={"resource": "value_bytes", "limit": MAX_VALUE_BYTES, "where": where},
        )
    return ReaError(
        "unsupported_target",
        f"{target.path} cannot be read as a SQLite database ({where}: {text})",
        remediation="The file is corrupt or not a database SQLite reads; try a copy taken while nothing wrote it.",
        details={"path": target.path, "reason": "malformed", "where": where, "sqlite_error": text},
    )


class Copy:
    """The database and its WAL, copied into a private directory (removed on exit, or by the next start if killed)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.directory = ""
        self.path = ""
        self.wal_bytes = 0
        self.wal_included = False
        self.journal_included = False
        self.limitations: list[str] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Copy:
        self.directory = tempfile.mkdtemp(prefix=PREFIX)
        leftovers.mark(self.directory)
        self._stack.enter_context(leftovers.staging_noted(self.directory, PREFIX))
        self._stack.callback(shutil.rmtree, self.directory, True)
        try:
            if self.target.size > MAX_COPY_BYTES:
                raise ReaError(
                    "resource_constraint",
                    f"{self.target.path} is larger than {MAX_COPY_BYTES} bytes",
                    remediation="Inspect a smaller database.",
                    details={"resource": "file_size", "limit": MAX_COPY_BYTES, "observed": self.target.size},
                )
            self.path = pinned_copy(self.target.resolved_path, self.target.sha256, self.directory, MAX_COPY_BYTES)
            base = self.target.resolved_path
            self.wal_bytes = self._copy_companion(base + "-wal", self.path + "-wal", "write-ahead log")
            self.wal_included = self.wal_bytes > 0
            # A hot rollback journal (a writer died mid-transaction) is copied too, so SQLite rolls the copy back
            # to the last commit rather than showing half a transaction; the original keeps its journal.
            self.journal_included = self._copy_companion(base + "-journal", self.path + "-journal", "journal") > 0
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _copy_companion(self, source: str, dest: str, what: str) -> int:
        """Copy the WAL or rollback journal beside the database (bytes copied; 0 when absent or refused)."""
        try:
            fd = open_regular(source, code="unsupported_target", what=what)
        except FileNotFoundError:
            return 0
        except ReaError as exc:
            # A FIFO or device named like the companion is never read; the database is read without it.
            self.limitations.append(f"The {what} beside the database was not read: {exc.message}.")
            return 0
        except OSError as exc:
            self.limitations.append(f"The {what} beside the database was not read: {exc.strerror}.")
            return 0
        with os.fdopen(fd, "rb") as src:
            size = os.fstat(src.fileno()).st_size
            if size > MAX_COPY_BYTES:
                self.limitations.append(f"The {what} ({size} bytes) is larger than {MAX_COPY_BYTES} bytes: not read.")
                return 0
            with open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                return dst.tell()


@contextlib.contextmanager
def connect(copy: Copy, ctx: CallContext) -> Iterator[sqlite3.Connection]:
    """SQLite on the copy, bounded: no extensions, no schema-defined functions run, a value cap, a deadline."""
    try:
        conn = sqlite3.connect(copy.path, timeout=0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise malformed(copy.target, exc, "open") from None
    deadline = time.monotonic() + DEADLINE_S
    stopped: list[str] = []

    def tick() -> int:
        if ctx.cancelled:
            stopped.append("cancelled")
            return 1
        if time.monotonic() > deadline:
            stopped.append("timeout")
            return 1
        return 0

    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.set_progress_handler(tick, _TICKS)
        for pragma in ("trusted_schema=OFF", "cell_size_check=ON", "mmap_size=0", "query_only=ON"):
            conn.execute(f"PRAGMA {pragma}")
        yield conn
    except sqlite3.OperationalError as exc:
        if stopped and stopped[-1] == "cancelled":
            raise cancelled("inspect_sqlite_database") from None
        if stopped:
            raise ReaError(
                "provider_timeout",
                f"reading the database took longer than {DEADLINE_S:.0f} s",
                remediation="Ask for fewer objects or rows per call.",
                details={"timeout_ms": int(DEADLINE_S * 1000), "operation": "inspect_sqlite_database"},
            ) from None
        raise malformed(copy.target, exc, "read") from None
    except sqlite3.Error as exc:
        raise malformed(copy.target, exc, "read") from None
    finally:
        conn.close()


def cell(kind: str, length: int | None, value: Any, max_bytes: int) -> Value:
    """One value as the result lists it: blobs in hex, text and blobs cut at ``max_bytes``."""
    storage = kind if kind in _STORAGE else "text"
    if storage == "blob":
        data = bytes(value or b"")
        return Value(type="blob", value=data[:max_bytes].hex(), length=length, truncated=(length or 0) > max_bytes)
    if storage == "text":
        text = value if isinstance(value, str) else bytes(value or b"").decode("utf-8", "replace")
        cut = text.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore")
        # length counts characters; the query took at most max_bytes of them, and the bytes cut took more.
        return Value(type="text", value=cut, length=length, truncated=(length or 0) > len(cut))
    if storage == "integer":
        # Canonical JSON carries integers exactly up to 2**53; beyond, the value is given as text.
        return Value(type="integer", value=value if abs(int(value)) < (1 << 53) else str(value))
    if storage == "real":
        return Value(type="real", value=value if value == value and abs(value) != float("inf") else repr(value))
    return Value(type="null", value=None)
