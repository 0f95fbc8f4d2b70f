"""The fact store: one interface (:class:`FactStore`), SQLite and PostgreSQL backends.

SQLAlchemy Core owns the dialect differences; the same tables, natural-key UNIQUE indexes
and ``INSERT … ON CONFLICT DO NOTHING`` run on both. Facts are append-only; quarantine is a
log, never a delete.
"""

from __future__ import annotations

import copy
import json
import os
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, inspect, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import OperationalError

from sediment.errors import ConfigurationError, SedimentError
from sediment.facts import (
    CIOutcome,
    DeveloperDecision,
    FactModel,
    InferenceCall,
    InferenceMessage,
    SessionCommitObservation,
    TestCaseResult,
    ToolDefinition,
)
from sediment.home import sediment_home
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



class StoreError(SedimentError):
    """The fact store is unreachable, of an unknown schema version, or was asked the impossible."""


def database_url(environ: Mapping[str, str] | None = None) -> str:
    """``SEDIMENT_DATABASE_URL``, else ``sqlite:///$SEDIMENT_HOME/facts.db``."""
    env = os.environ if environ is None else environ
    url = env.get("SEDIMENT_DATABASE_URL", "").strip()
    if url:
        return url
    home = sediment_home(env)
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'facts.db'}"


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
    """Facts encoded for insertion: new content blobs and one row per Fact, in order."""

    blobs: dict[str, bytes]
    rows: list[tuple[str, dict[str, Any]]]


