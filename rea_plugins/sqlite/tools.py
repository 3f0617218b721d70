"""inspect_sqlite_database: schema, row counts and bounded rows of a SQLite database and its WAL."""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import Paged
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_str
from rea.plugin import identify
from rea.plugin import int_param
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import next_offset
from rea.plugin import read_head
from rea_plugins.sqlite import reader
from rea_plugins.sqlite.shapes import Column
from rea_plugins.sqlite.shapes import DatabaseFacts
from rea_plugins.sqlite.shapes import Rows
from rea_plugins.sqlite.shapes import SchemaObject
from rea_plugins.sqlite.shapes import SqliteDatabase

VERSION = "0.1.0"
PROVIDER = ProviderIdentity(id="sqlite", name="rea SQLite reader (Python sqlite3)", version=VERSION)
OBJECTS_DEFAULT = 50
ROWS_DEFAULT = 20
VALUE_DEFAULT = 256
# A CREATE statement longer than this is cut (a hostile schema can hold megabytes of SQL).
SQL_MAX = 2000


def _handle(call: ToolCall) -> Evidence:
    args = call.args
    offset = int_param(args, "offset", 0, 0)
    limit = int_param(args, "limit", OBJECTS_DEFAULT, 1, 500)
    table = arg_str(args, "table")
    row_offset = int_param(args, "row_offset", 0, 0)
    row_limit = int_param(args, "row_limit", ROWS_DEFAULT, 1, 500)
    max_value = int_param(args, "max_value_bytes", VALUE_DEFAULT, 16, 65536)
    target = identify(arg_str(args, "path", ""), call.ctx)  # required by the schema
    # Through open_regular: a FIFO swapped in after identify is refused, never waited on.
    head = read_head(target)[:100]
    if not head.startswith(reader.MAGIC):
        raise reader.not_sqlite(target)
    call.ctx.check("inspect_sqlite_database")
    with reader.Copy(target) as copy, reader.connect(copy, call.ctx) as conn:
        notes: list[str] = []
        result = _read(conn, copy, head, offset, limit, table, row_offset, row_limit, max_value, call, notes)
        limitations = list(copy.limitations) + notes
    params = {
        "offset": offset,
        "limit": limit,
        "table": table,
        "row_offset": row_offset,
        "row_limit": row_limit,
        "max_value_bytes": max_value,
    }
    call.ctx.finish(f"sqlite: {result.objects_page.total} objects")
    return call.session.evidence(
        "inspect_sqlite_database",
        params,
        OperationResult(normalized=msgspec.to_builtins(result), limitations=limitations),
        bound=False,
        target=target,
        provider=PROVIDER,
        analysis_profile=None,
    )


def _read(
    conn: sqlite3.Connection,
    copy: reader.Copy,
    head: bytes,
    offset: int,
    limit: int,
    table: str | None,
    row_offset: int,
    row_limit: int,
    max_value: int,
    call: ToolCall,
    notes: list[str],
) -> SqliteDatabase:
    schema = conn.execute(
        "SELECT type, name, tbl_name, substr(sql, 1, ?), length(sql) FROM sqlite_schema ORDER BY type, name",
        (SQL_MAX,),
    ).fetchall()
    counts: dict[str, int] = {}
    for row in schema:
        counts[row[0]] = counts.get(row[0], 0) + 1
    objects: list[SchemaObject] = []
    window = [r for r in schema if r[0] in ("table", "index", "trigger", "view")][offset : offset + limit]
    for i, (kind, name, tbl, sql, sql_len) in enumerate(window):
        call.ctx.check("inspect_sqlite_database")
        objects.append(
            SchemaObject(
                type=kind,
                name=str(name),
                table=str(tbl),
                sql=sql,
                columns=_columns(conn, str(name), notes) if kind in ("table", "view") else msgspec.UNSET,
                row_count=_count(conn, str(name), notes) if kind == "table" else msgspec.UNSET,
                sql_truncated=sql_len is not None and sql_len > SQL_MAX,
            )
        )
        call.ctx.progress(f"sqlite: {i + 1} of {len(window)} objects", done=i + 1, total=len(window))
    listed = sum(counts.get(k, 0) for k in ("table", "index", "trigger", "view"))
    rows = None
    if table is not None:
        names = {str(r[1]) for r in schema if r[0] in ("table", "view")}
        if table not in names:
            known = ", ".join(sorted(names)[:20]) or "(none)"
            err = invalid_request(
                f"no table or view named {table!r}", [issue("table", "invalid_value", f"tables and views: {known}")]
            )
            raise err
        rows = _rows(conn, table, row_offset, row_limit, max_value, copy)
    return SqliteDatabase(
        database=_facts(conn, copy, head),
        counts=counts,
        objects=objects,
        objects_page=Paged(
            offset=offset, limit=limit, total=listed, next_offset=next_offset(offset, len(objects), listed)
        ),
        rows=rows,
    )


