"""The quarantine log: Facts excluded from every read, and released again, by appended log
rows (never a delete); each action is a new revision.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from sediment.records import sortable_time
from sediment.store import schema
from sediment.store.engine import StoreEngine, StoreError


class QuarantineLog(StoreEngine):
    """Quarantining and releasing Facts, and which are quarantined now."""

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
