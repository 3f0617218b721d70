"""inspect_sqlite_database on a database built in the session: schema, counts, WAL rows, paging, hostile files."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlitefixtures import CHECKPOINTED_USERS
from sqlitefixtures import LONG_TEXT
from sqlitefixtures import ORDERS
from sqlitefixtures import WAL_USERS

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.mcp.harness import connect


def _stamp(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_schema_counts_and_the_wal(rea_session: Session, sqlite_db: Path) -> None:
    before = {p: _stamp(p) for p in (sqlite_db, Path(f"{sqlite_db}-wal"))}
    out = result_of(rea_session, "inspect_sqlite_database", {"path": str(sqlite_db)})
    objects = {(o["type"], o["name"]): o for o in out["objects"]}
    assert set(objects) == {
        ("table", "users"),
        ("table", "orders"),
        ("index", "idx_orders_user"),
        ("view", "big_spenders"),
        ("trigger", "orders_audit"),
    }
    assert out["counts"] == {"table": 2, "index": 1, "view": 1, "trigger": 1}
    # The rows after the checkpoint are only in the WAL: counted, so the WAL was read.
    assert objects[("table", "users")]["row_count"] == CHECKPOINTED_USERS + WAL_USERS
    assert objects[("table", "orders")]["row_count"] == ORDERS
    assert [c["name"] for c in objects[("table", "users")]["columns"]] == ["id", "name", "avatar", "score"]
    assert objects[("table", "users")]["columns"][1] == {
        "name": "name",
        "type": "TEXT",
        "not_null": True,
        "primary_key": 0,
    }
    assert objects[("index", "idx_orders_user")]["table"] == "orders"
    assert "AFTER INSERT ON orders" in objects[("trigger", "orders_audit")]["sql"]
    assert out["database"]["wal_included"] is True and out["database"]["journal_mode"] == "wal"
    assert "rows" not in out
    # Never opened by SQLite, never written: the same bytes and times, and no -shm or journal beside it.
    assert {p: _stamp(p) for p in before} == before
    assert not Path(f"{sqlite_db}-shm").exists() and not Path(f"{sqlite_db}-journal").exists()


def test_rows_are_paged_and_values_cut(rea_session: Session, sqlite_db: Path) -> None:
    first = result_of(
        rea_session,
        "inspect_sqlite_database",
        {"path": str(sqlite_db), "table": "users", "row_limit": 2, "max_value_bytes": 64},
    )
    rows = first["rows"]
    assert rows["columns"] == ["id", "name", "avatar", "score"]
    assert (rows["offset"], rows["limit"], rows["total"], rows["next_offset"]) == (0, 2, 5, 2)
    name = rows["rows"][0][1]
    assert name == {"type": "text", "value": "x" * 64, "length": len(LONG_TEXT), "truncated": True}
    assert rows["rows"][0][2] == {"type": "blob", "value": "00000000", "length": 4}
    last = result_of(
        rea_session, "inspect_sqlite_database", {"path": str(sqlite_db), "table": "users", "row_offset": 4}
    )["rows"]
    assert last["next_offset"] is None
    assert last["rows"][0][1]["value"] == "wal1" and last["rows"][0][2]["value"] == "deadbeef"
    view = result_of(rea_session, "inspect_sqlite_database", {"path": str(sqlite_db), "table": "big_spenders"})
    spent = {r[0]["value"]: r[1]["value"] for r in view["rows"]["rows"]}
    assert spent == {1: 60 + 180 + 300, 2: 120 + 240}


def test_objects_are_paged(rea_session: Session, sqlite_db: Path) -> None:
    page = result_of(rea_session, "inspect_sqlite_database", {"path": str(sqlite_db), "limit": 2})
    assert page["objects_page"] == {"offset": 0, "limit": 2, "total": 5, "next_offset": 2}
    assert len(page["objects"]) == 2


def _error(session: Session, args: dict[str, Any]) -> ReaError:
    with pytest.raises(ReaError) as info:
        result_of(session, "inspect_sqlite_database", args)
    return info.value


def test_hostile_databases_give_typed_errors(rea_session: Session, sqlite_db: Path, tmp_path: Path) -> None:
    fake = tmp_path / "notes.db"
    fake.write_text("just text, named like a database\n" * 10)
    err = _error(rea_session, {"path": str(fake)})
    assert err.code == "unsupported_target" and err.details["reason"] == "not_sqlite"
    data = bytes(sqlite_db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    # The schema page (page 1 after the 100-byte header) overwritten: nothing can be read, a typed error.
    broken = tmp_path / "broken.db"
    broken.write_bytes(data[:100] + bytes((i * 7 + 3) & 0xFF for i in range(page - 100)) + data[page:])
    err = _error(rea_session, {"path": str(broken)})
    assert err.code == "unsupported_target" and err.details["reason"] == "malformed"
    # Every other page overwritten: the schema reads, each table's count fails alone and says why.
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(data[:page] + bytes((i * 7 + 3) & 0xFF for i in range(len(data) - page)))
    ev = call_tool(rea_session, "inspect_sqlite_database", {"path": str(corrupt)}).evidence
    assert ev is not None
    tables = [o for o in ev.normalized_result["objects"] if o["type"] == "table"]
    assert tables and all(t["row_count"] is None for t in tables)
    assert any("malformed" in note for note in ev.limitations)
    err = _error(rea_session, {"path": str(sqlite_db), "table": "nope"})
    assert err.code == "invalid_request"


def test_a_huge_row_is_cut_not_read_whole(rea_session: Session, tmp_path: Path) -> None:
    db = tmp_path / "huge.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (b BLOB)")
    conn.execute("INSERT INTO t VALUES (zeroblob(8 << 20))")
    conn.commit()
    conn.close()
    out = result_of(rea_session, "inspect_sqlite_database", {"path": str(db), "table": "t"})
    cell = out["rows"]["rows"][0][0]
    assert cell["length"] == 8 << 20 and cell["truncated"] is True and len(cell["value"]) == 2 * 256


def test_a_fifo_wal_is_not_waited_on(rea_session: Session, sqlite_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(sqlite_db.read_bytes())
    os.mkfifo(f"{db}-wal")
    ev = call_tool(rea_session, "inspect_sqlite_database", {"path": str(db)}).evidence
    assert ev is not None
    assert ev.normalized_result["database"]["wal_included"] is False
    assert any("write-ahead log" in x for x in ev.limitations)


def test_through_the_sdk_client(sqlite_db: Path) -> None:
    async def main() -> None:
        async with connect() as client:
            result = await client.call_tool("inspect_sqlite_database", {"path": str(sqlite_db), "table": "orders"})
            assert not result.is_error, result.content
            content = result.structured_content
            assert content is not None
            out = content["normalized_result"]
            assert {o["name"] for o in out["objects"]} >= {"users", "orders", "idx_orders_user"}
            assert out["rows"]["total"] == ORDERS
            assert [r[2]["value"] for r in out["rows"]["rows"]] == [60, 120, 180, 240, 300]

    anyio.run(main)


def test_a_hot_journal_is_rolled_back_on_the_copy(rea_session: Session, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    conn = sqlite3.connect(work / "live.db", isolation_level=None)
    conn.execute("PRAGMA cache_size=1")  # so the open transaction spills pages into the main file
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.execute("INSERT INTO t VALUES ('committed')")
    committed = (work / "live.db").read_bytes()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (?)", [("y" * 500,)] * 2000)
    db, journal = tmp_path / "live.db", tmp_path / "live.db-journal"
    # As a writer that died mid-transaction leaves them: pages of the transaction in the file, the journal beside.
    db.write_bytes((work / "live.db").read_bytes())
    journal.write_bytes((work / "live.db-journal").read_bytes())
    conn.execute("ROLLBACK")
    conn.close()
    # The unfinished transaction reached the file (its pages spilled), and the journal holds what undoes it.
    assert db.read_bytes() != committed and journal.stat().st_size > 0
    stamps = {p: _stamp(p) for p in (db, journal)}
    out = result_of(rea_session, "inspect_sqlite_database", {"path": str(db)})
    assert out["database"]["journal_included"] is True
    assert out["objects"][0]["row_count"] == 1
    assert {p: _stamp(p) for p in stamps} == stamps
