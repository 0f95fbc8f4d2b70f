"""Sediment's own decision event, ``sediment.tool_decision`` (the record's body), which a shim
emits for a harness without native telemetry (Cursor's hooks, pi): one record holds the whole
decision, no join.

- ``agent`` names the harness (``claude-code``, ``copilot``, ``codex``, ``cursor``, ``pi``);
  another name is skipped as ``unknown_agent:<name>``.
- ``decision`` ``accept`` / ``reject`` → ``accepted`` (another value: ``not_a_decision:<value>``);
  ``explicit`` a ``boolValue`` (the shim knows whether a person decided).
- ``session_id`` ← ``session.id`` (the record's, else the resource's); ``call_id`` ←
  ``tool_use_id`` (required); ``file_path`` ← ``file_path`` (``""`` when absent: a reject
  usually has none); ``user_id`` ← the resource's ``user.id``, else the record's;
  ``interaction_mode`` ``agent``; ``occurred_at`` ← ``timeUnixNano``; ``raw`` ← ``{"decision":
  record}``.
- Cursor's hooks report an agent ``Write`` when they receive it, possibly more than once: an
  implicit accept of a Cursor ``Write`` (``tool_name``) with a call id gets the id
  ``cursor-write-v1:`` + the SHA-256 of the compact ASCII JSON ``[org_id, agent_harness,
  session_id, call_id, file_path, accepted, explicit, interaction_mode, "Write"]`` of the
  validated Fact, so every later receipt collapses onto the first one stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from sediment.ingest.otlp.batch import Batch, Emitted, Skip, build, occurred, session_of, user_of
from sediment.ingest.otlp.envelope import LogRecord
from sediment.ingest.otlp.provenance import provenance
from sediment.model.facts import AGENT_HARNESSES, DeveloperDecision

DECISION: Final = "sediment.tool_decision"
CURSOR_WRITE_PREFIX: Final = "cursor-write-v1:"
PATHS: Final = {
    "session_id": "attributes[session.id]",
    "user_id": "attributes[user.id]",
    "file_path": "attributes[file_path]",
    "call_id": "attributes[tool_use_id]",
    "occurred_at": "timeUnixNano",
}


def harness(record: LogRecord) -> str:
    """The ``agent`` attribute, a harness Sediment knows (else the record is skipped)."""
    agent = record.attributes.text("agent", required=True)
    assert agent is not None
    if agent not in AGENT_HARNESSES:
        raise Skip(f"unknown_agent:{agent}")
    return agent


def cursor_write_id(fact: DeveloperDecision) -> str:
    identity = [fact.org_id, fact.agent_harness, fact.session_id, fact.call_id, fact.file_path, fact.accepted,
                fact.explicit, fact.interaction_mode, "Write"]
    encoded = json.dumps(identity, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return CURSOR_WRITE_PREFIX + hashlib.sha256(encoded).hexdigest()


def translate(record: LogRecord, batch: Batch) -> Emitted:
    attributes = record.attributes
    agent = harness(record)
    verdict = attributes.text("decision", required=True)
    if verdict not in ("accept", "reject"):
        raise Skip(f"not_a_decision:{verdict}")
    explicit = attributes.boolean("explicit", required=True)
    tool = attributes.text("tool_name")
    fields: dict[str, Any] = {
        "org_id": batch.org_id,
        "session_id": session_of(record),
        "user_id": user_of(record, record_too=True),
        "agent_harness": agent,
        "file_path": attributes.text("file_path") or "",
        "accepted": verdict == "accept",
        "explicit": explicit,
        "interaction_mode": "agent",
        "call_id": attributes.identifier("tool_use_id", required=True),
        "occurred_at": occurred(record),
        "captured_at": batch.captured_at,
        "raw": {"decision": provenance(record.record)},
    }
    fact = build(DeveloperDecision, fields, PATHS, "decision_id")
    if fact.agent_harness == "cursor" and tool == "Write" and fact.accepted and not fact.explicit:
        fact = fact.model_copy(update={"decision_id": cursor_write_id(fact)})
    return Emitted((fact,))
