"""Appending Facts: rows keyed by their natural keys (a redelivery collapses), messages and
tool lists stored once as content-addressed blobs, replayed lists as deltas on the Session's
previous call.
"""

from __future__ import annotations

import copy
import json
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from itertools import takewhile
from operator import is_, truth
from typing import Any

from sqlalchemy import Connection, or_, select

from sediment.model.facts import (
    CIOutcome,
    FactModel,
    InferenceCall,
    SessionCommitObservation,
    TestCaseResult,
    ToolDefinition,
)
from sediment.records import canonical_record_bytes, decode_record, encode_record, sha256_hex, sortable_time
from sediment.store import schema
from sediment.store.blob_codec import pack, unpack
from sediment.store.driver import Inserts, fetch_blobs
from sediment.store.engine import StoreEngine, StoreError
from sediment.store.interning import StringDigests, intern_plain, stored_form
from sediment.store.keys import fact_org, table_and_key

HASH_CACHE_SIZE = 4096
TOOL_LISTS_CACHE_SIZE = 256
KNOWN_BLOBS_LIMIT = 2_000_000
#: How many (Session, list) keys the writer remembers the last list of: 128 Sessions' typed inputs,
#: replayed raw messages and raw tool lists.
LAST_INPUTS_SESSIONS = 384
_COMPACT = json.JSONEncoder(separators=(",", ":"))  # a hash list's delta, as json.dumps with them writes it
#: Lists of a call's ``raw`` payload that each call of a Session sends again: the turns it replays,
#: and the tool list an agent declares with every call (tens of KB for a coding agent). Each is
#: stored as a delta on the Session's previous call, its entries as content blobs, so a call costs
#: the store its new entries, not the whole list again.
REPLAYED_RAW_LISTS: tuple[tuple[str, ...], ...] = (("request", "messages"), ("request", "input"), ("messages",),
                                                   ("request", "tools"), ("model_parameters", "tools"))

#: One replayed hash list of a prepared call: its delta as encoded when it was prepared, and the
#: whole list when the delta's base is not among the earlier calls of the same batch (else None).
Replay = tuple[dict[str, Any], list[str] | None]


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


@dataclass
class _Group:
    """What one transaction of :meth:`FactWriter.write_many` writes besides its rows: the
    batches' new blobs, and the call bodies its rows name (``used``) and do not (``dropped``: a
    redelivery's, or one rebased), pruned once every batch is in."""

    blobs: dict[str, bytes] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    dropped: set[str] = field(default_factory=set)


