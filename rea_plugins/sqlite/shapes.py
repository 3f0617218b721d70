"""Result shapes of inspect_sqlite_database."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import Paged
from rea.plugin import Record


class Column(Record):
    name: str
    # The declared type as written (SQLite's types are affinities, so any text).
    type: str
    not_null: bool
    primary_key: int
    # Generated or hidden columns (PRAGMA table_xinfo's hidden flag).
    hidden: int = 0


class SchemaObject(Record):
    """One row of sqlite_schema: a table, index, trigger or view with the SQL that made it."""

    type: Literal["table", "index", "trigger", "view"]
    name: str
    table: str
    sql: str | None
    # Tables and views: their columns; tables: their row count (null when counting failed or was cut short). Unset
    # (absent) for the other kinds, so a table's empty columns and null count are still said.
    columns: list[Column] | msgspec.UnsetType = msgspec.UNSET
    row_count: int | msgspec.UnsetType | None = msgspec.UNSET
    sql_truncated: bool = False


class Value(Record):
    """One cell: its storage class, its length, and its value (text as is, a blob as hex), cut at max_value_bytes."""

    type: Literal["null", "integer", "real", "text", "blob"]
    value: int | float | str | None
    length: int | None = None
    truncated: bool = False


class Rows(Paged):
    table: str
    columns: list[str]
    rows: list[list[Value]]


class DatabaseFacts(Record):
    page_size: int
    page_count: int
    encoding: str
    user_version: int
    application_id: int
    journal_mode: str
    # Whether a write-ahead log beside the file was copied with it (its frames are part of what is read).
    wal_included: bool
    wal_bytes: int
    # Whether a rollback journal beside the file (a transaction left unfinished) was copied and rolled back.
    journal_included: bool = False


class SqliteDatabase(Record):
    database: DatabaseFacts
    counts: dict[str, int]
    objects: list[SchemaObject]
    objects_page: Paged
    rows: Rows | None = None
