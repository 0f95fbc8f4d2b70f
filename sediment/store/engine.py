"""The store's engine: the database URL, connections and the schema (creation, migrations).

Creating the store and each migration is one transaction under a lock, so concurrent
processes opening a fresh or older store serialize, and one killed half-way leaves nothing
behind: on SQLite a ``BEGIN IMMEDIATE`` transaction (the database file's write lock; every
write takes it, and waits up to :data:`SQLITE_BUSY_TIMEOUT` for it), on PostgreSQL a
transaction-scoped advisory lock (:data:`SCHEMA_LOCK`). Opening a store that needs neither
writes nothing, so a SQLite store its reader cannot write (file or directory) is opened
read-only. A failing database (unreachable, full, read-only, not a database) is a
:class:`StoreError`: one line, never a traceback.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DatabaseError, DBAPIError, OperationalError

from sediment.errors import ConfigurationError, SedimentError
from sediment.home import ensure_home
from sediment.store import schema
from sediment.store.migrations import MIGRATIONS

#: Seconds a SQLite writer waits for another's write lock (a migration, a concurrent ingest).
SQLITE_BUSY_TIMEOUT = 60.0
#: Pages the write-ahead log may hold before a commit copies them into the database (SQLite's
#: default is 1000, 4 MiB): an ingest commits a batch of a few MiB at a time, so at the default
#: nearly every commit would also checkpoint (copy and sync); at 10000 (40 MiB) one in ten does,
#: and a page changed by several batches in between is copied once.
SQLITE_WAL_PAGES = 10_000
#: The PostgreSQL advisory lock (per database) that creation and migrations hold.
SCHEMA_LOCK = 0x5EDD_0005_C4E3_A001
_WRITE = "sediment_write"  # execution option: this connection's transactions write (SQLite: BEGIN IMMEDIATE)


class StoreError(SedimentError):
    """The fact store is unreachable, of an unknown schema version, or was asked the impossible."""


def database_url(environ: Mapping[str, str] | None = None) -> str:
    """``SEDIMENT_DATABASE_URL``, else ``sqlite:///$SEDIMENT_HOME/facts.db``."""
    env = os.environ if environ is None else environ
    url = env.get("SEDIMENT_DATABASE_URL", "").strip()
    if url:
        return url
    return f"sqlite:///{ensure_home(env) / 'facts.db'}"


def _engine_url(url: str) -> str:
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    if url.startswith(("sqlite:", "postgresql+psycopg:")):
        return url
    raise ConfigurationError(f"unsupported database URL (use sqlite:///PATH or postgresql://…): {url}")


