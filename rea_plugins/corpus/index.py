"""The corpus index: one SQLite database (WAL, one writer), one row per binary by SHA-256, its Evidence inside."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

import msgspec

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import require_regular
from rea_plugins.corpus.model import BinaryRecord

INDEX_VERSION = 1
COMMIT_EVERY_S = 0.5
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS binaries(
  sha256 TEXT PRIMARY KEY, status TEXT NOT NULL, format TEXT, architecture TEXT, size INTEGER, bits INTEGER,
  entry TEXT, interpreter TEXT, procedure_count INTEGER, string_count INTEGER,
  nx INTEGER, pie INTEGER, relro TEXT, canary INTEGER, fortify INTEGER, cet_ibt INTEGER, cet_shstk INTEGER,
  evidence_id TEXT, evidence BLOB, error_code TEXT, error_message TEXT, attempts INTEGER NOT NULL DEFAULT 1,
  updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS paths(corpus TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL,
  PRIMARY KEY(corpus, path));
CREATE INDEX IF NOT EXISTS paths_sha ON paths(sha256);
CREATE TABLE IF NOT EXISTS imports(sha256 TEXT NOT NULL, name TEXT NOT NULL, library TEXT);
CREATE INDEX IF NOT EXISTS imports_name ON imports(name);
CREATE INDEX IF NOT EXISTS imports_sha ON imports(sha256);
CREATE TABLE IF NOT EXISTS exports(sha256 TEXT NOT NULL, name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS exports_sha ON exports(sha256);
CREATE TABLE IF NOT EXISTS needed(sha256 TEXT NOT NULL, library TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS needed_library ON needed(library);
CREATE TABLE IF NOT EXISTS strings(sha256 TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS strings_sha ON strings(sha256);
CREATE TABLE IF NOT EXISTS procedures(sha256 TEXT NOT NULL, address TEXT NOT NULL, name TEXT NOT NULL,
  instructions INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS procedures_hash ON procedures(hash);
CREATE INDEX IF NOT EXISTS procedures_sha ON procedures(sha256);
CREATE TABLE IF NOT EXISTS yara(sha256 TEXT NOT NULL, rule TEXT NOT NULL);
"""
DETAIL_TABLES = ("imports", "exports", "needed", "strings", "procedures", "yara")
MITIGATIONS = ("nx", "pie", "relro", "canary", "fortify", "cet_ibt", "cet_shstk")


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> Any:
    import re2

    return re2.compile(pattern)


def _re2_search(pattern: str, value: str | None) -> int:
    if value is None:
        return 0
    return 1 if _compile(pattern).search(value) else 0


def check_pattern(pattern: str, where: str) -> None:
    """Refuse a pattern RE2 does not compile, naming the argument."""
    import re2

    try:
        _compile(pattern)
    except re2.error as exc:
        raise invalid_request(
            f"{where} is not a valid RE2 pattern: {exc}", [issue(where, "invalid_format", "not an RE2 pattern")]
        ) from None


def unavailable(path: str, reason: str) -> ReaError:
    return ReaError(
        "target_unavailable",
        f"corpus index {path}: {reason}",
        remediation="Give the index a triage_corpus run wrote (rea corpus triage PATH... --index FILE).",
        details={"path": path, "reason": reason},
    )


def _flag(value: bool | str | None) -> int | str | None:
    """A mitigation as stored: 1/0 when known, its level (relro), NULL when unknown."""
    if isinstance(value, bool):
        return int(value)
    return None if value in (None, "unknown") else value


