"""Forward-only schema migrations: ``MIGRATIONS[n]`` upgrades a store from version n to n + 1."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

from sqlalchemy import Column, Connection, MetaData, String, Table, Text, select, text

from sediment.records import sha256_hex
from sediment.store import schema


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
            {"blob_hash": digest, "content": zlib.compress(record.encode("ascii"), 1)}
            for digest, record in rows[start:start + 1000]
        ])
    old.drop(conn)
    conn.execute(text("ALTER TABLE inference_calls ADD COLUMN raw_refs TEXT NOT NULL DEFAULT '[]'"))
    calls = schema.inference_calls
    for fact_id, record, inputs in conn.execute(select(calls.c.fact_id, calls.c.record, calls.c.input_hashes)).all():
        body = record.encode("ascii")
        digest = sha256_hex(body)
        conn.execute(schema.blobs.insert().prefix_with("OR IGNORE") if conn.dialect.name == "sqlite" else
                     schema.blobs.insert(), [{"blob_hash": digest, "content": zlib.compress(body, 1)}])
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


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}
