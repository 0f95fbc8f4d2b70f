"""GitHub Copilot Chat: three log events (attribute ``event.name``) carry a decision.

- ``copilot_chat.edit.feedback``: ``accepted`` ← ``outcome`` is ``accepted`` (``rejected``:
  false; another value, such as ``saved``, is no decision: skipped as
  ``not_a_decision:<outcome>``); ``explicit``; ``interaction_mode`` ``inline`` when
  ``edit_surface`` is ``inline_chat``, else ``agent``;
- ``copilot_chat.inline.done``: ``accepted`` ← ``accepted`` (a ``boolValue``); ``explicit``;
  ``inline``;
- ``copilot_chat.edit.survival``: ``accepted`` ← ``survival_rate_no_revert`` > 0 (a number);
  implicit; ``agent``.

Only an ``apply_patch`` survival (``edit_source``) is a decision; any other (``inline_chat``)
would count a gesture ``inline.done`` already reported, and is skipped as
``survival_not_apply_patch``. A survival record also carries the vendor's graded retention:
``edit_retention_score`` ← ``survival_rate_four_gram`` (a finite number in [0, 1]) and
``observation_delay_ms`` ← ``time_delay_ms`` (the delay bucket, a finite number in
[0, 2^63), truncated to an integer).

Every decision: ``session_id`` ← the *resource's* ``session.id``; ``user_id`` ← the resource's
``user.id``; ``file_path`` ← ``copilot_chat.file.relative_path`` (required: Copilot always sends
it); ``call_id`` ← ``request_id``; ``commit_sha`` ← ``github.copilot.git.commit_sha`` (``""`` is
none); ``occurred_at`` ← ``timeUnixNano``; ``raw`` ← the record (see :mod:`.provenance`).
"""

from __future__ import annotations

import math
from typing import Any, Final

from sediment.ingest.otlp.batch import Batch, Emitted, Skip, build, occurred, session_of, user_of
from sediment.ingest.otlp.envelope import LogRecord, Refused
from sediment.ingest.otlp.provenance import provenance
from sediment.model.facts import INT64_MAX, DeveloperDecision

FEEDBACK: Final = "copilot_chat.edit.feedback"
INLINE_DONE: Final = "copilot_chat.inline.done"
SURVIVAL: Final = "copilot_chat.edit.survival"
EVENTS: Final = (FEEDBACK, INLINE_DONE, SURVIVAL)

FILE: Final = "copilot_chat.file.relative_path"
COMMIT: Final = "github.copilot.git.commit_sha"
PATHS: Final = {
    "session_id": "resource.attributes[session.id]",
    "user_id": "resource.attributes[user.id]",
    "file_path": f"attributes[{FILE}]",
    "commit_sha": f"attributes[{COMMIT}]",
    "call_id": "attributes[request_id]",
    "edit_retention_score": "attributes[survival_rate_four_gram]",
    "observation_delay_ms": "attributes[time_delay_ms]",
    "occurred_at": "timeUnixNano",
}


def _finite(value: int | float | None, key: str) -> int | float | None:
    if isinstance(value, float) and not math.isfinite(value):
        raise Refused(f"attributes[{key}]: must be a finite number, got {value}")
    return value


def _verdict(record: LogRecord, event: str) -> tuple[bool, bool, str]:
    """``(accepted, explicit, interaction_mode)`` of a decision event."""
    attributes = record.attributes
    if event == FEEDBACK:
        outcome = attributes.text("outcome", required=True)
        if outcome not in ("accepted", "rejected"):
            raise Skip(f"not_a_decision:{outcome}")
        mode = "inline" if attributes.text("edit_surface") == "inline_chat" else "agent"
        return outcome == "accepted", True, mode
    if event == INLINE_DONE:
        accepted = attributes.boolean("accepted", required=True)
        assert accepted is not None
        return accepted, True, "inline"
    if attributes.text("edit_source") != "apply_patch":
        raise Skip("survival_not_apply_patch")
    rate = _finite(attributes.number("survival_rate_no_revert", required=True), "survival_rate_no_revert")
    assert rate is not None
    return rate > 0, False, "agent"


def _graded(record: LogRecord) -> dict[str, Any]:
    """The survival record's graded retention and its delay bucket (each only when sent)."""
    attributes = record.attributes
    fields: dict[str, Any] = {}
    score = _finite(attributes.number("survival_rate_four_gram"), "survival_rate_four_gram")
    if score is not None:
        fields["edit_retention_score"] = float(score)  # range checked by the Fact
    delay = _finite(attributes.number("time_delay_ms"), "time_delay_ms")
    if delay is not None:
        if not 0 <= delay <= INT64_MAX:
            raise Refused(f"attributes[time_delay_ms]: must be in [0, 2^63), got {delay}")
        fields["observation_delay_ms"] = int(delay)
    return fields


def translate(record: LogRecord, event: str, batch: Batch) -> Emitted:
    accepted, explicit, mode = _verdict(record, event)
    attributes = record.attributes
    fields: dict[str, Any] = {
        "org_id": batch.org_id,
        "session_id": session_of(record, resource_only=True),
        "user_id": user_of(record, record_too=False),
        "agent_harness": "copilot",
        "file_path": attributes.identifier(FILE, required=True),
        "accepted": accepted,
        "explicit": explicit,
        "interaction_mode": mode,
        "commit_sha": attributes.identifier(COMMIT),
        "call_id": attributes.identifier("request_id"),
        "occurred_at": occurred(record),
        "captured_at": batch.captured_at,
        "raw": provenance(record.record),
    }
    if event == SURVIVAL:
        fields |= _graded(record)
    return Emitted((build(DeveloperDecision, fields, PATHS, "decision_id"),))
