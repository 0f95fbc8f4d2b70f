"""The events Sediment's Session-end transcript extractor sends (the record's body names them):
``sediment.edit_observation`` → EditObservation, ``sediment.rejected_edit`` → RejectedEdit,
``sediment.retry_linkage`` → RetryLinkage.

Every one: ``agent`` a harness Sediment knows (another is skipped as ``unknown_agent:<name>``);
``session_id`` ← ``session.id`` (the record's, else the resource's); ``user_id`` ← the
resource's ``user.id``, else the record's; ``occurred_at`` ← ``timeUnixNano``; ``file_path`` ←
``file_path`` (required, exactly as sent).

- edit observation: ``call_id`` ← ``tool_use_id``; ``applied_text``, ``observed_file_text``
  (strings; ``""`` is legal: an empty Write, a deleted file; each at most 256 KiB of UTF-8);
  ``external_lines_added``, ``external_lines_removed`` (optional ``intValue`` s, at least 0);
  ``raw`` ← ``{"tool_name": …}`` (the texts are the Fact's fields).
- rejected edit: ``call_id`` ← ``tool_use_id``; ``proposed`` (a string of at most 256 KiB);
  ``raw`` ← ``{"tool_name": …}``.
- retry linkage: ``tool_name`` ``Edit`` or ``Write`` (another is skipped as
  ``not_a_retry_tool:<name>``); ``rejected_call_id``, ``accepted_call_id`` (two different
  calls); ``raw`` ``{}`` (ids only).
"""

from __future__ import annotations

from typing import Any, Final

from sediment.ingest.otlp.batch import Batch, Emitted, Skip, build, occurred, session_of, user_of
from sediment.ingest.otlp.envelope import LogRecord, Refused
from sediment.ingest.otlp.shims import harness
from sediment.model.facts import EditObservation, RejectedEdit, RetryLinkage

EDIT_OBSERVATION: Final = "sediment.edit_observation"
REJECTED_EDIT: Final = "sediment.rejected_edit"
RETRY_LINKAGE: Final = "sediment.retry_linkage"
EVENTS: Final = (EDIT_OBSERVATION, REJECTED_EDIT, RETRY_LINKAGE)
MAX_TEXT_BYTES: Final = 256 * 1024
"""The most UTF-8 bytes each text of an edit event holds (the extractor's own limit)."""
RETRY_TOOLS: Final = ("Edit", "Write")
PATHS: Final = {
    "session_id": "attributes[session.id]",
    "user_id": "attributes[user.id]",
    "file_path": "attributes[file_path]",
    "call_id": "attributes[tool_use_id]",
    "external_lines_added": "attributes[external_lines_added]",
    "external_lines_removed": "attributes[external_lines_removed]",
    "rejected_call_id": "attributes[rejected_call_id]",
    "accepted_call_id": "attributes[accepted_call_id]",
    "occurred_at": "timeUnixNano",
}


def _text(record: LogRecord, key: str) -> str:
    """A required text of at most :data:`MAX_TEXT_BYTES`."""
    text = record.attributes.text(key, required=True)
    assert text is not None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise Refused(f"attributes[{key}]: {size} bytes of UTF-8, more than {MAX_TEXT_BYTES} (256 KiB)")
    return text


def _identity(record: LogRecord, batch: Batch) -> dict[str, Any]:
    return {
        "org_id": batch.org_id,
        "session_id": session_of(record),
        "user_id": user_of(record, record_too=True),
        "agent_harness": harness(record),
        "file_path": record.attributes.identifier("file_path", required=True),
        "occurred_at": occurred(record),
        "captured_at": batch.captured_at,
    }


def translate(record: LogRecord, event: str, batch: Batch) -> Emitted:
    attributes = record.attributes
    if event == RETRY_LINKAGE:
        tool = attributes.text("tool_name", required=True)
        if tool not in RETRY_TOOLS:
            raise Skip(f"not_a_retry_tool:{tool}")
        fields = _identity(record, batch) | {
            "tool_name": tool,
            "rejected_call_id": attributes.identifier("rejected_call_id", required=True),
            "accepted_call_id": attributes.identifier("accepted_call_id", required=True),
        }
        return Emitted((build(RetryLinkage, fields, PATHS, "retry_linkage_id"),))
    fields = _identity(record, batch) | {
        "call_id": attributes.identifier("tool_use_id", required=True),
        "raw": {"tool_name": attributes.text("tool_name")},
    }
    if event == REJECTED_EDIT:
        fields["proposed"] = _text(record, "proposed")
        return Emitted((build(RejectedEdit, fields, PATHS, "rejection_id"),))
    fields |= {
        "applied_text": _text(record, "applied_text"),
        "observed_file_text": _text(record, "observed_file_text"),
        "external_lines_added": attributes.integer("external_lines_added"),
        "external_lines_removed": attributes.integer("external_lines_removed"),
    }
    return Emitted((build(EditObservation, fields, PATHS, "observation_id"),))