class FactStore:
    """Append-only Facts with content-addressed messages and a quarantine log."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = create_engine(_engine_url(url), future=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        self._hash_cache: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        self._tool_lists: OrderedDict[tuple[int, ...], tuple[tuple[ToolDefinition, ...], str]] = OrderedDict()
        self._known_blobs: set[str] = set()
        self._pending_blobs: dict[str, bytes] = {}
        self._last_inputs: OrderedDict[tuple[str, str, str], tuple[str, list[str]]] = OrderedDict()
        try:
            self._migrate()
        except OperationalError as exc:
            raise StoreError(f"cannot open fact store {self._safe_url()}: {exc.orig}") from None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> FactStore:
        return cls(database_url(environ))

    def _safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    # --- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        with self.engine.begin() as conn:
            if not inspect(conn).has_table(schema.meta.name):
                schema.metadata.create_all(conn)
                conn.execute(schema.meta.insert().values(key="schema_version", value=str(schema.SCHEMA_VERSION)))
                return
            found = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).scalar()
            version = int(found or 0)
            if version > schema.SCHEMA_VERSION:
                raise StoreError(
                    f"fact store schema version {version} is newer than this Sediment "
                    f"(knows {schema.SCHEMA_VERSION}); upgrade Sediment"
                )
            for step in range(version, schema.SCHEMA_VERSION):
                MIGRATIONS[step](conn)
                conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version")
                             .values(value=str(step + 1)))

    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(schema.meta.c.value)
                                    .where(schema.meta.c.key == "schema_version")).scalar_one())

    # --- writing ----------------------------------------------------------------------

    def append(self, facts: Iterable[FactModel]) -> AppendResult:
        """Store new Facts; a Fact whose natural key or id exists already is a duplicate."""
        return self.write(self.prepare(facts))

    def prepare(self, facts: Iterable[FactModel]) -> PreparedFacts:
        """Encode Facts into rows and new content blobs without touching the database.

        The CPU-heavy half of :meth:`append`; ingest workers run it in parallel and the parent
        :meth:`write` s the results in input order.
        """
        rows = []
        for fact in facts:
            table_name, fact_id, natural_key = table_and_key(fact)
            values: dict[str, Any] = {"fact_id": fact_id, "org_id": fact_org(fact), "natural_key": natural_key}
            values |= self._columns(fact)
            rows.append((table_name, values))
        blobs, self._pending_blobs = self._pending_blobs, {}
        return PreparedFacts(blobs, rows)

    def write(self, prepared: PreparedFacts) -> AppendResult:
        """Insert prepared rows in one transaction (redeliveries collapse on natural keys)."""
        result = AppendResult()
        try:
            with self.engine.begin() as conn:
                if prepared.blobs:
                    conn.execute(self._insert(schema.blobs).on_conflict_do_nothing(),
                                 [{"blob_hash": d, "content": c} for d, c in prepared.blobs.items()])
                for table_name, values in prepared.rows:
                    table = schema.FACT_TABLES[table_name]
                    statement = (self._insert(table).values(**values).on_conflict_do_nothing()
                                 .returning(table.c.fact_id))
                    if conn.execute(statement).first() is not None:
                        result.stored[table_name] += 1
                    else:
                        result.duplicates[table_name] += 1
        except BaseException:
            # The transaction rolled back: forget what it claimed to store, and the hashes whose
            # cache hits would skip queueing their blobs again.
            self._known_blobs.clear()
            self._hash_cache.clear()
            self._tool_lists.clear()
            self._last_inputs.clear()
            raise
        return result

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

    def _columns(self, fact: FactModel) -> dict[str, Any]:
        if isinstance(fact, InferenceCall):
            raw, refs = self._externalize_raw(fact)
            # The tool list is a blob of its own, and the body never spells the field: a call
            # without tools stores exactly the bytes it did before InferenceCall had one.
            body = plain(fact.model_copy(update={"input_messages": (), "output_messages": (), "raw": raw}))
            del body["tools"]
            inputs = [self._blob(m) for m in fact.input_messages]
            return {
                "session_id": fact.session_id,
                "observed_at": sortable_time(fact.observed_at),
                "input_hashes": json.dumps(self._delta(fact, "input", inputs), separators=(",", ":")),
                "output_hashes": json.dumps([self._blob(m) for m in fact.output_messages]),
                "raw_refs": json.dumps(refs),
                "tools_hash": None if fact.tools is None else self._tools_blob(fact.tools),
                "record": self._blob(body),  # the call body is stored compressed, by its hash
            }
        columns: dict[str, Any] = {"record": encode_record(fact)}
        table = schema.FACT_TABLES[table_and_key(fact)[0]]
        for name in ("session_id", "repo", "commit_sha", "provider", "run_id", "run_attempt", "test_id"):
            if name in table.c:
                columns[name] = getattr(fact, name)
        if isinstance(fact, CIOutcome | SessionCommitObservation | TestCaseResult):
            columns["captured_at"] = sortable_time(fact.captured_at)
        return columns

    def _delta(self, fact: InferenceCall, kind: str, inputs: list[str]) -> dict[str, Any]:
        """A hash list as ``{"base": call id, "keep": n, "add": [...]}``: the first n hashes of
        the same list of the base call (the Session's previously appended call), then the new
        ones. A replaying agent's lists thus cost O(new messages), not O(history)."""
        key = (fact.org_id, fact.session_id, kind)
        previous = self._last_inputs.get(key)
        keep = 0
        base = None
        if previous is not None:
            base, earlier = previous
            limit = min(len(earlier), len(inputs))
            while keep < limit and earlier[keep] == inputs[keep]:
                keep += 1
        self._last_inputs[key] = (fact.inference_call_id, inputs)
        self._last_inputs.move_to_end(key)
        if len(self._last_inputs) > LAST_INPUTS_SESSIONS:
            self._last_inputs.popitem(last=False)
        if keep == 0:
            return {"base": None, "keep": 0, "add": inputs}
        return {"base": base, "keep": keep, "add": inputs[keep:]}

    def _externalize_raw(self, fact: InferenceCall) -> tuple[dict[str, Any], list[list[str]]]:
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
            target[path[-1]] = self._delta(fact, "raw:" + "/".join(path), hashes)
            refs.append(list(path))
        return result, refs

    # --- quarantine -------------------------------------------------------------------

    def _log(self, org_id: str, table: str, fact_id: str, action: str, reason: str) -> int:
        if table not in schema.FACT_TABLES:
            raise StoreError(f"unknown fact table {table!r}; tables: {', '.join(sorted(schema.FACT_TABLES))}")
        if not reason.strip():
            raise StoreError("a quarantine action needs a reason")
        facts = schema.FACT_TABLES[table]
        with self.engine.begin() as conn:
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
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
            sessions = {row.session_id for row in self._visible(conn, "inference_calls", org_id)}
        return sorted(sessions)

    def calls_for_session(self, org_id: str, session_id: str) -> list[InferenceCall]:
        """The Session's visible calls by observation time; each distinct message is built once."""
        table = schema.inference_calls
        with self.engine.connect() as conn:
            hidden = self._quarantined(conn, org_id, "inference_calls")
            every = list(conn.execute(select(table).where(table.c.org_id == org_id, table.c.session_id == session_id)
                                      .order_by(table.c.observed_at, table.c.fact_id)))
            inputs = _resolve_deltas({row.fact_id: json.loads(row.input_hashes) for row in every})
            bodies = self._read_blobs(conn, {row.fact_id: row.record for row in every}.values())
            bodies = {row.fact_id: copy.deepcopy(bodies[row.record]) for row in every}
            raw_lists: dict[str, dict[str, list[str]]] = {}
            for path in {tuple(p) for row in every for p in json.loads(row.raw_refs)}:
                deltas = {}
                for row in every:
                    if list(path) in json.loads(row.raw_refs):
                        deltas[row.fact_id] = _at(bodies[row.fact_id]["raw"], path)
                raw_lists["/".join(path)] = _resolve_deltas(deltas)
            rows = [row for row in every if row.fact_id not in hidden]
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
        with self.engine.connect() as conn:
            return [self._model("developer_decisions", r.record)
                    for r in self._visible(conn, "developer_decisions", org_id, table.c.session_id == session_id)]

    def observations_for_session(self, org_id: str, session_id: str) -> list[SessionCommitObservation]:
        table = schema.session_commit_observations
        with self.engine.connect() as conn:
            return [self._model("session_commit_observations", r.record)
                    for r in self._visible(conn, "session_commit_observations", org_id,
                                           table.c.session_id == session_id)]

    def ci_outcomes_for_commits(self, org_id: str, commits: Iterable[tuple[str, str]]) -> list[CIOutcome]:
        """Visible CI outcomes of the given ``(repo, commit_sha)`` pairs."""
        table = schema.ci_outcomes
        outcomes: list[CIOutcome] = []
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
            for repo, sha in sorted(set(commits)):
                results.extend(self._model("test_case_results", r.record) for r in self._visible(
                    conn, "test_case_results", org_id, table.c.repo == repo, table.c.commit_sha == sha))
        results.sort(key=lambda r: (r.repo, r.commit_sha, r.provider, r.run_id, r.run_attempt, r.test_id,
                                    r.report_sha256, r.locator))
        return results

    def facts(self, table_name: str, org_id: str) -> Iterator[FactModel]:
        """Every visible Fact of one table (inference calls without their messages rehydrated)."""
        if table_name == "inference_calls":
            for session in self.session_ids(org_id):
                yield from self.calls_for_session(org_id, session)
            return
        with self.engine.connect() as conn:
            rows = list(self._visible(conn, table_name, org_id))
        for row in rows:
            yield self._model(table_name, row.record)

    def counts(self, org_id: str | None = None) -> dict[str, dict[str, int]]:
        """Per table: stored Facts and how many of them are quarantined now."""
        result: dict[str, dict[str, int]] = {}
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
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


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _resolve_deltas(deltas: dict[str, Any]) -> dict[str, list[str]]:
    """Expand delta-encoded hash lists (a base call's first n hashes, then additions)."""
    resolved: dict[str, list[str]] = {}

    def resolve(fact_id: str) -> list[str]:
        if fact_id in resolved:
            return resolved[fact_id]
        chain = [fact_id]
        while True:  # walk to a resolved or full list iteratively (chains are as long as a Session)
            delta = deltas[chain[-1]]
            if delta["base"] is None or delta["base"] in resolved:
                break
            if delta["base"] not in deltas:
                raise StoreError(f"inference call {chain[-1]} refers to a missing base call {delta['base']}")
            chain.append(delta["base"])
        for current in reversed(chain):
            delta = deltas[current]
            prefix = resolved[delta["base"]][: delta["keep"]] if delta["base"] is not None else []
            resolved[current] = prefix + list(delta["add"])
        return resolved[fact_id]

    for fact_id in deltas:
        resolve(fact_id)
    return resolved


def _at(raw: Any, path: Sequence[str]) -> Any:
    for key in path:
        raw = raw[key]
    return raw

__all__ = ["AppendResult", "FactStore", "PreparedFacts", "StoreError", "database_url", "sediment_home"]
