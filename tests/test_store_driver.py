"""The store's driver-cursor statements (sediment/store/driver.py), on both backends: an insert
tells a stored row from a duplicate, many rows skip existing keys, blobs are fetched exactly
(across query batches), and a driver error comes out as SQLAlchemy's error class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import select, text

from sediment.store import FactStore, schema
from sediment.store.driver import DriverCursor, Inserts, fetch_blobs


def _insert(store: FactStore) -> Any:  # the dialect's insert, as the writer uses it
    return store._insert


def test_an_insert_tells_a_stored_row_from_a_duplicate(store_url: str) -> None:
    store = FactStore(store_url)
    with store.engine.connect() as conn, conn.begin():
        inserts = Inserts(conn, _insert(store))
        try:
            assert inserts.insert_row(schema.blobs, {"blob_hash": "a" * 64, "content": b"one"}) is True
            assert inserts.insert_row(schema.blobs, {"blob_hash": "a" * 64, "content": b"two"}) is False
            rows = [(f"{i:064x}", bytes([i % 256]) * 3) for i in range(1, 40)]
            inserts.insert_many(schema.blobs, ("blob_hash", "content"), [*rows, ("a" * 64, b"three")])
        finally:
            inserts.close()
    with store.engine.connect() as conn:
        stored = dict(conn.execute(select(schema.blobs.c.blob_hash, schema.blobs.c.content)).all())
    assert stored["a" * 64] == b"one"  # the first row kept, the later ones skipped
    assert {key: bytes(value) for key, value in stored.items()} == {"a" * 64: b"one", **dict(rows)}


def test_blobs_are_fetched_exactly_across_query_batches(store_url: str) -> None:
    store = FactStore(store_url)
    rows = [(f"{i:064x}", f"content {i}".encode() + bytes(range(256))) for i in range(1, 1201)]
    with store.engine.connect() as conn, conn.begin():
        inserts = Inserts(conn, _insert(store))
        inserts.insert_many(schema.blobs, ("blob_hash", "content"), rows)
        inserts.close()
    wanted = [digest for digest, _ in rows[::3]] + ["f" * 64]  # one hash that is not stored
    with store.engine.connect() as conn:
        found = fetch_blobs(conn, wanted, batch=100)
        assert conn.in_transaction()  # begun as the first statement would: one snapshot
    assert dict(found) == dict(rows[::3])
    assert all(type(content) is bytes for _, content in found)


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(tmp_path: Path) -> None:
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    with store.engine.connect() as conn:
        conn.execute(text("DROP TABLE blobs"))
        with pytest.raises(sa_exc.OperationalError, match="no such table: blobs"):
            fetch_blobs(conn, ["a" * 64])


def test_a_named_paramstyle_is_refused(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{tmp_path / 'other.db'}", paramstyle="named")
    with engine.connect() as conn, pytest.raises(ValueError, match="positional paramstyle, not 'named'"):
        DriverCursor(conn)