def _facts(conn: sqlite3.Connection, copy: reader.Copy, head: bytes) -> DatabaseFacts:
    def pragma(name: str) -> Any:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]

    return DatabaseFacts(
        page_size=int(pragma("page_size")),
        page_count=int(pragma("page_count")),
        encoding=str(pragma("encoding")),
        user_version=int(pragma("user_version")),
        application_id=int(pragma("application_id")),
        # From the header (bytes 18-19: 2 is WAL): asking SQLite would switch the copy, not report the file.
        journal_mode="wal" if head[18:20] == b"\x02\x02" else "rollback",
        wal_included=copy.wal_included,
        wal_bytes=copy.wal_bytes,
        journal_included=copy.journal_included,
    )


def _columns(conn: sqlite3.Connection, name: str, notes: list[str]) -> list[Column]:
    try:
        rows = conn.execute(f"PRAGMA table_xinfo({reader.quote(name)})").fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise
        notes.append(f"{name}: columns not read ({exc}).")
        return []
    out = []
    for _, col, decl, notnull, _default, pk, *rest in rows:
        hidden = int(rest[0]) if rest and rest[0] else 0
        out.append(
            Column(name=str(col), type=str(decl or ""), not_null=bool(notnull), primary_key=int(pk), hidden=hidden)
        )
    return out


def _count(conn: sqlite3.Connection, name: str, notes: list[str]) -> int | None:
    try:
        return int(conn.execute(f"SELECT count(*) FROM {reader.quote(name)}").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        if "interrupted" in str(exc):
            raise
        # One damaged or unreadable table (a corrupt page, a virtual table's missing module) leaves the rest.
        notes.append(f"{name}: rows not counted ({exc}).")
        return None


def _rows(conn: sqlite3.Connection, table: str, offset: int, limit: int, max_value: int, copy: reader.Copy) -> Rows:
    quoted = reader.quote(table)
    try:
        columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({quoted})").fetchall()]
        total = int(conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])
        # Each value as its storage class, its length and at most max_value of it, so a huge cell is never
        # brought whole into the answer.
        parts = ", ".join(
            f"typeof({c}), length({c}), CASE WHEN typeof({c}) IN ('text', 'blob') THEN substr({c}, 1, ?) ELSE {c} END"
            for c in map(reader.quote, columns)
        )
        fetched = conn.execute(
            f"SELECT {parts} FROM {quoted} LIMIT ? OFFSET ?", (*([max_value] * len(columns)), limit, offset)
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise
        raise reader.malformed(copy.target, exc, f"table {table}") from None
    except sqlite3.DatabaseError as exc:
        raise reader.malformed(copy.target, exc, f"table {table}") from None
    rows = [[reader.cell(r[i], r[i + 1], r[i + 2], max_value) for i in range(0, len(r), 3)] for r in fetched]
    return Rows(
        table=table,
        columns=columns,
        rows=rows,
        offset=offset,
        limit=limit,
        total=total,
        next_offset=next_offset(offset, len(rows), total),
    )


def _path_schema() -> JSONObject:
    # A JSON Schema fragment (JSON Schema's vocabulary, not a rea record).
    return {
        "type": "string",
        "minLength": 1,
        "description": "Local path of the SQLite database file (its -wal beside it is read too).",
        "examples": ["/tmp/app/databases/store.db"],
    }


INSPECT_SQLITE_DATABASE = ToolDef(
    name="inspect_sqlite_database",
    result_type=SqliteDatabase,
    family="sqlite",
    title="Inspect SQLite Database",
    description=(
        "A SQLite database's schema (tables, indexes, triggers, views with their SQL and columns), row counts and a "
        "page of one table's rows, its write-ahead log included. rea reads a private copy; the file itself is never "
        "opened by SQLite nor written."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _path_schema(),
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Schema objects to skip."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 500,
                "default": OBJECTS_DEFAULT,
                "description": "Most schema objects to list (tables with their row counts).",
            },
            "table": {
                "type": "string",
                "minLength": 1,
                "description": "A table or view whose rows to list; omitted: no rows.",
                "examples": ["users"],
            },
            "row_offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Rows of table to skip."},
            "row_limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 500,
                "default": ROWS_DEFAULT,
                "description": "Most rows of table to list.",
            },
            "max_value_bytes": {
                "type": "integer",
                "minimum": 16,
                "maximum": 65536,
                "default": VALUE_DEFAULT,
                "description": "Longest text or blob value shown; longer ones are cut (length says by how much).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=_handle,
    effects=ToolEffects(records_evidence=True),
    examples=({"path": "/tmp/app/databases/store.db"}, {"path": "/tmp/app/databases/store.db", "table": "users"}),
    cli_subject="path",
)

TOOLS = (INSPECT_SQLITE_DATABASE,)
__all__ = ["TOOLS"]
