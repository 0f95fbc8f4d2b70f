"""Vendor-neutral CI outcomes (``sediment ingest ci``) → CIOutcome.

GitHub Actions is the only CI parsed here from its own webhooks (see :mod:`.github`). Every
other CI (GitLab CI, CircleCI, Buildkite, Jenkins, …) sends a record that its *sender* has
already normalized to the CIOutcome field names: the sender declares ``provider``, ``run_id``
and the normalized ``result``; nothing is inferred from URLs and no vendor payload is parsed.
The vendor's original payload belongs in ``raw`` (it defaults to the record itself); it is
stored with its credentials redacted (:func:`~sediment.ingest.facts_jsonl.stored_raw`).

``outcome_id``, ``org_id``, ``captured_at`` and ``schema_version`` are optional: the id is
derived from ``(org, provider, run_id, run_attempt or 0)``, the org is the acting one (a
different org is refused), the capture time is the ingest's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sediment.ingest import Translation, TranslationError
from sediment.ingest.facts_jsonl import PENDING_ID, acting_org, build_fact, resolve_org, stored_raw, with_natural_id
from sediment.model.facts import CIOutcome


def translate_ci(record: dict[str, Any], *, org_id: str, captured_at: datetime) -> Translation:
    """One sender-normalized CI outcome record → one CIOutcome."""
    if not isinstance(record, dict):
        raise TranslationError(f"record: expected a JSON object, got {type(record).__name__}")
    fields = dict(record)
    fields["org_id"] = resolve_org(fields.get("org_id"), acting_org(org_id))
    if fields.get("captured_at") is None:
        fields["captured_at"] = captured_at
    if fields.get("raw") is None:
        fields["raw"] = record
    if isinstance(fields["raw"], dict):  # the sender's vendor payload, or the record itself
        fields["raw"] = stored_raw(fields["raw"])
    derive = fields.get("outcome_id") is None
    if derive:
        fields["outcome_id"] = PENDING_ID
    outcome = build_fact(CIOutcome, fields)
    if derive:
        outcome = with_natural_id(outcome, "outcome_id")
    return Translation(facts=(outcome,))