class Index:
    """One open index. Only the process that runs a triage writes; queries open it read-only."""

    def __init__(self, path: str, *, create: bool = False) -> None:
        self.path = path
        # SQLite opens the path itself and would wait on a FIFO: rea.files checks it first, without blocking.
        try:
            require_regular(path, missing_ok=create, what="corpus index", field="index")
        except OSError as exc:
            missing = isinstance(exc, FileNotFoundError)
            raise unavailable(path, "no such index" if missing else f"cannot be read ({exc.strerror})") from None
        try:
            if create:
                os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
                self.db = sqlite3.connect(path, timeout=30, check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
                with self.db:
                    self.db.execute(
                        "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_version', ?)", (str(INDEX_VERSION),)
                    )
            else:
                uri = "file:" + os.path.abspath(path) + "?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
            version = self.db.execute("SELECT value FROM meta WHERE key='index_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise unavailable(path, f"not a corpus index ({exc})") from None
        if version is None or version[0] != str(INDEX_VERSION):
            raise unavailable(path, f"index version {version[0] if version else '?'}, this rea reads {INDEX_VERSION}")
        self.db.create_function("re2_search", 2, _re2_search, deterministic=True)
        self._committed = time.monotonic()

    def close(self) -> None:
        if self.db.in_transaction:
            self.db.commit()  # the records written since the last group commit
        self.db.close()

    @contextlib.contextmanager
    def _record(self) -> Iterator[None]:
        """One binary's rows; committed with the others at most every ``COMMIT_EVERY_S`` (a commit costs more than
        a small record): a crash loses at most that much work, which the next run redoes (its rows are all there or
        none, since a failed write rolls the whole batch back)."""
        try:
            yield
        except BaseException:
            self.db.rollback()
            raise
        now = time.monotonic()
        if now - self._committed >= COMMIT_EVERY_S:
            self.db.commit()
            self._committed = now

    # -- writing (the one writer) ---------------------------------------------------------------------------

    def statuses(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT sha256, status FROM binaries"))

    def add_paths(self, corpus: str, rows: Iterable[tuple[str, str]]) -> None:
        """``(path, sha256)`` of the corpus, in one transaction (a path seen again names its new bytes)."""
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO paths(corpus, path, sha256) VALUES (?, ?, ?)",
                [(corpus, p, s) for p, s in rows],
            )

    def record_done(self, evidence: JSONObject) -> None:
        """One binary's Evidence in its JSON form (stored as it is) and the rows the queries read, at once."""
        rec = msgspec.convert(evidence["normalized_result"], BinaryRecord)
        sha = rec.sha256
        m = {k: _flag(getattr(rec.mitigations, k)) for k in MITIGATIONS}
        blob = msgspec.json.encode(evidence)
        with self._record():
            for table in DETAIL_TABLES:
                self.db.execute(f"DELETE FROM {table} WHERE sha256=?", (sha,))
            self.db.execute(
                "INSERT OR REPLACE INTO binaries(sha256, status, format, architecture, size, bits, entry, interpreter,"
                " procedure_count, string_count, nx, pie, relro, canary, fortify, cet_ibt, cet_shstk, evidence_id,"
                " evidence, error_code, error_message, attempts, updated)"
                " VALUES (?, 'done', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 1, ?)",
                (
                    sha, rec.format, rec.architecture, rec.size, rec.bits, rec.entry, rec.interpreter,
                    rec.procedure_count, rec.string_count, *m.values(), evidence["evidence_id"], blob, time.time(),
                ),
            )  # fmt: skip
            self.db.executemany("INSERT INTO imports VALUES (?, ?, ?)", [(sha, i.name, i.library) for i in rec.imports])
            self.db.executemany("INSERT INTO exports VALUES (?, ?)", [(sha, e.name) for e in rec.exports])
            self.db.executemany("INSERT INTO needed VALUES (?, ?)", [(sha, n) for n in sorted(set(rec.needed))])
            self.db.executemany("INSERT INTO strings VALUES (?, ?)", [(sha, s) for s in rec.strings])
            self.db.executemany(
                "INSERT INTO procedures VALUES (?, ?, ?, ?, ?)",
                [(sha, p.address, p.name, p.instructions, p.hash) for p in rec.procedures],
            )
            self.db.executemany("INSERT INTO yara VALUES (?, ?)", [(sha, y.rule) for y in rec.yara])

    def record_failed(self, sha256: str, fmt: str | None, arch: str | None, size: int | None, code: str,
                      message: str, attempts: int = 1) -> None:  # fmt: skip
        with self._record():
            for table in DETAIL_TABLES:
                self.db.execute(f"DELETE FROM {table} WHERE sha256=?", (sha256,))
            self.db.execute(
                "INSERT OR REPLACE INTO binaries(sha256, status, format, architecture, size, error_code, error_message,"
                " attempts, updated) VALUES (?, 'failed', ?, ?, ?, ?, ?, ?, ?)",
                (sha256, fmt, arch, size, code, message, attempts, time.time()),
            )

    # -- reading ------------------------------------------------------------------------------------------

    def corpora(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT corpus FROM paths ORDER BY corpus")]

    def paths_of(self, shas: Iterable[str], corpus: str | None) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        shas = list(shas)
        for start in range(0, len(shas), 500):
            chunk = shas[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT sha256, path FROM paths WHERE sha256 IN ({marks})"
            params: list[Any] = list(chunk)
            if corpus is not None:
                sql += " AND corpus=?"
                params.append(corpus)
            for sha, path in self.db.execute(sql + " ORDER BY path", params):
                out.setdefault(sha, []).append(path)
        return out

    def evidence(self, sha256: str) -> JSONObject | None:
        row = self.db.execute("SELECT evidence FROM binaries WHERE sha256=?", (sha256,)).fetchone()
        if row is None or row[0] is None:
            return None
        value: JSONObject = msgspec.json.decode(row[0])
        return value
