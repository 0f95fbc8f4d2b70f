"""The fact store: one interface (:class:`FactStore`), SQLite and PostgreSQL backends.

SQLAlchemy Core owns the dialect differences; the same tables, natural-key UNIQUE indexes
and ``INSERT … ON CONFLICT DO NOTHING`` run on both. Facts are append-only; quarantine is a
log, never a delete.

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

import copy
import json
import os
import random
import sqlite3
import time
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, make_url, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DatabaseError, DBAPIError, OperationalError

from sediment.errors import ConfigurationError, SedimentError
from sediment.home import ensure_home, sediment_home
from sediment.model.facts import (
    CIOutcome,
    DeveloperDecision,
    EditObservation,
    FactModel,
    InferenceCall,
    InferenceMessage,
    RepositoryRename,
    SessionCommitObservation,
    TestCaseResult,
    ToolDefinition,
)
from sediment.model.repository_evidence import EVIDENCE_TABLES, RepositoryEvidence, evidence_of_all
from sediment.records import decode_record, encode_record, plain, sha256_hex, sortable_time
from sediment.store import schema
from sediment.store.interning import expand, intern, references
from sediment.store.keys import MODELS, fact_org, table_and_key
from sediment.store.migrations import MIGRATIONS

HASH_CACHE_SIZE = 4096
TOOL_LISTS_CACHE_SIZE = 256
KNOWN_BLOBS_LIMIT = 2_000_000
LAST_INPUTS_SESSIONS = 256
#: Lists of a call's ``raw`` payload that replay earlier turns; stored as content blobs.
REPLAYED_RAW_LISTS: tuple[tuple[str, ...], ...] = (("request", "messages"), ("request", "input"), ("messages",))
#: Seconds a SQLite writer waits for another's write lock (a migration, a concurrent ingest).
SQLITE_BUSY_TIMEOUT = 60.0
#: The PostgreSQL advisory lock (per database) that creation and migrations hold.
SCHEMA_LOCK = 0x5EDD_0005_C4E3_A001
_WRITE = "sediment_write"  # execution option: this connection's transactions write (SQLite: BEGIN IMMEDIATE)

#: One replayed hash list of a prepared call: its delta as encoded when it was prepared, and the
#: whole list when the delta's base is not among the earlier calls of the same batch (else None).
Replay = tuple[dict[str, Any], list[str] | None]


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


@dataclass
class AppendResult:
    """What one append stored: new Facts and collapsed redeliveries, per table."""

    stored: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)


@dataclass
class PreparedFacts:
    """Facts encoded for insertion: new content blobs and one row per Fact, in order.

    ``replays`` holds, for each inference call (by its index in ``rows``), its replayed hash
    lists by kind (``input``, ``raw:request/messages``, …): :meth:`FactStore.write` settles
    each delta against the calls the store really holds before inserting the row.
    """

    blobs: dict[str, bytes]
    rows: list[tuple[str, dict[str, Any]]]
    replays: dict[int, dict[str, Replay]] = field(default_factory=dict)


class FactStore:
    """Append-only Facts with content-addressed messages and a quarantine log."""

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
        self._hash_cache: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        self._tool_lists: OrderedDict[tuple[int, ...], tuple[tuple[ToolDefinition, ...], str]] = OrderedDict()
        self._known_blobs: set[str] = set()
        self._pending_blobs: dict[str, bytes] = {}
        #: Per (org, Session, list kind): the last call *prepared* and its list (deltas are
        #: encoded against it, then settled at write time).
        self._last_inputs: OrderedDict[tuple[str, str, str], tuple[str, list[str]]] = OrderedDict()
        #: Per (org, Session, list kind): the last call this store *inserted* and its list: the
        #: only base a stored delta may name.
        self._stored_lists: OrderedDict[tuple[str, str, str], tuple[str, list[str]]] = OrderedDict()
        try:
            self._migrate()
        except DBAPIError as exc:
            self.engine.dispose()
            if not _environmental(exc):
                raise
            raise StoreError(f"cannot open fact store {self.where}: {_reason(exc)}") from None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> FactStore:
        return cls(database_url(environ))

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

    # --- writing ----------------------------------------------------------------------

    def append(self, facts: Iterable[FactModel]) -> AppendResult:
        """Store new Facts; a Fact whose natural key or id exists already is a duplicate."""
        return self.write(self._prepare(facts, portable=False))

    def prepare(self, facts: Iterable[FactModel]) -> PreparedFacts:
        """Encode Facts into rows and new content blobs without touching the database.

        The CPU-heavy half of :meth:`append`; ingest workers run it in parallel and the parent
        :meth:`write` s the results in input order. Each result is complete on its own: any
        store instance can write it.
        """
        return self._prepare(facts, portable=True)

    def _prepare(self, facts: Iterable[FactModel], *, portable: bool) -> PreparedFacts:
        rows: list[tuple[str, dict[str, Any]]] = []
        replays: dict[int, dict[str, Replay]] = {}
        batch: set[tuple[str, str, str]] = set()
        for fact in facts:
            table_name, fact_id, natural_key = table_and_key(fact)
            values: dict[str, Any] = {"fact_id": fact_id, "org_id": fact_org(fact), "natural_key": natural_key}
            if isinstance(fact, InferenceCall):
                replay: dict[str, Replay] = {}
                values |= self._call_columns(fact, replay, batch, portable)
                replays[len(rows)] = replay
            else:
                values |= self._columns(fact)
            rows.append((table_name, values))
        blobs, self._pending_blobs = self._pending_blobs, {}
        return PreparedFacts(blobs, rows, replays)

    def write(self, prepared: PreparedFacts) -> AppendResult:
        """Insert prepared rows in one transaction (redeliveries collapse on natural keys).

        A call's replay deltas were encoded against the calls prepared before it; here each is
        settled against the last call of its Session this store *inserted* (a redelivery that
        collapsed is no base, nor is a call another worker prepared), re-encoded when they
        differ, so what is read back is exactly what was appended, whatever the batching.
        """
        result = AppendResult()
        try:
            with self._writing() as conn:
                self._write_rows(conn, prepared, result)
        except BaseException:
            # The transaction rolled back: forget what it claimed to store, and the hashes whose
            # cache hits would skip queueing their blobs again.
            self._known_blobs.clear()
            self._hash_cache.clear()
            self._tool_lists.clear()
            self._last_inputs.clear()
            self._stored_lists.clear()
            raise
        return result

    def _write_rows(self, conn: Connection, prepared: PreparedFacts, result: AppendResult) -> None:
        blobs = dict(prepared.blobs)
        batch: dict[tuple[str, str, str], tuple[str, list[str]]] = {}  # the last call prepared, in this batch
        used: set[str] = set()  # bodies of inserted calls
        dropped: set[str] = set()  # bodies encoded but not needed: a redelivery's, or one rebased
        for index, (table_name, values) in enumerate(prepared.rows):
            replay = prepared.replays.get(index) if table_name == "inference_calls" else None
            lists: dict[str, list[str]] = {}
            if replay is not None:
                values, lists = self._settle(conn, values, replay, batch, blobs, dropped)
            table = schema.FACT_TABLES[table_name]
            statement = self._insert(table).values(**values).on_conflict_do_nothing().returning(table.c.fact_id)
            if conn.execute(statement).first() is None:
                result.duplicates[table_name] += 1
                if replay is not None:  # a redelivery's body is never read (its messages may be)
                    dropped.add(values["record"])
                continue
            result.stored[table_name] += 1
            if replay is not None:
                used.add(values["record"])
                for kind, hashes in lists.items():
                    _remember(self._stored_lists, (values["org_id"], values["session_id"], kind),
                              (values["fact_id"], hashes))
        for digest in dropped - used:
            if blobs.pop(digest, None) is not None:
                self._known_blobs.discard(digest)
        if blobs:
            conn.execute(self._insert(schema.blobs).on_conflict_do_nothing(),
                         [{"blob_hash": d, "content": c} for d, c in blobs.items()])

    def _settle(self, conn: Connection, values: dict[str, Any], replay: dict[str, Replay],
                batch: dict[tuple[str, str, str], tuple[str, list[str]]], blobs: dict[str, bytes],
                dropped: set[str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
        """A call's row with every replay delta based on the last call this store inserted."""
        lists: dict[str, list[str]] = {}
        raw_changes: dict[str, dict[str, Any]] = {}
        for kind, (encoded, whole) in replay.items():
            key = (values["org_id"], values["session_id"], kind)
            if whole is None:
                if encoded["base"] is None:
                    whole = list(encoded["add"])
                else:
                    previous = batch.get(key)
                    if previous is None or previous[0] != encoded["base"]:
                        raise StoreError(f"prepared facts are incomplete: call {values['fact_id']} replays "
                                         f"{encoded['base']}, not prepared before it in its batch")
                    whole = previous[1][: encoded["keep"]] + list(encoded["add"])
            batch[key] = (values["fact_id"], whole)
            lists[kind] = whole
            settled = _delta_against(self._stored_lists.get(key), whole)
            if settled == encoded:
                continue
            if kind == "input":
                values = {**values, "input_hashes": json.dumps(settled, separators=(",", ":"))}
            else:
                raw_changes[kind] = settled
        if raw_changes:
            values = {**values, "record": self._rebase_body(conn, values["record"], raw_changes, blobs, dropped)}
        return values, lists

    def _rebase_body(self, conn: Connection, digest: str, changes: dict[str, dict[str, Any]],
                     blobs: dict[str, bytes], dropped: set[str]) -> str:
        """The hash of a call body whose replayed raw lists carry ``changes`` (a new blob)."""
        content = blobs.get(digest)
        if content is None:
            content = conn.execute(select(schema.blobs.c.content).where(schema.blobs.c.blob_hash == digest)).scalar()
        if content is None:
            raise StoreError(f"fact store is missing the body blob {digest} of a call being written")
        body = decode_record(zlib.decompress(content).decode("ascii"))  # interned: the delta dicts are as written
        for kind, delta in changes.items():
            path = kind.removeprefix("raw:").split("/")
            holder = body["raw"]
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = delta
        record = encode_record(body).encode("ascii")
        rebased = sha256_hex(record)
        dropped.add(digest)
        if rebased not in self._known_blobs:
            blobs[rebased] = zlib.compress(record, 1)
            self._known_blobs.add(rebased)
        return rebased

    def _blob(self, value: Any) -> str:
        """The content hash of ``value``'s canonical record; queued for storage if new.

        Replayed messages arrive as the very same objects call after call (see
        :class:`~sediment.ingest.calls.ReplayMemo`), so an identity cache skips re-encoding them.
        """
        hit = self._hash_cache.get(id(value))
        if hit is not None and hit[0] is value:
            self._hash_cache.move_to_end(id(value))
            return hit[1]
        strings: dict[str, bytes] = {}
        record = encode_record(intern(plain(value), strings)).encode("ascii")
        digest = sha256_hex(record)
        self._hash_cache[id(value)] = (value, digest)
        if len(self._hash_cache) > HASH_CACHE_SIZE:
            self._hash_cache.popitem(last=False)
        for string_digest, string in strings.items():
            self._queue_blob(string_digest, string)
        self._queue_blob(digest, record)
        return digest

    def _tools_blob(self, tools: tuple[ToolDefinition, ...]) -> str:
        """The content hash of a tool list, stored as one blob.

        Each call's list is a new tuple, but a resent list holds the very same definitions
        (see :class:`~sediment.ingest.calls.ReplayMemo`), so they key a cache of their hashes.
        """
        key = tuple(id(tool) for tool in tools)
        hit = self._tool_lists.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            self._tool_lists.move_to_end(key)
            return hit[1]
        digest = self._blob(tools)
        self._tool_lists[key] = (tools, digest)
        if len(self._tool_lists) > TOOL_LISTS_CACHE_SIZE:
            self._tool_lists.popitem(last=False)
        return digest

    def _queue_blob(self, digest: str, record: bytes) -> None:
        if digest not in self._known_blobs:
            self._pending_blobs[digest] = zlib.compress(record, 1)
            self._known_blobs.add(digest)
            if len(self._known_blobs) > KNOWN_BLOBS_LIMIT:
                self._known_blobs = set(self._pending_blobs)

    def _call_columns(self, fact: InferenceCall, replay: dict[str, Replay], batch: set[tuple[str, str, str]],
                      portable: bool) -> dict[str, Any]:
        raw, refs = self._externalize_raw(fact, replay, batch, portable)
        # The tool list is a blob of its own, and the body never spells the field: a call
        # without tools stores exactly the bytes it did before InferenceCall had one.
        body = plain(fact.model_copy(update={"input_messages": (), "output_messages": (), "raw": raw}))
        del body["tools"]
        if fact.capture is None:  # likewise a wire call's body never spells its (absent) capture
            del body["capture"]
        inputs = [self._blob(m) for m in fact.input_messages]
        delta = self._delta(fact, "input", inputs, replay, batch, portable)
        return {
            "session_id": fact.session_id,
            "observed_at": sortable_time(fact.observed_at),
            "input_hashes": json.dumps(delta, separators=(",", ":")),
            "output_hashes": json.dumps([self._blob(m) for m in fact.output_messages]),
            "raw_refs": json.dumps(refs),
            "tools_hash": None if fact.tools is None else self._tools_blob(fact.tools),
            "record": self._blob(body),  # the call body is stored compressed, by its hash
        }

    def _columns(self, fact: FactModel) -> dict[str, Any]:
        columns: dict[str, Any] = {"record": encode_record(fact)}
        table = schema.FACT_TABLES[table_and_key(fact)[0]]
        for name in ("session_id", "repo", "commit_sha", "provider", "run_id", "run_attempt", "test_id"):
            if name in table.c:
                columns[name] = getattr(fact, name)
        if isinstance(fact, CIOutcome | SessionCommitObservation | TestCaseResult):
            columns["captured_at"] = sortable_time(fact.captured_at)
        return columns

    def _delta(self, fact: InferenceCall, kind: str, inputs: list[str], replay: dict[str, Replay],
               batch: set[tuple[str, str, str]], portable: bool) -> dict[str, Any]:
        """A hash list as ``{"base": call id, "keep": n, "add": [...]}``: the first n hashes of
        the same list of the base call (the Session's previously appended call), then the new
        ones. A replaying agent's lists thus cost O(new messages), not O(history).

        Encoded here against the call prepared before it; :meth:`write` settles it against the
        call really stored before it, from ``replay[kind]`` (the whole list rides along unless
        the base is an earlier call of the same ``portable`` batch)."""
        key = (fact.org_id, fact.session_id, kind)
        delta = _delta_against(self._last_inputs.get(key), inputs)
        _remember(self._last_inputs, key, (fact.inference_call_id, inputs))
        whole = inputs if not portable or (delta["base"] is not None and key not in batch) else None
        batch.add(key)
        replay[kind] = (delta, whole)
        return delta

    def _externalize_raw(self, fact: InferenceCall, replay: dict[str, Replay], batch: set[tuple[str, str, str]],
                         portable: bool) -> tuple[dict[str, Any], list[list[str]]]:
        """Move replayed message lists out of ``raw`` into blobs (restored exactly on read)."""
        refs: list[list[str]] = []
        raw = fact.raw
        result = raw
        for path in REPLAYED_RAW_LISTS:
            holder: Any = raw
            for key in path[:-1]:
                holder = holder.get(key) if isinstance(holder, dict) else None
            if not isinstance(holder, dict) or not isinstance(holder.get(path[-1]), list):
                continue
            if result is raw:
                result = copy.copy(raw)
            target = result
            for key in path[:-1]:
                target[key] = copy.copy(target[key])
                target = target[key]
            hashes = [self._blob(item) for item in holder[path[-1]]]
            target[path[-1]] = self._delta(fact, "raw:" + "/".join(path), hashes, replay, batch, portable)
            refs.append(list(path))
        return result, refs

    # --- quarantine -------------------------------------------------------------------

    def _log(self, org_id: str, table: str, fact_id: str, action: str, reason: str) -> int:
        if table not in schema.FACT_TABLES:
            raise StoreError(f"unknown fact table {table!r}; tables: {', '.join(sorted(schema.FACT_TABLES))}")
        if not reason.strip():
            raise StoreError("a quarantine action needs a reason")
        facts = schema.FACT_TABLES[table]
        with self._writing() as conn:
            exists = conn.execute(select(facts.c.fact_id).where(facts.c.fact_id == fact_id,
                                                                facts.c.org_id == org_id)).first()
            if exists is None:
                raise StoreError(f"no {table} Fact {fact_id!r} in org {org_id!r}")
            current = self._quarantined(conn, org_id, table)
            if (action == "quarantine") == (fact_id in current):
                state = "quarantined" if fact_id in current else "not quarantined"
                raise StoreError(f"{table} Fact {fact_id!r} is already {state}")
            row = conn.execute(schema.quarantine_log.insert().values(
                org_id=org_id, table_name=table, fact_id=fact_id, action=action, reason=reason.strip(),
                recorded_at=sortable_time(datetime.now(UTC)),
            ))
            key = row.inserted_primary_key
            if key is None:
                raise StoreError("the quarantine log did not return a revision")
            return int(key[0])

    def quarantine(self, org_id: str, table: str, fact_id: str, reason: str) -> int:
        """Exclude a Fact from every read; returns the new quarantine revision."""
        return self._log(org_id, table, fact_id, "quarantine", reason)

    def release(self, org_id: str, table: str, fact_id: str, reason: str) -> int:
        """Undo a quarantine (the log keeps both actions); returns the new revision."""
        return self._log(org_id, table, fact_id, "release", reason)

    def quarantine_revision(self, org_id: str) -> int:
        """The org's quarantine-log high-water mark (0 when nothing was ever quarantined)."""
        with self._reading() as conn:
            value = conn.execute(select(func.max(schema.quarantine_log.c.revision))
                                 .where(schema.quarantine_log.c.org_id == org_id)).scalar()
            return int(value or 0)

    @staticmethod
    def _quarantined(conn: Any, org_id: str, table: str) -> set[str]:
        log = schema.quarantine_log
        rows = conn.execute(select(log.c.fact_id, log.c.action)
                            .where(log.c.org_id == org_id, log.c.table_name == table)
                            .order_by(log.c.revision))
        latest: dict[str, str] = {}
        for fact_id, action in rows:
            latest[fact_id] = action
        return {fact_id for fact_id, action in latest.items() if action == "quarantine"}

    # --- reading ----------------------------------------------------------------------

    def _visible(self, conn: Any, table_name: str, org_id: str, *conditions: Any,
                 order: Sequence[Any] = ()) -> Iterator[Any]:
        table = schema.FACT_TABLES[table_name]
        hidden = self._quarantined(conn, org_id, table_name)
        query = select(table).where(table.c.org_id == org_id, *conditions)
        query = query.order_by(*order, table.c.fact_id)
        for row in conn.execute(query):
            if row.fact_id not in hidden:
                yield row

    def _model(self, table_name: str, record: str) -> Any:
        return MODELS[table_name].model_validate(decode_record(record))

    def session_ids(self, org_id: str) -> list[str]:
        """Every Session with at least one visible inference call, sorted."""
        with self._reading() as conn:
            sessions = {row.session_id for row in self._visible(conn, "inference_calls", org_id)}
        return sorted(sessions)

    def calls_for_session(self, org_id: str, session_id: str) -> list[InferenceCall]:
        """The Session's visible calls by observation time; each distinct message is built once."""
        table = schema.inference_calls
        with self._reading() as conn:
            hidden = self._quarantined(conn, org_id, "inference_calls")
            every = list(conn.execute(select(table).where(table.c.org_id == org_id, table.c.session_id == session_id)
                                      .order_by(table.c.observed_at, table.c.fact_id)))
            rows = [row for row in every if row.fact_id not in hidden]
            visible = [row.fact_id for row in rows]  # only what is read is resolved: a hidden call may be broken

            def resolve(deltas: dict[str, Any], wanted: list[str]) -> dict[str, list[str]]:
                return _resolve_deltas(deltas, wanted, f"of Session {session_id!r} (org {org_id!r})")

            inputs = resolve({row.fact_id: json.loads(row.input_hashes) for row in every}, visible)
            bodies = self._read_blobs(conn, {row.fact_id: row.record for row in every}.values())
            bodies = {row.fact_id: copy.deepcopy(bodies[row.record]) for row in every}
            raw_lists: dict[str, dict[str, list[str]]] = {}
            for path in {tuple(p) for row in every for p in json.loads(row.raw_refs)}:
                deltas = {}
                for row in every:
                    if list(path) in json.loads(row.raw_refs):
                        deltas[row.fact_id] = _at(bodies[row.fact_id]["raw"], path)
                raw_lists["/".join(path)] = resolve(deltas, [fact_id for fact_id in visible if fact_id in deltas])
            parsed = [(row, bodies[row.fact_id], json.loads(row.raw_refs)) for row in rows]
            wanted: set[str] = set()
            for row, _body, refs in parsed:
                wanted.update(inputs[row.fact_id], json.loads(row.output_hashes))
                if row.tools_hash is not None:
                    wanted.add(row.tools_hash)
                for path in refs:
                    wanted.update(raw_lists["/".join(path)][row.fact_id])
            blobs = self._read_blobs(conn, wanted)
        messages: dict[str, InferenceMessage] = {}
        tool_lists: dict[str, tuple[ToolDefinition, ...]] = {}

        def message(digest: str) -> InferenceMessage:
            if digest not in messages:
                messages[digest] = InferenceMessage.model_validate(blobs[digest])
            return messages[digest]

        def tools(digest: str) -> tuple[ToolDefinition, ...]:
            if digest not in tool_lists:
                tool_lists[digest] = tuple(ToolDefinition.model_validate(t) for t in blobs[digest])
            return tool_lists[digest]

        calls = []
        for row, body, refs in parsed:
            for path in refs:
                holder = body["raw"]
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = [blobs[d] for d in raw_lists["/".join(path)][row.fact_id]]
            body["input_messages"] = tuple(message(d) for d in inputs[row.fact_id])
            body["output_messages"] = tuple(message(d) for d in json.loads(row.output_hashes))
            if row.tools_hash is not None:  # else the body holds the call's tools (None, or inline in v2)
                body["tools"] = tools(row.tools_hash)
            calls.append(InferenceCall.model_validate(body))
        return calls

    @classmethod
    def _read_blobs(cls, conn: Any, wanted: Iterable[str]) -> dict[str, Any]:
        """Decoded blobs by hash, with their interned long strings expanded."""
        found = cls._fetch(conn, set(wanted))
        strings = cls._fetch(conn, set().union(*(references(v, set()) for v in found.values())))
        return {digest: expand(value, strings) for digest, value in found.items()}

    @staticmethod
    def _fetch(conn: Any, wanted: set[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        hashes = sorted(wanted)
        for start in range(0, len(hashes), 500):
            query = select(schema.blobs.c.blob_hash, schema.blobs.c.content).where(
                schema.blobs.c.blob_hash.in_(hashes[start:start + 500]))
            for digest, content in conn.execute(query):
                found[digest] = decode_record(zlib.decompress(content).decode("ascii"))
        missing = wanted - set(found)
        if missing:
            raise StoreError(f"fact store is missing {len(missing)} content blob(s), e.g. {min(missing)}")
        return found

    def decisions_for_session(self, org_id: str, session_id: str) -> list[DeveloperDecision]:
        table = schema.developer_decisions
        with self._reading() as conn:
            return [self._model("developer_decisions", r.record)
                    for r in self._visible(conn, "developer_decisions", org_id, table.c.session_id == session_id)]

    def session_facts(self, table_name: str, org_id: str, session_id: str) -> list[FactModel]:
        """The visible Facts of one Session-scoped table (decisions, edit observations, rejected
        edits, retry linkages, commit observations) in fact-id order."""
        table = schema.FACT_TABLES[table_name]
        if table_name == "inference_calls" or "session_id" not in table.c:
            raise StoreError(f"{table_name} is not a table of Session-scoped Facts read this way")
        with self._reading() as conn:
            return [self._model(table_name, r.record)
                    for r in self._visible(conn, table_name, org_id, table.c.session_id == session_id)]

    def edit_observations_for_session(self, org_id: str, session_id: str) -> list[EditObservation]:
        """The Session's visible edit observations, by ``(agent_harness, call_id, occurred_at,
        observation_id)`` (compared in Python, so both backends give one order)."""
        found = [fact for fact in self.session_facts("edit_observations", org_id, session_id)
                 if isinstance(fact, EditObservation)]
        return sorted(found, key=lambda o: (o.agent_harness, o.call_id, o.occurred_at, o.observation_id))

    def observations_for_session(self, org_id: str, session_id: str) -> list[SessionCommitObservation]:
        table = schema.session_commit_observations
        with self._reading() as conn:
            return [self._model("session_commit_observations", r.record)
                    for r in self._visible(conn, "session_commit_observations", org_id,
                                           table.c.session_id == session_id)]

    def ci_outcomes_for_commits(self, org_id: str, commits: Iterable[tuple[str, str]]) -> list[CIOutcome]:
        """Visible CI outcomes of the given ``(repo, commit_sha)`` pairs."""
        table = schema.ci_outcomes
        outcomes: list[CIOutcome] = []
        with self._reading() as conn:
            for repo, sha in sorted(set(commits)):
                outcomes.extend(self._model("ci_outcomes", r.record) for r in self._visible(
                    conn, "ci_outcomes", org_id, table.c.repo == repo, table.c.commit_sha == sha))
        return outcomes

    def test_results_for_commits(self, org_id: str, commits: Iterable[tuple[str, str]]) -> list[TestCaseResult]:
        """Visible per-test results recorded on the given ``(repo, commit_sha)`` pairs.

        Sorted by ``(repo, commit_sha, provider, run_id, run_attempt, test_id, report_sha256,
        locator)``, compared in Python (code point order), so both backends, whatever their
        collation, return the same list.
        """
        table = schema.test_case_results
        results: list[TestCaseResult] = []
        with self._reading() as conn:
            for repo, sha in sorted(set(commits)):
                results.extend(self._model("test_case_results", r.record) for r in self._visible(
                    conn, "test_case_results", org_id, table.c.repo == repo, table.c.commit_sha == sha))
        results.sort(key=lambda r: (r.repo, r.commit_sha, r.provider, r.run_id, r.run_attempt, r.test_id,
                                    r.report_sha256, r.locator))
        return results

    def repository_evidence(self, org_id: str) -> Iterator[RepositoryEvidence]:
        """The repository references of every visible identity-capable Fact of the org (CI
        outcomes, pushes, merges with their head repository, session-commit observations), in
        table then fact id order, read a batch at a time (what a repository context is built from)."""
        for table_name in EVIDENCE_TABLES:
            table = schema.FACT_TABLES[table_name]
            with self._reading() as conn:
                hidden = self._quarantined(conn, org_id, table_name)
                query = (select(table.c.fact_id, table.c.record).where(table.c.org_id == org_id)
                         .order_by(table.c.fact_id).execution_options(yield_per=500))
                for row in conn.execute(query):
                    if row.fact_id not in hidden:
                        yield from evidence_of_all((self._model(table_name, row.record),))

    def repository_renames(self, org_id: str) -> list[RepositoryRename]:
        """Every visible RepositoryRename of the org, by fact id."""
        with self._reading() as conn:
            return [self._model("repository_renames", r.record)
                    for r in self._visible(conn, "repository_renames", org_id)]

    def facts(self, table_name: str, org_id: str) -> Iterator[FactModel]:
        """Every visible Fact of one table (inference calls without their messages rehydrated)."""
        if table_name == "inference_calls":
            for session in self.session_ids(org_id):
                yield from self.calls_for_session(org_id, session)
            return
        with self._reading() as conn:
            rows = list(self._visible(conn, table_name, org_id))
        for row in rows:
            yield self._model(table_name, row.record)

    def counts(self, org_id: str | None = None) -> dict[str, dict[str, int]]:
        """Per table: stored Facts and how many of them are quarantined now."""
        result: dict[str, dict[str, int]] = {}
        with self._reading() as conn:
            orgs = ([org_id] if org_id is not None else
                    [r[0] for r in conn.execute(select(schema.quarantine_log.c.org_id).distinct())])
            for name, table in schema.FACT_TABLES.items():
                query = select(func.count()).select_from(table)
                if org_id is not None:
                    query = query.where(table.c.org_id == org_id)
                hidden = sum(len(self._quarantined(conn, org, name)) for org in orgs)
                result[name] = {"stored": int(conn.execute(query).scalar_one()), "quarantined": hidden}
        return result

    def stored_bytes(self) -> dict[str, int]:
        """Bytes the store holds for Facts: content blobs, call bodies, every other Fact."""
        with self._reading() as conn:
            blobs = conn.execute(select(func.coalesce(func.sum(func.length(schema.blobs.c.content)), 0))).scalar()
            table = schema.inference_calls
            calls = conn.execute(select(func.coalesce(func.sum(
                func.length(table.c.record) + func.length(table.c.input_hashes) + func.length(table.c.output_hashes)
                + func.coalesce(func.length(table.c.tools_hash), 0)), 0))).scalar()
            others = 0
            for name, table in schema.FACT_TABLES.items():
                if name != "inference_calls":
                    others += int(conn.execute(select(func.coalesce(func.sum(func.length(table.c.record)), 0)))
                                  .scalar() or 0)
        sizes = {"blobs": int(blobs or 0), "calls": int(calls or 0), "other_facts": others}
        sizes["total"] = sum(sizes.values())
        return sizes

    def close(self) -> None:
        self.engine.dispose()


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


def _remember(lists: OrderedDict[tuple[str, str, str], tuple[str, list[str]]], key: tuple[str, str, str],
              value: tuple[str, list[str]]) -> None:
    """Record a Session's latest call and list, keeping the :data:`LAST_INPUTS_SESSIONS` latest."""
    lists[key] = value
    lists.move_to_end(key)
    if len(lists) > LAST_INPUTS_SESSIONS:
        lists.popitem(last=False)


def _delta_against(previous: tuple[str, list[str]] | None, hashes: list[str]) -> dict[str, Any]:
    """``hashes`` as a delta on ``previous`` (a call id and its list): its longest common prefix
    kept, the rest added; a full list when nothing is shared."""
    keep = 0
    if previous is not None:
        earlier = previous[1]
        limit = min(len(earlier), len(hashes))
        while keep < limit and earlier[keep] == hashes[keep]:
            keep += 1
    if previous is None or keep == 0:
        return {"base": None, "keep": 0, "add": hashes}
    return {"base": previous[0], "keep": keep, "add": hashes[keep:]}


def _resolve_deltas(deltas: dict[str, Any], wanted: Iterable[str], scope: str = "") -> dict[str, list[str]]:
    """Expand the delta-encoded hash lists of ``wanted`` calls (a base call's first n hashes,
    then additions); bases are looked up among ``deltas`` only (the calls of one Session)."""
    resolved: dict[str, list[str]] = {}

    def resolve(fact_id: str) -> list[str]:
        if fact_id in resolved:
            return resolved[fact_id]
        chain = [fact_id]
        seen = {fact_id}
        while True:  # walk to a resolved or full list iteratively (chains are as long as a Session)
            delta = deltas[chain[-1]]
            base = delta["base"]
            if base is None or base in resolved:
                break
            if base not in deltas or base in seen:
                problem = ("is circular" if base in seen else
                           f"refers to call {base}, which the store does not hold there")
                raise StoreError(f"inference call {fact_id} {scope} cannot be read: its replay history {problem}; "
                                 f"quarantine it (sediment quarantine inference_calls {fact_id} --reason …)")
            chain.append(base)
            seen.add(base)
        for current in reversed(chain):
            delta = deltas[current]
            prefix = resolved[delta["base"]][: delta["keep"]] if delta["base"] is not None else []
            resolved[current] = prefix + list(delta["add"])
        return resolved[fact_id]

    for fact_id in wanted:
        resolve(fact_id)
    return resolved


def _at(raw: Any, path: Sequence[str]) -> Any:
    for key in path:
        raw = raw[key]
    return raw

__all__ = ["AppendResult", "FactStore", "PreparedFacts", "StoreError", "database_url", "sediment_home"]
