"""Forward-only schema migrations: ``MIGRATIONS[n]`` upgrades a store from version n to n + 1."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, Connection, MetaData, String, Table, Text, bindparam, delete, select, text, update

from sediment.model.facts import CIOutcome, DeveloperDecision
from sediment.records import canonical_json, decode_record, encode_record, sha256_hex, sortable_time
from sediment.store import schema
from sediment.store.blob_codec import pack, unpack
from sediment.store.ids import fact_id as derived_id
from sediment.store.keys import ci_outcome_key, decision_key


def _v1_to_v2(conn: Connection) -> None:
    """Version 2 stores message content and call bodies compressed in ``blobs``, delta-encodes
    input hash lists, and externalizes replayed message lists of ``raw`` payloads
    (``inference_calls.raw_refs``)."""
    old = Table("messages", MetaData(), Column("message_hash", String(64), primary_key=True),
                Column("record", Text, nullable=False))
    schema.blobs.create(conn, checkfirst=True)
    rows = conn.execute(select(old.c.message_hash, old.c.record)).all()
    for start in range(0, len(rows), 1000):
        conn.execute(schema.blobs.insert(), [
            {"blob_hash": digest, "content": pack(record.encode("ascii"))}
            for digest, record in rows[start:start + 1000]
        ])
    old.drop(conn)
    conn.execute(text("ALTER TABLE inference_calls ADD COLUMN raw_refs TEXT NOT NULL DEFAULT '[]'"))
    calls = schema.inference_calls
    for fact_id, record, inputs in conn.execute(select(calls.c.fact_id, calls.c.record, calls.c.input_hashes)).all():
        body = record.encode("ascii")
        digest = sha256_hex(body)
        conn.execute(schema.blobs.insert().prefix_with("OR IGNORE") if conn.dialect.name == "sqlite" else
                     schema.blobs.insert(), [{"blob_hash": digest, "content": pack(body)}])
        delta = json.dumps({"base": None, "keep": 0, "add": json.loads(inputs)}, separators=(",", ":"))
        conn.execute(calls.update().where(calls.c.fact_id == fact_id).values(record=digest, input_hashes=delta))


def _v2_to_v3(conn: Connection) -> None:
    """Version 3 stores a call's tool list as one content blob (``inference_calls.tools_hash``).
    Existing rows get NULL and keep their body as it is: a call without tools reads back as
    before, and a tool list a version 2 store kept inside the body still reads back from there."""
    conn.execute(text("ALTER TABLE inference_calls ADD COLUMN tools_hash VARCHAR(64)"))


def _v3_to_v4(conn: Connection) -> None:
    """Version 4 adds ``test_case_results`` (TestCaseResult Facts read from JUnit reports) with its
    indexes; no existing row changes."""
    schema.test_case_results.create(conn, checkfirst=True)


LOST_REASON = ("schema 5 migration: its replay history leads to call {cause}, which is not a call of its Session "
               "(in version 4 a call of another Session with the same response id stood in for one of its own), "
               "so its messages cannot be rebuilt; re-ingest the Session's log to store it again")


def _v4_to_v5(conn: Connection) -> None:
    """Version 5 keys an inference call with a provider response id by its Session too:
    ``["call", org, gateway, session, model_call_id]`` (version 4 left the Session out, so one
    response id in two Sessions collapsed the second Session's call onto the first's).

    Every such call is re-keyed. One whose id is the one version 4 derived from its key gets the
    id version 5 derives (``sediment.store.ids.inference_call_id``) everywhere the store names
    it: its row, its body, the replay deltas of the calls after it and the quarantine log; an id
    the Fact named itself is kept. A call whose replay history leads out of its Session (it was
    encoded against a redelivery that had collapsed onto another Session's call) cannot be
    rebuilt: it is renamed ``call-lost_…``, keyed by that id (so re-ingesting its Session's log
    stores the call afresh) and quarantined, with the reason in the log. Call bodies no longer
    referenced are deleted; nothing else changes.
    """
    calls = schema.inference_calls
    owners = {row.fact_id: (row.org_id, row.session_id)
              for row in conn.execute(select(calls.c.fact_id, calls.c.org_id, calls.c.session_id))}
    for org_id, session_id in sorted(set(owners.values())):
        _rekey_session(conn, org_id, session_id)


def _rekey_session(conn: Connection, org_id: str, session_id: str) -> None:
    calls = schema.inference_calls
    rows = conn.execute(select(calls.c.fact_id, calls.c.natural_key, calls.c.input_hashes, calls.c.raw_refs,
                               calls.c.record, calls.c.observed_at)
                        .where(calls.c.org_id == org_id, calls.c.session_id == session_id)
                        .order_by(calls.c.observed_at, calls.c.fact_id)).all()
    contents = _blob_contents(conn, {row.record for row in rows})
    bodies = {row.fact_id: decode_record(contents[row.record]) for row in rows}
    deltas: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        raw_deltas = [_at(bodies[row.fact_id]["raw"], path) for path in json.loads(row.raw_refs)]
        deltas[row.fact_id] = [json.loads(row.input_hashes), *raw_deltas]
    bases = {fact_id: [d["base"] for d in found if d["base"] is not None and d["keep"] > 0]
             for fact_id, found in deltas.items()}
    lost = _lost(bases)
    renamed: dict[str, str] = {}
    keys: dict[str, str] = {}
    for row in rows:
        key = _v4_key(row.natural_key)
        if row.fact_id in lost:
            renamed[row.fact_id] = derived_id("call-lost", row.fact_id)
            keys[row.fact_id] = canonical_json(["id", renamed[row.fact_id]])
        elif key is not None:
            _, org, gateway, model_call_id = key
            if row.fact_id == derived_id("call", org, gateway, model_call_id):
                renamed[row.fact_id] = derived_id("call", org, gateway, session_id, model_call_id)
            keys[row.fact_id] = canonical_json(["call", org, gateway, session_id, model_call_id])
    updates: list[dict[str, Any]] = []
    replaced: set[str] = set()
    new_bodies: dict[str, bytes] = {}
    for row in rows:
        found = deltas[row.fact_id]
        body_changes = row.fact_id in renamed or any(d["base"] in renamed for d in found[1:])
        if row.fact_id not in keys and not body_changes and found[0]["base"] not in renamed:
            continue
        for delta in found:
            delta["base"] = renamed.get(delta["base"], delta["base"])
        record = row.record
        if body_changes:
            body = bodies[row.fact_id]
            body["inference_call_id"] = renamed.get(row.fact_id, row.fact_id)
            encoded = encode_record(body).encode("ascii")
            record = sha256_hex(encoded)
            new_bodies[record] = pack(encoded)
            replaced.add(row.record)
        updates.append({"old": row.fact_id, "new_id": renamed.get(row.fact_id, row.fact_id), "new_record": record,
                        "new_key": keys.get(row.fact_id, row.natural_key),
                        "new_inputs": json.dumps(found[0], separators=(",", ":"))})
    if not updates:
        return
    blobs = schema.blobs
    present = {digest for part in _parts(new_bodies) for (digest,) in
               conn.execute(select(blobs.c.blob_hash).where(blobs.c.blob_hash.in_(part)))}
    missing = [{"blob_hash": d, "content": c} for d, c in new_bodies.items() if d not in present]
    if missing:
        conn.execute(blobs.insert(), missing)
    conn.execute(update(calls).where(calls.c.fact_id == bindparam("old"))
                 .values(fact_id=bindparam("new_id"), natural_key=bindparam("new_key"),
                         record=bindparam("new_record"), input_hashes=bindparam("new_inputs")), updates)
    log = schema.quarantine_log
    logged = {fact_id for part in _parts(renamed) for (fact_id,) in conn.execute(
        select(log.c.fact_id).distinct().where(log.c.org_id == org_id, log.c.table_name == "inference_calls",
                                               log.c.fact_id.in_(part)))}
    if logged:
        conn.execute(update(log).where(log.c.org_id == org_id, log.c.table_name == "inference_calls",
                                       log.c.fact_id == bindparam("old")).values(fact_id=bindparam("new_id")),
                     [{"old": old_id, "new_id": renamed[old_id]} for old_id in sorted(logged)])
    _quarantine(conn, org_id, [(renamed[row.fact_id], lost[row.fact_id]) for row in rows if row.fact_id in lost])
    still = {digest for part in _parts(replaced) for (digest,) in
             conn.execute(select(calls.c.record).where(calls.c.record.in_(part)))}
    for part in _parts(replaced - still):
        conn.execute(delete(blobs).where(blobs.c.blob_hash.in_(part)))


def _parts(values: Iterable[str], size: int = 500) -> list[list[str]]:
    """``values``, sorted, in lists of at most ``size`` (bounded IN lists)."""
    ordered = sorted(values)
    return [ordered[start:start + size] for start in range(0, len(ordered), size)]


def _v4_key(natural_key: str) -> list[Any] | None:
    """A version 4 natural key of a call with a response id, ``["call", org, gateway, id]``, else None."""
    key = json.loads(natural_key)
    return key if isinstance(key, list) and len(key) == 4 and key[0] == "call" else None


def _lost(bases: dict[str, list[str]]) -> dict[str, str]:
    """The calls (of one Session: ``bases`` maps each to the calls its deltas are based on) whose
    replay history leaves the Session or goes round in a circle, each with the call it leads to."""
    lost: dict[str, str] = {}
    done: set[str] = set()
    for start in bases:
        if start in done:
            continue
        stack = [(start, iter(bases[start]))]
        on_stack = {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_stack.discard(node)
                done.add(node)
                if stack and node in lost and stack[-1][0] not in lost:
                    lost[stack[-1][0]] = lost[node]
            elif child not in bases or child in on_stack:
                lost.setdefault(node, child)
            elif child in done:
                if child in lost:
                    lost.setdefault(node, lost[child])
            else:
                stack.append((child, iter(bases[child])))
                on_stack.add(child)
    return lost


def _blob_contents(conn: Connection, digests: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in _parts(set(digests)):
        query = select(schema.blobs.c.blob_hash, schema.blobs.c.content).where(schema.blobs.c.blob_hash.in_(part))
        for digest, content in conn.execute(query):
            found[digest] = unpack(content).decode("ascii")
    return found


def _at(raw: Any, path: Iterable[str]) -> Any:
    for key in path:
        raw = raw[key]
    return raw


def _quarantine(conn: Connection, org_id: str, lost: list[tuple[str, str]]) -> None:
    """Quarantine each ``(call id, the call its history leads to)`` not quarantined already."""
    log = schema.quarantine_log
    now = sortable_time(datetime.now(UTC))
    for fact_id, cause in lost:
        latest = conn.execute(select(log.c.action).where(log.c.org_id == org_id, log.c.table_name == "inference_calls",
                                                         log.c.fact_id == fact_id)
                              .order_by(log.c.revision.desc()).limit(1)).scalar()
        if latest != "quarantine":
            conn.execute(log.insert().values(org_id=org_id, table_name="inference_calls", fact_id=fact_id,
                                             action="quarantine", reason=LOST_REASON.format(cause=cause),
                                             recorded_at=now))


def _v5_to_v6(conn: Connection) -> None:
    """Version 6 adds ``edit_observations``, ``rejected_edits`` and ``retry_linkages`` (with
    their indexes) and keys a developer decision as the contract does
    (:func:`~sediment.store.keys.decision_key`): by its interaction mode and time too.

    Each decision row gets the new key computed from its stored record; ids, records and the
    quarantine log stay as they are. The new key holds every part of the old one and more, so
    decisions that were distinct stay distinct; two a version 5 store collapsed into one (the
    same call and verdict at two times) stay one: the first one stored.
    """
    for table in (schema.edit_observations, schema.rejected_edits, schema.retry_linkages):
        table.create(conn, checkfirst=True)
    _rekey(conn, schema.developer_decisions,
           lambda record: decision_key(DeveloperDecision.model_validate(decode_record(record))))


def _rekey(conn: Connection, table: Table, key: Callable[[str], str]) -> None:
    """Give every row of a Fact table the natural key ``key`` computes from its stored record."""
    rows = conn.execute(select(table.c.fact_id, table.c.record).order_by(table.c.fact_id)).all()
    for start in range(0, len(rows), 1000):
        updates = [{"id": fact_id, "key": key(record)} for fact_id, record in rows[start:start + 1000]]
        conn.execute(update(table).where(table.c.fact_id == bindparam("id")).values(natural_key=bindparam("key")),
                     updates)


def _v6_to_v7(conn: Connection) -> None:
    """Version 7 keys each final event of a CI run re-run under its id without an attempt number
    (a GitLab pipeline, a third-party check suite) apart, by the provider's time of it
    (:func:`~sediment.store.keys.ci_outcome_key`, sediment.ci.reruns).

    Each CI outcome row gets the new key computed from its stored record; ids, records and the
    quarantine log stay as they are (an outcome stored before keeps its id; one ingested from now
    on derives its id with the time). The new key holds every part of the old one, so outcomes
    that were distinct stay distinct; a retry's final event that a version 6 store collapsed onto
    the first one was never stored: re-ingest the deliveries to record it.
    """
    _rekey(conn, schema.ci_outcomes, lambda record: ci_outcome_key(CIOutcome.model_validate(decode_record(record))))


def _v7_to_v8(conn: Connection) -> None:
    """Version 8 writes content blobs as Zstandard frames (:mod:`sediment.store.blob_codec`); the
    zlib blobs a version 7 store holds are read as they are, so nothing is rewritten. The version
    moves so that a Sediment that knows only zlib refuses the store in one line ("newer than this
    Sediment") instead of failing on a blob it cannot inflate."""


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5,
                                                       5: _v5_to_v6, 6: _v6_to_v7, 7: _v7_to_v8}
