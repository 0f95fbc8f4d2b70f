"""Statements run on the database driver's own cursor, for the store's hot paths.

SQLAlchemy's work per execution (a cache lookup, parameter processing, a result object) was
about a third of writing a batch of call Facts. The statements run once per row or per blob (a
Fact's insert, the blobs' inserts, the blob fetches of derive and export) go straight to the
DB-API cursor of the connection SQLAlchemy holds, inside that connection's transaction (begun
here when none is yet, as SQLAlchemy's first statement would begin it). The SQL is compiled by
SQLAlchemy for the connection's dialect, or written for both backends (SQLite and PostgreSQL).
A driver error is raised as SQLAlchemy raises it (:class:`~sqlalchemy.exc.DBAPIError`, the
connection invalidated when the error is a lost connection), so the store's handling of the
environment's errors (a full disk, a lock, a server gone) is the same on every path. These
statements bypass SQLAlchemy's statement events and echo logging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError

#: The positional placeholder of each paramstyle the store's drivers use (sqlite3: qmark;
#: psycopg: pyformat, which takes ``%s`` too).
_PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


class DriverCursor:
    """A DB-API cursor of ``conn``'s connection, in its transaction; close it when done."""

    def __init__(self, conn: Connection) -> None:
        placeholder = _PLACEHOLDERS.get(conn.dialect.paramstyle)
        if placeholder is None:
            raise ValueError(f"the store's driver statements need a positional paramstyle, not "
                             f"{conn.dialect.paramstyle!r}")
        #: The driver's positional placeholder (sqlite3: ``?``; psycopg: ``%s``).
        self.placeholder = placeholder
        if not conn.in_transaction():
            conn.begin()  # as the first conn.execute would: one snapshot for the reads that follow
        self._conn = conn
        self._dialect = conn.dialect
        self._dbapi_connection = conn.connection.dbapi_connection
        self._cursor = self._dbapi_connection.cursor()  # type: ignore[union-attr]

    def close(self) -> None:
        self._cursor.close()

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any]) -> Any:
        """Run one statement; the DB-API cursor, for its rows or its row count."""
        try:
            self._cursor.execute(sql, parameters)
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(sql, parameters, exc) from exc
        return self._cursor

    def executemany(self, sql: str, rows: Sequence[Any]) -> None:
        try:
            self._cursor.executemany(sql, rows)
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(sql, rows, exc) from exc

    def fetch_all(self, sql: str, parameters: Sequence[Any]) -> list[Any]:
        """Every row a query returns."""
        cursor = self.execute(sql, parameters)
        try:
            return list(cursor.fetchall())
        except self._dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(sql, parameters, exc) from exc

    def _wrapped(self, sql: str, parameters: Any, exc: Exception) -> Exception:
        lost = self._dialect.is_disconnect(exc, self._dbapi_connection, self._cursor)  # type: ignore[arg-type]
        if lost:
            self._conn.invalidate(exc)
        return DBAPIError.instance(sql, parameters, exc, self._dialect.loaded_dbapi.Error, hide_parameters=True,
                                   connection_invalidated=lost, dialect=self._dialect)


class Inserts:
    """Rows inserted with ``INSERT … ON CONFLICT DO NOTHING``, each table's statement compiled
    by ``insert`` (the dialect's) the first time this object inserts into it: a row whose key
    exists is skipped, and the cursor's row count tells a stored row from a duplicate."""

    def __init__(self, conn: Connection, insert: Callable[[Table], Any]) -> None:
        self._dialect = conn.dialect
        self._insert = insert
        self._cursor = DriverCursor(conn)
        self._statements: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...] | None]] = {}

    def close(self) -> None:
        self._cursor.close()

    def _statement(self, table: Table, keys: tuple[str, ...]) -> tuple[str, tuple[str, ...] | None]:
        """The SQL, and the order of its positional parameters (None: named)."""
        found = self._statements.get((table.name, keys))
        if found is None:
            compiled = self._insert(table).on_conflict_do_nothing().compile(dialect=self._dialect,
                                                                           column_keys=list(keys))
            order = tuple(compiled.positiontup) if compiled.positional and compiled.positiontup else None
            found = self._statements[(table.name, keys)] = (str(compiled), order)
        return found

    def insert_row(self, table: Table, values: dict[str, Any]) -> bool:
        """Insert one row; False when its key exists (nothing is written)."""
        sql, order = self._statement(table, tuple(values))
        cursor = self._cursor.execute(sql, values if order is None else tuple(values[key] for key in order))
        return cursor.rowcount == 1  # type: ignore[no-any-return]

    def insert_many(self, table: Table, keys: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        """Insert rows given as tuples in ``keys``'s order (existing keys are skipped)."""
        sql, order = self._statement(table, keys)
        if order is None:  # named parameters (psycopg)
            self._cursor.executemany(sql, [dict(zip(keys, row, strict=True)) for row in rows])
        else:  # positional, compiled in the order of ``keys`` (sqlite3)
            assert order == keys, (order, keys)
            self._cursor.executemany(sql, rows)


def fetch_blobs(conn: Connection, hashes: Sequence[str], batch: int = 500) -> list[tuple[str, bytes]]:
    """``(blob_hash, content)`` of the stored blobs among ``hashes``, ``batch`` hashes a query."""
    cursor = DriverCursor(conn)
    found: list[tuple[str, bytes]] = []
    try:
        for start in range(0, len(hashes), batch):
            chunk = list(hashes[start:start + batch])
            marks = ", ".join([cursor.placeholder] * len(chunk))
            rows = cursor.fetch_all(f"SELECT blob_hash, content FROM blobs WHERE blob_hash IN ({marks})", chunk)
            found.extend((digest, bytes(content)) for digest, content in rows)
    finally:
        cursor.close()
    return found
