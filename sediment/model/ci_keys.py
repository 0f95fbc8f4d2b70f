"""What a CI outcome's provider payload adds to its natural key.

A job-level outcome (GitHub ``workflow_job`` and ``check_run``, GitLab's Job Hook, CircleCI
``job-completed``, a Buildkite ``job.*`` event) is keyed apart from its run by the job's own id
(:func:`job_id`); a run that its provider re-runs under the same id without an attempt number (a
GitLab pipeline, a third-party check suite, a Buildkite build) is keyed apart from its other final
events by the provider's time of this one (:func:`rerun_time`). Both are read from the payload kept
in ``raw``, so the store can key a CIOutcome without knowing CI's rules (:mod:`sediment.ci.jobs`,
:mod:`sediment.ci.reruns`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from sediment.identifiers import TimestampError, utc_timestamp
from sediment.model.facts import CIOutcome
from sediment.records import sortable_time

_GITLAB_TIME: Final = re.compile(
    r"(?P<moment>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?) "
    r"(?:(?P<utc>UTC)|(?P<sign>[+-])(?P<hours>[0-9]{2})(?P<minutes>[0-9]{2}))"
)


def provider_time(text: str) -> datetime:
    """A CI provider's timestamp in UTC: RFC 3339, or GitLab's ``2016-08-12 15:23:28 UTC`` and
    ``2022-04-01 13:49:55 +0800`` forms. Anything else raises :class:`TimestampError`."""
    match = _GITLAB_TIME.fullmatch(text)
    if match is not None:
        offset = "Z" if match["utc"] else f"{match['sign']}{match['hours']}:{match['minutes']}"
        text = f"{match['moment'].replace(' ', 'T')}{offset}"
    return utc_timestamp(text)


def sortable_provider_time(value: Any) -> str | None:
    """A provider timestamp (:func:`provider_time`) as sortable UTC text, or ``None`` when ``value``
    is not one."""
    if not isinstance(value, str):
        return None
    try:
        return sortable_time(provider_time(value))
    except TimestampError:
        return None


def raw_at(raw: Mapping[str, Any], *path: str) -> Any:
    """The value at ``path`` in a raw payload, ``None`` where a step is missing or not an object."""
    value: Any = raw
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _is_gitlab_pipeline(outcome: CIOutcome) -> bool:
    return outcome.provider == "gitlab_ci" and outcome.raw.get("object_kind") == "pipeline"


def _is_check_suite(outcome: CIOutcome) -> bool:
    return outcome.provider == "github_checks" and (outcome.source_event_type or "").startswith("github.check_suite.")


def _is_buildkite_build(outcome: CIOutcome) -> bool:
    return outcome.provider == "buildkite" and (outcome.source_event_type or "").startswith("build.")


def rerun_time(outcome: CIOutcome) -> str | None:
    """The provider's time of this final event when the run is re-run under the same id without
    an attempt number (a GitLab pipeline, a third-party check suite, a Buildkite build), as
    sortable UTC text; else ``None``. It keys the event apart from the run's other final events."""
    if outcome.run_attempt is not None:
        return None
    if _is_gitlab_pipeline(outcome):
        return sortable_provider_time(raw_at(outcome.raw, "object_attributes", "finished_at"))
    if _is_check_suite(outcome):
        return sortable_provider_time(outcome.raw.get("updated_at"))
    if _is_buildkite_build(outcome):
        return sortable_provider_time(raw_at(outcome.raw, "build", "finished_at"))
    return None


def raw_id(value: Any) -> str | None:
    """A provider id read from a stored payload (a number or a non-blank string) as text, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, str) and not value.strip()):
        return None
    return str(value)


GITHUB_JOB_EVENTS: Final = ("github.workflow_job.", "github.check_run.")
"""``source_event_type`` prefixes of GitHub's job-level events (``raw`` is the job object)."""


def job_id(outcome: CIOutcome) -> str | None:
    """The job's id when ``outcome`` reports one job of a run, else ``None`` (a run-level outcome)."""
    raw: Mapping[str, Any] = outcome.raw
    if outcome.provider in ("github_actions", "github_checks"):
        event = outcome.source_event_type or ""
        return raw_id(raw.get("id")) if event.startswith(GITHUB_JOB_EVENTS) else None
    if outcome.provider == "gitlab_ci" and raw.get("object_kind") == "build":
        return raw_id(raw.get("build_id"))
    if outcome.provider == "circleci" and raw.get("type") == "job-completed":
        job = raw.get("job")
        return raw_id(job.get("id")) if isinstance(job, Mapping) else None
    if outcome.provider == "buildkite" and (outcome.source_event_type or "").startswith("job."):
        job = raw.get("job")  # a job event's payload; a build.* outcome is run-level
        return raw_id(job.get("id")) if isinstance(job, Mapping) else None
    return None
