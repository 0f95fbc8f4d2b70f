"""Buildkite webhooks (``sediment ingest buildkite``) → CIOutcome: ``build.finished`` and
``job.finished`` (the other ``build.*`` and ``job.*`` events are declined until final).

A delivery is a bare payload ``{event, build, pipeline, sender}`` (a job event adds ``job``) or
``{"headers": {...}, "payload": {...}}``; the event is the ``X-Buildkite-Event`` header or the
body's ``event`` (they must agree). Mapping (docs/ci-providers.md):

- What a build and each of its jobs share (:func:`build_fields`): ``run_id`` ``build.id`` (a
  rebuild is a new build carrying ``rebuilt_from``, so a build has no attempt number: CI
  resolution judges a build and its rebuilds as one lineage, ordered by ``build.number``, and a
  build whose job was retried sends a new final event under its id, keyed and ordered by
  ``build.finished_at``; sediment.ci.reruns), ``repo``
  ``pipeline.repository`` stripped to ``owner/name``, ``commit_sha`` ``build.commit`` (the literal
  ``HEAD`` of a build made without a SHA is refused), ``branch`` ``build.branch``,
  ``workflow_name`` ``pipeline.name`` (else ``pipeline.slug``), ``workflow_id`` ``pipeline.id``,
  ``run_url`` ``build.web_url``, ``pr_number`` ``build.pull_request.id``.
- Build: ``provider_result`` ``build.state``, and a ``cancel_reason`` in ``reason``. A build with
  ``blocked: true`` is not final whatever its state (Buildkite keeps the last state, e.g.
  ``passed``, on a blocked build).
- Job (``job.finished``): one job (``job.id``, :mod:`sediment.ci.jobs`) of the build ``build.id``.
  Only a command job (``job.type`` ``script``) carries an outcome; a ``waiter``, a block
  (``manual``) and a ``trigger`` job are declined as :data:`JOB_NOT_A_COMMAND` (a trigger job's
  result is another build's, which that build's own webhooks report). ``run_attempt`` is
  ``job.retries_count + 1`` (a retry is a new job whose count grows; a job never retried sends
  ``null`` or ``0``: attempt 1), ``provider_result`` ``job.state`` (``failed/soft_failed`` for a
  soft failure, which is ``neutral``: it does not fail the build), and ``job.signal_reason`` (the
  agent, not the command, ended the job) in ``reason``.

Buildkite names no forge repository id, so outcomes are legacy (no identity triple).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ci.reruns import BUILD_TIME
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.runs import NOT_TERMINAL, UNSUPPORTED_EVENT_PREFIX, joined, outcome
from sediment.ingest.facts_jsonl import acting_org, json_copy
from sediment.ingest.reading.payload import (
    header,
    id_text,
    lookup,
    obj,
    optional_bool,
    optional_int,
    optional_text,
    optional_time,
    repo_from_url,
    sha,
    text,
    unwrap,
)
from sediment.model.facts import CIResult

PROVIDER: Final = "buildkite"

BUILD_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "passed": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "skipped": "skipped",
    "not_run": "skipped",
})
"""``build.state`` → ``result``; ``scheduled``, ``running``, ``waiting``, ``waiting_failed``,
``blocked``, ``failing`` (and ``blocked: true`` on any state) are not final and declined."""

JOB_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "passed": "passed",
    "failed": "failed",
    "timed_out": "timed_out",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "skipped": "skipped",
    "broken": "skipped",
    "not_run": "skipped",
    "expired": "error",
})
"""``job.state`` of a command job → ``result``. ``failed`` with ``soft_failed: true`` is
``neutral``; ``expired`` (no agent took the job before its expiry: it never ran, yet it fails the
build) is ``error``. ``pending``, ``waiting``, ``blocked``, ``unblocked``, ``limiting``,
``limited``, ``scheduled``, ``assigned``, ``accepted``, ``running``, ``timing_out``, the
``*_failed`` states of waiting and block jobs, and anything else are not final and declined."""

BUILD_EVENTS: Final = ("build.scheduled", "build.running", "build.failing", "build.finished", "build.skipped")

JOB_EVENTS: Final = ("job.scheduled", "job.started", "job.finished", "job.activated", "job.promised_exit_status")
"""Job events; only ``job.finished`` reports a finished job, the others are not final."""

COMMAND_JOB: Final = "script"
"""The ``job.type`` of a command step's job, the only kind that runs anything."""

JOB_NOT_A_COMMAND: Final = "job_not_a_command"
"""A ``job.finished`` of a ``waiter``, block (``manual``) or ``trigger`` job: it ran no command."""

SKIP_REASONS: Final[tuple[str, ...]] = (NOT_TERMINAL, JOB_NOT_A_COMMAND)
"""Declined on purpose; besides these, ``unsupported_event:<name>`` for any other event."""

_PATHS: Final = MappingProxyType({
    "run_id": "build.id",
    "repo": "pipeline.repository",
    "commit_sha": "build.commit",
    "branch": "build.branch",
    "workflow_name": "pipeline.name",
    "workflow_id": "pipeline.id",
    "run_url": "build.web_url",
    "provider_result": "build.state",
    "reason": "build.cancel_reason",
    "pr_number": "build.pull_request.id",
    "source_event_type": "event",
})
_JOB_PATHS: Final = MappingProxyType({
    **_PATHS,
    "run_attempt": "job.retries_count",
    "provider_result": "job.state",
    "reason": "job.signal_reason",
})