class FactWriter(StoreEngine):
    """Appending Facts: encoding them (:meth:`prepare`) and inserting them (:meth:`write`)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._hash_cache: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        self._tool_lists: OrderedDict[tuple[int, ...], tuple[tuple[ToolDefinition, ...], str]] = OrderedDict()
        self._known_blobs: set[str] = set()
        self._string_digests = StringDigests()
        #: Per (org, Session, list kind): the last call's values and their hashes, so a replayed
        #: prefix (the very objects again) costs no lookup per element.
        self._last_values: OrderedDict[tuple[str, str, str], tuple[tuple[Any, ...], list[str]]] = OrderedDict()
        self._pending_blobs: dict[str, bytes] = {}
        #: Per (org, Session, list kind): the last call *prepared* and its list (deltas are
        #: encoded against it, then settled at write time).
        self._last_inputs: OrderedDict[tuple[str, str, str], tuple[str, list[str]]] = OrderedDict()
        #: Per (org, Session, list kind): the last call this store *inserted* and its list: the
        #: only base a stored delta may name.
        self._stored_lists: OrderedDict[tuple[str, str, str], tuple[str, list[str]]] = OrderedDict()

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
        try:
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
        finally:
            # Long strings' digests are remembered for one batch (the typed and the raw form of a
            # call's new message meet in it): no content outlives the batch (``serve``).
            self._string_digests = StringDigests()
        blobs, self._pending_blobs = self._pending_blobs, {}
        return PreparedFacts(blobs, rows, replays)

    def write(self, prepared: PreparedFacts) -> AppendResult:
        """Insert prepared rows in one transaction (redeliveries collapse on natural keys).

        A call's replay deltas were encoded against the calls prepared before it; here each is
        settled against the last call of its Session this store *inserted* (a redelivery that
        collapsed is no base, nor is a call another worker prepared), re-encoded when they
        differ, so what is read back is exactly what was appended, whatever the batching.
        """
        return self.write_many([prepared])

    def write_many(self, batches: Sequence[PreparedFacts]) -> AppendResult:
        """:meth:`write` each of ``batches`` in turn, all in one transaction: all are stored or
        none. A bulk ingest groups its batches so because each commit rewrites the index pages
        its rows touched (about a page per new blob), and SQLite's checkpoints wait for the disk."""
        result = AppendResult()
        try:
            with self._writing() as conn, closing(Inserts(conn, self._insert)) as inserts:
                group = _Group()
                for prepared in batches:
                    group.blobs.update(prepared.blobs)
                    self._insert_rows(conn, prepared, result, inserts, group)
                # Only now: a body one batch dropped may be the very body a later batch stores,
                # and an earlier batch's row may name a body a later batch queued.
                for digest in group.dropped - group.used:
                    if group.blobs.pop(digest, None) is not None:
                        self._known_blobs.discard(digest)
                if group.blobs:  # in key order: each index page is visited once, in a row, not at random
                    inserts.insert_many(schema.blobs, ("blob_hash", "content"), sorted(group.blobs.items()))
        except BaseException:
            # The transaction rolled back: forget what it claimed to store, and the hashes whose
            # cache hits would skip queueing their blobs again.
            self.forget_prepared()
            self._stored_lists.clear()
            raise
        return result

    def forget_prepared(self) -> None:
        """Forget the blobs and lists prepared so far: what :meth:`prepare` gives next carries
        every blob it names that this writer has not stored itself. For a process that prepares
        batches out of the order they are written in (a Ray worker given partitions in hash order),
        before each run of batches that are written in order."""
        self._known_blobs.clear()
        self._hash_cache.clear()
        self._last_values.clear()
        self._tool_lists.clear()
        self._last_inputs.clear()

    def _insert_rows(self, conn: Connection, prepared: PreparedFacts, result: AppendResult, inserts: Inserts,
                     group: _Group) -> None:
        batch: dict[tuple[str, str, str], tuple[str, list[str]]] = {}  # the last call prepared, in this batch
        for index, (table_name, values) in enumerate(prepared.rows):
            replay = prepared.replays.get(index) if table_name == "inference_calls" else None
            lists: dict[str, list[str]] = {}
            if replay is not None:
                values, lists = self._settle(conn, values, replay, batch, group)
            if not inserts.insert_row(schema.FACT_TABLES[table_name], values):
                result.duplicates[table_name] += 1
                if replay is not None:  # a redelivery's body is never read (its messages may be)
                    group.dropped.add(values["record"])
                continue
            result.stored[table_name] += 1
            if replay is not None:
                group.used.add(values["record"])
                for kind, hashes in lists.items():
                    _remember(self._stored_lists, (values["org_id"], values["session_id"], kind),
                              (values["fact_id"], hashes))

    def _settle(self, conn: Connection, values: dict[str, Any], replay: dict[str, Replay],
                batch: dict[tuple[str, str, str], tuple[str, list[str]]],
                group: _Group) -> tuple[dict[str, Any], dict[str, list[str]]]:
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
                values = {**values, "input_hashes": _COMPACT.encode(settled)}
            else:
                raw_changes[kind] = settled
        if raw_changes:
            values = {**values, "record": self._rebase_body(conn, values, raw_changes, group)}
        return values, lists

    def _rebase_body(self, conn: Connection, values: dict[str, Any], changes: dict[str, dict[str, Any]],
                     group: _Group) -> str:
        """The hash of a call body whose replayed raw lists carry ``changes`` (a new blob).

        A body neither this group nor the store holds was dropped by an earlier group, while its
        batch was prepared elsewhere (a worker) as if it were stored: it is only ever a
        redelivery's, so a call the store holds already keeps it (its row collapses unread)."""
        digest: str = values["record"]
        content = group.blobs.get(digest)
        if content is None:
            content = dict(fetch_blobs(conn, [digest])).get(digest)
        if content is None:
            if _stored_call(conn, values):
                return digest
            raise StoreError(f"fact store is missing the body blob {digest} of a call being written")
        body = decode_record(unpack(content).decode("ascii"))  # interned: the delta dicts are as written
        for kind, delta in changes.items():
            path = kind.removeprefix("raw:").split("/")
            holder = body["raw"]
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = delta
        record = encode_record(body).encode("ascii")
        rebased = sha256_hex(record)
        group.dropped.add(digest)
        if rebased not in self._known_blobs:
            group.blobs[rebased] = pack(record)
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
        strings: dict[str, bytes | str] = {}
        inexact: list[bool] = []
        interned = intern_plain(value, strings, self._string_digests, inexact)
        digest = self._queue_record(canonical_record_bytes(interned, inexact=bool(inexact)), strings)
        self._hash_cache[id(value)] = (value, digest)
        if len(self._hash_cache) > HASH_CACHE_SIZE:
            self._hash_cache.popitem(last=False)
        return digest

    def _queue_record(self, record: bytes, strings: dict[str, bytes | str]) -> str:
        """``record``'s hash; it and the string blobs it references are queued if new."""
        digest = sha256_hex(record)
        for string_digest, string in strings.items():
            if string_digest not in self._known_blobs:
                self._queue_blob(string_digest, stored_form(string))
        self._queue_blob(digest, record)
        return digest

    def _hashes(self, key: tuple[str, str, str], values: Sequence[Any]) -> list[str]:
        """The blob hashes of a Session's list: the leading values that are the very objects of
        its previous call's list keep their hashes (as :meth:`_blob`'s identity cache would give
        them, with no lookup each); the others go through :meth:`_blob`."""
        last = self._last_values.get(key)
        kept = 0 if last is None else len(list(takewhile(truth, map(is_, values, last[0]))))
        hashes = (last[1][:kept] if last is not None else []) + [self._blob(value) for value in values[kept:]]
        self._last_values[key] = (tuple(values), hashes)
        self._last_values.move_to_end(key)
        if len(self._last_values) > LAST_INPUTS_SESSIONS:
            self._last_values.popitem(last=False)
        return hashes

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
            self._pending_blobs[digest] = pack(record)
            self._known_blobs.add(digest)
            if len(self._known_blobs) > KNOWN_BLOBS_LIMIT:
                self._known_blobs = set(self._pending_blobs)

    def _call_columns(self, fact: InferenceCall, replay: dict[str, Replay], batch: set[tuple[str, str, str]],
                      portable: bool) -> dict[str, Any]:
        raw, refs = self._externalize_raw(fact, replay, batch, portable)
        inputs = self._hashes((fact.org_id, fact.session_id, "input"), fact.input_messages)
        delta = self._delta(fact, "input", inputs, replay, batch, portable)
        return {
            "session_id": fact.session_id,
            "observed_at": sortable_time(fact.observed_at),
            "input_hashes": _COMPACT.encode(delta),
            "output_hashes": json.dumps([self._blob(m) for m in fact.output_messages]),
            "raw_refs": json.dumps(refs),
            "tools_hash": None if fact.tools is None else self._tools_blob(fact.tools),
            "record": self._body_blob(fact, raw),  # the call body is stored compressed, by its hash
        }

    def _body_blob(self, fact: InferenceCall, raw: dict[str, Any]) -> str:
        """The content hash of a call's body (queued for storage if new): the call without its
        messages, with ``raw``'s replayed lists as deltas. The tool list is a blob of its own, and
        the body never spells the field: a call without tools stores exactly the bytes it did
        before InferenceCall had one; likewise a wire call's body never spells its (absent)
        capture. Interned straight from the model, in one walk (a body is never met again)."""
        strings: dict[str, bytes | str] = {}
        inexact: list[bool] = []
        update = {"input_messages": (), "output_messages": (), "raw": raw, "tools": None}
        body = intern_plain(fact.model_copy(update=update), strings, self._string_digests, inexact)
        del body["tools"]
        if fact.capture is None:
            del body["capture"]
        return self._queue_record(canonical_record_bytes(body, inexact=bool(inexact)), strings)

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
        """Move the replayed lists (:data:`REPLAYED_RAW_LISTS`) out of ``raw`` into blobs
        (restored exactly on read)."""
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
            hashes = self._hashes((fact.org_id, fact.session_id, "raw:" + "/".join(path)), holder[path[-1]])
            target[path[-1]] = self._delta(fact, "raw:" + "/".join(path), hashes, replay, batch, portable)
            refs.append(list(path))
        return result, refs


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
        if earlier[:limit] == hashes[:limit]:  # the usual case, a replay: compared at C speed
            keep = limit
        while keep < limit and earlier[keep] == hashes[keep]:
            keep += 1
    if previous is None or keep == 0:
        return {"base": None, "keep": 0, "add": hashes}
    return {"base": previous[0], "keep": keep, "add": hashes[keep:]}


def _stored_call(conn: Connection, values: dict[str, Any]) -> bool:
    """Whether the store holds the inference call of ``values`` (by its id or natural key)."""
    table = schema.inference_calls
    query = select(table.c.fact_id).where(or_(table.c.fact_id == values["fact_id"],
                                              table.c.natural_key == values["natural_key"])).limit(1)
    return conn.execute(query).first() is not None
