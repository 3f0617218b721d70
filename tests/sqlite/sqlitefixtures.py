"""A SQLite database with a write-ahead log, made with Python's sqlite3 once per session."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, avatar BLOB, score REAL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total INTEGER);
CREATE INDEX idx_orders_user ON orders(user_id);
CREATE VIEW big_spenders AS SELECT user_id, sum(total) AS spent FROM orders GROUP BY user_id HAVING spent > 100;
CREATE TRIGGER orders_audit AFTER INSERT ON orders BEGIN UPDATE users SET score = score + 1 WHERE id = NEW.user_id; END;
"""
# Rows written before the last checkpoint (in the main file) and after it (only in the WAL).
CHECKPOINTED_USERS = 3
WAL_USERS = 2
ORDERS = 5
LONG_TEXT = "x" * 100_000


def build(out: Path) -> Path:
    """store.db and store.db-wal, copied while the writer still holds them (a closing writer would checkpoint)."""
    work = out / "work"
    work.mkdir()
    db = work / "store.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.executescript(SCHEMA)
    for i in range(CHECKPOINTED_USERS):
        conn.execute("INSERT INTO users (name, avatar, score) VALUES (?, ?, ?)", (f"user{i}", bytes([i]) * 4, 0.5))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for i in range(WAL_USERS):
        conn.execute("INSERT INTO users (name, avatar, score) VALUES (?, ?, ?)", (f"wal{i}", b"\xde\xad\xbe\xef", 1.0))
    conn.execute("UPDATE users SET name = ? WHERE id = 1", (LONG_TEXT,))
    for i in range(ORDERS):
        conn.execute("INSERT INTO orders (user_id, total) VALUES (?, ?)", (1 + i % 2, 60 * (i + 1)))
    final = out / "store.db"
    shutil.copyfile(db, final)
    shutil.copyfile(work / "store.db-wal", out / "store.db-wal")
    conn.close()
    return final
