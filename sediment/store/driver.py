"""Statements run on the database driver's own cursor, for the store's hot paths.

SQLAlchemy's work per execution (a cache lookup, parameter processing, a result object per
row) cost about a third of writing a batch of call Facts and of fetching content blobs. The
few statements run per row or per blob go straight to the DB-API cursor of the connection
SQLAlchemy holds, so they run in its transaction. The SQL is compiled by SQLAlchemy for the
connection's dialect, or written for both backends (SQLite and PostgreSQL); a driver error is
raised as SQLAlchemy raises it (:class:`~sqlalchemy.exc.DBAPIError`), so the store's handling
of the environment's errors (a full disk, a lock) is the same on every path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError


class DriverCursor:
    """A DB-API cursor of ``conn``'s connection; close it when done."""

    def __init__(self, conn: Connection) -> None:
        self._dialect = conn.dialect
        self._cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        #: The positional placeholder of the driver (sqlite3: ``?``; psycopg: ``%s``).
        self.placeholder = "?" if self._dialect.paramstyle == "qmark" else "%s"

    def close(self) -> None:
        self._cursor.close()

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any]) -> Any:
        """Run one statement; the cursor, for its rows or its row count."""
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

    def rows(self, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        """The rows of a query, fetched in batches."""
        cursor = self.execute(sql, parameters)
        while True:
            try:
                batch = cursor.fetchmany(500)
            except self._dialect.loaded_dbapi.Error as exc:
                raise self._wrapped(sql, parameters, exc) from exc
            if not batch:
                return
            yield from batch

    def _wrapped(self, sql: str, parameters: Any, exc: Exception) -> Exception:
        return DBAPIError.instance(sql, parameters, exc, self._dialect.loaded_dbapi.Error,
                                   hide_parameters=True, dialect=self._dialect)


class Inserts:
    """Rows inserted with ``INSERT … ON CONFLICT DO NOTHING``, each statement compiled once for
    the connection's dialect: a row whose key exists is skipped, and the cursor's row count tells
    a stored row from a duplicate."""

    def __init__(self, conn: Connection, insert: Any) -> None:
        self._conn = conn
        self._insert = insert
        self._cursor = DriverCursor(conn)
        self._statements: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...] | None]] = {}

    def close(self) -> None:
        self._cursor.close()

    def _statement(self, table: Table, keys: tuple[str, ...]) -> tuple[str, tuple[str, ...] | None]:
        found = self._statements.get((table.name, keys))
        if found is None:
            compiled = self._insert(table).on_conflict_do_nothing().compile(
                dialect=self._conn.dialect, column_keys=list(keys))
            order = tuple(compiled.positiontup) if compiled.positional and compiled.positiontup else None
            found = self._statements[(table.name, keys)] = (str(compiled), order)
        return found

    def row(self, table: Table, values: dict[str, Any]) -> bool:
        """Insert one row; False when its key exists (nothing is written)."""
        sql, order = self._statement(table, tuple(values))
        cursor = self._cursor.execute(sql, values if order is None else tuple(values[key] for key in order))
        return bool(cursor.rowcount == 1)

    def rows(self, table: Table, keys: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        """Insert many rows given as tuples in ``keys``'s order (existing keys are skipped)."""
        sql, order = self._statement(table, keys)
        if order == keys:
            self._cursor.executemany(sql, rows)
        elif order is None:
            self._cursor.executemany(sql, [dict(zip(keys, row, strict=True)) for row in rows])
        else:
            positions = [keys.index(key) for key in order]
            self._cursor.executemany(sql, [tuple(row[i] for i in positions) for row in rows])


def fetch_blobs(conn: Connection, hashes: Sequence[str], batch: int = 500) -> Iterator[tuple[str, bytes]]:
    """``(blob_hash, content)`` of the stored blobs among ``hashes``, ``batch`` hashes a query."""
    cursor = DriverCursor(conn)
    try:
        for start in range(0, len(hashes), batch):
            chunk = list(hashes[start:start + batch])
            marks = ", ".join([cursor.placeholder] * len(chunk))
            for digest, content in cursor.rows(f"SELECT blob_hash, content FROM blobs WHERE blob_hash IN ({marks})",
                                               chunk):
                yield digest, bytes(content)
    finally:
        cursor.close()
