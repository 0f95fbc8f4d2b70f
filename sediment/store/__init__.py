"""The fact store: one interface (:class:`FactStore`), SQLite and PostgreSQL backends.

SQLAlchemy Core owns the dialect differences; the same tables, natural-key UNIQUE indexes
and ``INSERT … ON CONFLICT DO NOTHING`` run on both. Facts are append-only; quarantine is a
log, never a delete.

The store is put together from its parts: :mod:`~sediment.store.engine` (the database URL,
connections, creation and migrations under a lock), :mod:`~sediment.store.write` (appending
Facts under their natural keys), :mod:`~sediment.store.read` (the visible Facts of each kind)
and :mod:`~sediment.store.quarantine` (the quarantine log).
"""

from __future__ import annotations

from collections.abc import Mapping

from sediment.home import sediment_home
from sediment.store.engine import StoreError, database_url
from sediment.store.read import FactReader
from sediment.store.write import AppendResult, FactWriter, PreparedFacts


class FactStore(FactReader, FactWriter):
    """Append-only Facts with content-addressed messages and a quarantine log."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> FactStore:
        return cls(database_url(environ))

    def close(self) -> None:
        self.engine.dispose()

    def __reduce__(self) -> tuple[type[FactStore], tuple[str]]:
        """Pickled as its URL: a copy (a Ray worker's) opens its own connections to the same store."""
        return (type(self), (self.url,))


__all__ = ["AppendResult", "FactStore", "PreparedFacts", "StoreError", "database_url", "sediment_home"]
