"""Fact store tables (SQLAlchemy Core; the same DDL on SQLite and PostgreSQL).

Content is stored as canonical record JSON in ``TEXT`` (never JSONB): NaN, infinities, lone
surrogates and NUL survive because the record escapes them. Typed columns own every query.
Message content (and the replayed message lists of a call's ``raw`` payload) is stored once,
content-addressed, in ``blobs``: compressed canonical record text
(:mod:`sediment.store.blob_codec`) keyed by the SHA-256 of the uncompressed text.
So is a call's tool list, one blob per distinct list (``inference_calls.tools_hash``; NULL when the call declared none).
Per-test results (``test_case_results``) are queried by ``(org_id, repo, commit_sha)`` and carry
their run attempt (``provider``, ``run_id``, ``run_attempt``) and ``test_id`` as columns too.
Each Fact table has a ``natural_key`` with a UNIQUE index, so a redelivered Fact collapses
(an inference call with a provider response id is keyed by its Session too, from version 5; a
developer decision by its interaction mode and time too, from version 6, as the contract keys it;
a CI outcome of a run re-run without an attempt number by the provider's time of its final event
too, from version 7).
Edit observations, rejected edits and retry linkages (version 6) are read per Session.
Times are UTC ISO-8601 text with a fixed width, so they sort as text.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Index, Integer, LargeBinary, MetaData, String, Table, Text

SCHEMA_VERSION = 8
metadata = MetaData()

meta = Table(
    "sediment_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

#: Content-addressed blobs: replayed context is stored once.
blobs = Table(
    "blobs", metadata,
    Column("blob_hash", String(64), primary_key=True),
    Column("content", LargeBinary, nullable=False),
)


def _fact_table(name: str, *columns: Column[Any], indexes: tuple[tuple[str, ...], ...] = ()) -> Table:
    table = Table(
        name, metadata,
        Column("fact_id", String(200), primary_key=True),
        Column("org_id", String(64), nullable=False),
        Column("natural_key", Text, nullable=False, unique=True),
        *columns,
        Column("record", Text, nullable=False),
    )
    for index_columns in indexes:
        Index(f"ix_{name}_{'_'.join(index_columns)}", *(table.c[c] for c in index_columns))
    return table


inference_calls = _fact_table(
    "inference_calls",
    Column("session_id", Text, nullable=False),
    Column("observed_at", String(32), nullable=False),
    Column("input_hashes", Text, nullable=False),
    Column("output_hashes", Text, nullable=False),
    Column("raw_refs", Text, nullable=False, server_default="[]"),
    Column("tools_hash", String(64), nullable=True),
    indexes=(("org_id", "session_id", "observed_at"),),
)
ci_outcomes = _fact_table(
    "ci_outcomes",
    Column("repo", Text, nullable=False),
    Column("commit_sha", String(64), nullable=False),
    Column("captured_at", String(32), nullable=False),
    indexes=(("org_id", "repo", "commit_sha"),),
)
session_commit_observations = _fact_table(
    "session_commit_observations",
    Column("session_id", Text, nullable=False),
    Column("repo", Text, nullable=False),
    Column("commit_sha", String(64), nullable=False),
    Column("captured_at", String(32), nullable=False),
    indexes=(("org_id", "session_id"),),
)
developer_decisions = _fact_table(
    "developer_decisions",
    Column("session_id", Text, nullable=False),
    indexes=(("org_id", "session_id"),),
)
pushes = _fact_table("pushes", Column("repo", Text, nullable=False), indexes=(("org_id", "repo"),))
pull_request_merges = _fact_table("pull_request_merges", Column("repo", Text, nullable=False))
repository_renames = _fact_table("repository_renames")
#: One recorded test outcome per row (schema version 4); the natural key is the run attempt, the
#: report's SHA-256 and the element's locator, so a re-ingested report stores nothing new.
test_case_results = _fact_table(
    "test_case_results",
    Column("repo", Text, nullable=False),
    Column("commit_sha", String(64), nullable=False),
    Column("provider", String(32), nullable=False),
    Column("run_id", Text, nullable=False),
    Column("run_attempt", Integer, nullable=False),
    Column("test_id", Text, nullable=False),
    Column("captured_at", String(32), nullable=False),
    indexes=(("org_id", "repo", "commit_sha"), ("org_id", "provider", "run_id", "run_attempt")),
)

#: What became of applied agent edits, the edits developers refused, and the retries that followed a
#: refusal (schema version 6): Session-scoped Facts read per Session.
edit_observations = _fact_table("edit_observations", Column("session_id", Text, nullable=False),
                                indexes=(("org_id", "session_id"),))
rejected_edits = _fact_table("rejected_edits", Column("session_id", Text, nullable=False),
                             indexes=(("org_id", "session_id"),))
retry_linkages = _fact_table("retry_linkages", Column("session_id", Text, nullable=False),
                             indexes=(("org_id", "session_id"),))

#: Append-only quarantine log; the latest action per Fact wins; the revision is monotonic.
quarantine_log = Table(
    "quarantine_log", metadata,
    Column("revision", Integer, primary_key=True, autoincrement=True),
    Column("org_id", String(64), nullable=False),
    Column("table_name", String(64), nullable=False),
    Column("fact_id", String(200), nullable=False),
    Column("action", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("recorded_at", String(32), nullable=False),
    Index("ix_quarantine_log_fact", "org_id", "table_name", "fact_id"),
)

FACT_TABLES: dict[str, Table] = {
    t.name: t for t in (inference_calls, ci_outcomes, session_commit_observations, developer_decisions,
                        pushes, pull_request_merges, repository_renames, test_case_results, edit_observations,
                        rejected_edits, retry_linkages)
}