def _pr_number(payload: Mapping[str, Any]) -> int | None:
    value = lookup(payload, "build.pull_request.id")
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and not value.startswith("0"):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise TranslationError(f"build.pull_request.id: expected a pull request number, got {value!r}")


def build_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a build's outcome and each of its jobs' share: which build, of which commit,
    branch and pipeline (the same values, so a build and its jobs are one run to CI resolution)."""
    commit = text(payload, "build.commit")
    if commit.strip().upper() == "HEAD":
        raise TranslationError("build.commit: 'HEAD' is not a commit SHA (a build made without one)")
    # what orders a build's re-runs (sediment.ci.reruns): a rebuild names the build it rebuilt and
    # comes later in the pipeline's numbering; a retried job's build finishes again, later
    optional_int(payload, "build.number")
    if obj(payload, "build.rebuilt_from", required=False) is not None:
        id_text(payload, "build.rebuilt_from.id")
    optional_time(payload, BUILD_TIME)
    return {
        "provider": PROVIDER,
        "run_id": id_text(payload, "build.id"),
        "repo": repo_from_url(text(payload, "pipeline.repository"), "pipeline.repository"),
        "commit_sha": sha(commit, "build.commit"),
        "branch": optional_text(payload, "build.branch") or "",
        "workflow_name": optional_text(payload, "pipeline.name") or optional_text(payload, "pipeline.slug") or "",
        "workflow_id": id_text(payload, "pipeline.id", required=False),
        "run_url": optional_text(payload, "build.web_url"),
        "pr_number": _pr_number(payload),
    }


def job_result(state: str, soft_failed: bool) -> CIResult:
    """The result of a command job's ``state`` (``unknown`` when not final)."""
    result = JOB_RESULTS.get(state, "unknown")
    return "neutral" if result == "failed" and soft_failed else result


def translate_buildkite(delivery: dict[str, Any], *, event: str | None = None, org_id: str,
                        captured_at: datetime) -> Translation:
    """One Buildkite webhook delivery → its CIOutcome, or the reason it was skipped."""
    payload, headers = unwrap(delivery)
    kind = text(payload, "event")
    named = header(headers, "X-Buildkite-Event") or (event.strip() if event and event.strip() else None)
    if named is not None and named != kind:
        raise TranslationError(f"event: {kind!r} disagrees with the event {named!r} (X-Buildkite-Event)")
    given = {"org_id": org_id, "source_event_type": kind, "captured_at": captured_at}
    if kind in BUILD_EVENTS:
        return _build(payload, given)
    if kind == "job.finished":
        return _job(payload, given)
    if kind in JOB_EVENTS:
        return Translation.skip(NOT_TERMINAL)
    return Translation.skip(f"{UNSUPPORTED_EVENT_PREFIX}{kind}")


def _stored(payload: Mapping[str, Any], given: dict[str, Any], fields: dict[str, Any],
            paths: Mapping[str, str]) -> Translation:
    """The CIOutcome of a final event: ``given`` (org, event, capture time) and ``fields``, the
    whole payload in ``raw``."""
    return outcome({**given, "org_id": acting_org(given["org_id"]), **fields, "raw": json_copy(dict(payload))},
                   paths)


def _build(payload: Mapping[str, Any], given: dict[str, Any]) -> Translation:
    obj(payload, "build")
    state = text(payload, "build.state")
    blocked = optional_bool(payload, "build.blocked") is True
    result = "unknown" if blocked else BUILD_RESULTS.get(state, "unknown")
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    return _stored(payload, given, {
        **build_fields(payload),
        "run_attempt": None,
        "result": result,
        "provider_result": state,
        "reason": optional_text(payload, "build.cancel_reason") or None,
    }, _PATHS)


def _attempt(payload: Mapping[str, Any]) -> int:
    """``retries_count + 1``; a job made by a retry (``retry_source`` set) must count it."""
    retries = optional_int(payload, "job.retries_count") or 0
    if obj(payload, "job.retry_source", required=False) is not None and retries == 0:
        raise TranslationError("job.retries_count: expected at least 1 for a job made by a retry "
                               "(job.retry_source is set)")
    return retries + 1


def _job(payload: Mapping[str, Any], given: dict[str, Any]) -> Translation:
    obj(payload, "job")
    obj(payload, "build")
    if text(payload, "job.type") != COMMAND_JOB:
        return Translation.skip(JOB_NOT_A_COMMAND)
    state = text(payload, "job.state")
    soft_failed = optional_bool(payload, "job.soft_failed") is True
    result = job_result(state, soft_failed)
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    id_text(payload, "job.id")  # the job's own id keys the outcome (sediment.ci.jobs); it must be there
    return _stored(payload, given, {
        **build_fields(payload),
        "run_attempt": _attempt(payload),
        "result": result,
        "provider_result": joined(state, "soft_failed" if result == "neutral" else None),
        "reason": optional_text(payload, "job.signal_reason") or None,
    }, _JOB_PATHS)
