"""What every CI provider translator shares: building a CIOutcome of one run attempt (or of
one job of it) from mapped fields, and the skip reasons of events that yield none.

The rules (docs/ci-providers.md): one natural key per attempt ``(provider, repo, run_id,
run_attempt)``; the provider's raw state kept verbatim in ``provider_result`` (two state fields
joined as ``status/conclusion``); only a terminal state is stored, because the store keeps the
first Fact of a key and a stored non-terminal ``unknown`` would hide the terminal event that
follows it. A job-level outcome (a GitHub ``workflow_job`` or ``check_run``, a GitLab Job Hook,
a CircleCI ``job-completed``, a Buildkite ``job.finished``) adds its job id to the key (:mod:`sediment.ci.jobs`) and is
grouped into its run by CI resolution. ``raw`` is stored with its credentials redacted
(:func:`~sediment.ingest.facts_jsonl.stored_raw`): a Buildkite ``build.env`` secret, a token in
a repository URL's userinfo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sediment.ingest import Translation
from sediment.ingest.facts_jsonl import PENDING_ID, build_fact, stored_raw, with_natural_id
from sediment.model.facts import CIOutcome, CIResult

NOT_TERMINAL: Final = "ci_run_not_terminal"
"""The event reports a state that is not final (queued, running, waiting, blocked, …)."""

UNSUPPORTED_EVENT_PREFIX: Final = "unsupported_event:"

CI_SKIP_REASONS: Final[tuple[str, ...]] = (NOT_TERMINAL,)
"""Declined on purpose by every CI provider translator; besides these,
``unsupported_event:<name>`` and the provider's own (documented in its module)."""


def joined(status: str | None, detail: str | None) -> str | None:
    """``status/detail`` when both are given, else whichever is (``provider_result``)."""
    if status is not None and detail is not None:
        return f"{status}/{detail}"
    return status if status is not None else detail


def outcome(fields: Mapping[str, Any], paths: Mapping[str, str], warnings: tuple[str, ...] = ()) -> Translation:
    """The CIOutcome of ``fields`` (validated; a bad field is refused naming its input path via
    ``paths``) with its natural id, or a skip when ``result`` is ``unknown`` for a non-final state."""
    raw = fields.get("raw")
    if isinstance(raw, Mapping):
        fields = {**fields, "raw": stored_raw(raw)}
    fact = build_fact(CIOutcome, {"outcome_id": PENDING_ID, **fields}, paths)
    return Translation(facts=(with_natural_id(fact, "outcome_id"),), warnings=warnings)


def skip_not_terminal(result: CIResult) -> bool:
    return result == "unknown"