class StoreEngine:
    """A fact store's database: its engine, connections and schema."""

    def __init__(self, url: str) -> None:
        self.url = url
        engine_url = _engine_url(url)
        #: The SQLite database file (None for PostgreSQL, in-memory or ``file:`` URI databases).
        self.path: Path | None = _sqlite_file(engine_url)
        #: Opened read-only: an existing SQLite store this process cannot write (file or directory).
        self.read_only = False
        self._read_only_uri: str | None = None
        connect_args: dict[str, Any] = {}
        if engine_url.startswith("sqlite"):
            connect_args["timeout"] = SQLITE_BUSY_TIMEOUT
            if self.path is not None:
                self._read_only_uri = self._check_sqlite_file(self.path)
                self.read_only = self._read_only_uri is not None
        self.engine: Engine = create_engine(engine_url, future=True, connect_args=connect_args)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", self._sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
            if self._read_only_uri is not None:
                event.listen(self.engine, "do_connect", self._sqlite_read_only)
        self._insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        try:
            self._migrate()
        except DBAPIError as exc:
            self.engine.dispose()
            if not _environmental(exc):
                raise
            raise StoreError(f"cannot open fact store {self.where}: {_reason(exc)}") from None

    def _safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @property
    def where(self) -> str:
        """The store as messages name it: the SQLite file, else the URL without its password."""
        return str(self.path) if self.path is not None else self._safe_url()

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    # --- connections ------------------------------------------------------------------

    def _check_sqlite_file(self, path: Path) -> str | None:
        """The read-only URI to open an existing ``path`` this process cannot write (None: it can,
        or the file is to be created); a :class:`StoreError` when it cannot be created."""
        directory = path.parent
        if not path.exists():
            if not directory.is_dir():
                raise StoreError(f"cannot create fact store {path}: directory {directory} does not exist")
            if not os.access(directory, os.W_OK | os.X_OK):
                raise StoreError(f"cannot create fact store {path}: directory {directory} is not writable")
            return None
        if not os.access(path, os.R_OK):
            raise StoreError(f"cannot open fact store {path}: the file is not readable")
        if os.access(path, os.W_OK) and os.access(directory, os.W_OK | os.X_OK):
            return None
        # WAL mode needs its -shm file. A writer still holding the store open keeps it (read it
        # with the writer, through its locks); without one SQLite cannot create it in a
        # read-only directory, so the file is read as immutable (nothing writes it then).
        with path.open("rb") as handle:
            header = handle.read(20)
        wal_mode = header[18:20] == b"\x02\x02"
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        live = wal.exists() and shm.exists()
        if wal_mode and not live and wal.exists() and wal.stat().st_size > 0:
            raise StoreError(f"fact store {path} is read-only and has changes in {wal.name} that were never "
                             "checkpointed; open it once with write access")
        immutable = "&immutable=1" if wal_mode and not live else ""
        return f"file:{quote(str(path.absolute()))}?mode=ro{immutable}"

    def _sqlite_read_only(self, _dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
        cargs[:] = [self._read_only_uri]
        cparams["uri"] = True

    def _sqlite_connect(self, dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun by _sqlite_begin, DDL included
        if self.read_only:
            return
        cursor = dbapi_connection.cursor()
        try:
            _enable_wal(cursor)
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_PAGES}")
        finally:
            cursor.close()

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection for reads (one snapshot per transaction on both backends)."""
        try:
            with self.engine.connect() as conn:
                yield conn
        except DBAPIError as exc:
            if not _environmental(exc):
                raise
            raise StoreError(f"store read failed ({self.where}): {_reason(exc)}") from None

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One write transaction (SQLite: ``BEGIN IMMEDIATE``, the database's write lock)."""
        if self.read_only:
            raise StoreError(f"store write failed: fact store {self.where} is read-only")
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    yield conn
        except DBAPIError as exc:
            if not _environmental(exc):
                raise
            raise StoreError(f"store write failed: {_reason(exc)} ({self.where})") from None

    @contextmanager
    def _schema_lock(self) -> Iterator[Connection]:
        """The write transaction that creates or migrates the store, holding the schema lock."""
        with self.engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                if self.backend == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _signed(SCHEMA_LOCK)})
                yield conn

    # --- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        """Create or migrate the store when it needs it (under the schema lock), else only read."""
        with self.engine.connect() as conn:
            version = self._stored_version(conn)
        if version == schema.SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        if self.read_only:
            if version is None:
                raise StoreError(f"fact store {self.where} has no schema version and is read-only: "
                                 "it cannot be created")
            raise StoreError(f"fact store {self.where} is at schema version {version} and needs migrating to "
                             f"version {schema.SCHEMA_VERSION}, but it is read-only; open it once with write access")
        with self._schema_lock() as conn:
            version = self._stored_version(conn)  # again: another process may have done it meanwhile
            if version == schema.SCHEMA_VERSION:
                return
            self._refuse_newer(version)
            if version is None:
                self._create(conn)
                return
            for step in range(version, schema.SCHEMA_VERSION):
                MIGRATIONS[step](conn)
                conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version")
                             .values(value=str(step + 1)))

    def _stored_version(self, conn: Connection) -> int | None:
        """The stored schema version; None when there is none (no meta table, or no version row)."""
        if not inspect(conn).has_table(schema.meta.name):
            return None
        found = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).scalar()
        if found is None:
            return None
        if not found.strip().isdigit() or int(found) < 1:
            raise StoreError(f"fact store {self.where} has an unknown schema version {found!r} in sediment_meta")
        return int(found)

    @staticmethod
    def _refuse_newer(version: int | None) -> None:
        if version is not None and version > schema.SCHEMA_VERSION:
            raise StoreError(
                f"fact store schema version {version} is newer than this Sediment "
                f"(knows {schema.SCHEMA_VERSION}); upgrade Sediment"
            )

    def _create(self, conn: Connection) -> None:
        """Create every table and the version row. A store without a version row is what an
        interrupted creation of an older Sediment left (this one creates in one transaction): its
        tables, all empty, are dropped and created anew; tables holding rows are refused."""
        existing = set(inspect(conn).get_table_names())
        leftovers = [name for name in (*schema.metadata.tables, "messages") if name in existing]
        holding = [name for name in leftovers if name != schema.meta.name
                   and conn.execute(text(f"SELECT 1 FROM {name} LIMIT 1")).first() is not None]
        if holding:
            raise StoreError(f"fact store {self.where} has no schema version in sediment_meta but holds data "
                             f"({', '.join(sorted(holding))}); restore it from a backup")
        for name in leftovers:
            conn.execute(text(f"DROP TABLE {name}"))
        schema.metadata.create_all(conn)
        conn.execute(schema.meta.insert().values(key="schema_version", value=str(schema.SCHEMA_VERSION)))

    def schema_version(self) -> int:
        with self._reading() as conn:
            return int(conn.execute(select(schema.meta.c.value)
                                    .where(schema.meta.c.key == "schema_version")).scalar_one())


def _sqlite_file(engine_url: str) -> Path | None:
    """The database file of a SQLite URL (None: not SQLite, in memory, or a ``file:`` URI)."""
    if not engine_url.startswith("sqlite"):
        return None
    database = make_url(engine_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).absolute()


def _sqlite_begin(conn: Connection) -> None:
    """Begin SQLite transactions ourselves (pysqlite would not for DDL): deferred for reads,
    ``IMMEDIATE`` (the write lock, waited for) for writes, creation and migrations."""
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")


def _enable_wal(cursor: Any) -> None:
    """Switch the database to WAL mode once. Switching takes an exclusive lock for which SQLite
    does not wait (processes creating one store at once would fail), so it is retried."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.002, 0.02))


def _signed(value: int) -> int:
    """A 64-bit lock key as PostgreSQL's signed bigint."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _environmental(exc: DBAPIError) -> bool:
    """Whether a database error is the environment's (unreachable, locked, full, read-only,
    corrupt, not permitted), shown as one line, rather than a bug in Sediment's statements."""
    if isinstance(exc, OperationalError) or type(exc) is DatabaseError:
        return True
    return getattr(exc.orig, "sqlstate", None) in {"42501", "25006"}  # insufficient privilege, read-only


def _reason(exc: DBAPIError) -> str:
    """The driver's message of a database error, on one line."""
    return "; ".join(line.strip() for line in str(exc.orig).splitlines() if line.strip()) or type(exc.orig).__name__
