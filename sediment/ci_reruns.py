"""Re-runs that a CI provider does not number: which recorded runs are one lineage, and in
what order their final events happened.

GitHub numbers its re-runs (``run_attempt``); the other providers re-run in one of two ways
(inputs.md Part 1, docs/ci-providers.md "Re-runs"):

- **Same id, a new final event.** A retried GitLab pipeline keeps ``object_attributes.id`` and
  sends a new final Pipeline Hook; a re-requested third-party GitHub check suite keeps
  ``check_suite.id``; a Buildkite build whose job is retried finishes again under its
  ``build.id``. Each final event is its own Fact: :func:`rerun_time` (the provider's own time of
  that final state, ``object_attributes.finished_at`` / ``check_suite.updated_at`` /
  ``build.finished_at``) joins the natural key and the id, and orders the events of the run.
- **A new id, one lineage.** CircleCI's "Rerun workflow" makes a new ``workflow.id`` under the
  same ``pipeline.id`` and ``workflow.name``; a Buildkite rebuild is a new ``build.id`` naming
  the build it rebuilt in ``rebuilt_from.id``. :func:`lineage_of` and :func:`rebuilt_from` say
  which runs CI resolution judges as one lineage; :func:`lineage_position` orders them
  (``workflow.created_at``, ``build.number``).

CI resolution orders the outcomes of a lineage by ``(lineage position, attempt, re-run time)``.

The order is the provider's, never capture or ingest order, so resolution stays pure and
independent of arrival order. A time this module cannot read gives no order; a translator
refuses such a payload before it is stored (:func:`provider_time`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from sediment.facts import CIOutcome
from sediment.identifiers import TimestampError, utc_timestamp
from sediment.records import sortable_time

_GITLAB_TIME: Final = re.compile(
    r"(?P<moment>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?) "
    r"(?:(?P<utc>UTC)|(?P<sign>[+-])(?P<hours>[0-9]{2})(?P<minutes>[0-9]{2}))"
)

GITLAB_PIPELINE_TIME: Final = "object_attributes.finished_at"
CHECK_SUITE_TIME: Final = "check_suite.updated_at"
BUILD_TIME: Final = "build.finished_at"


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


def _get(raw: Mapping[str, Any], *path: str) -> Any:
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
        return sortable_provider_time(_get(outcome.raw, "object_attributes", "finished_at"))
    if _is_check_suite(outcome):
        return sortable_provider_time(outcome.raw.get("updated_at"))
    if _is_buildkite_build(outcome):
        return sortable_provider_time(_get(outcome.raw, "build", "finished_at"))
    return None


def _circleci_workflow(outcome: CIOutcome) -> Mapping[str, Any] | None:
    workflow = outcome.raw.get("workflow") if outcome.provider == "circleci" else None
    return workflow if isinstance(workflow, Mapping) else None


def _buildkite_build(outcome: CIOutcome) -> Mapping[str, Any] | None:
    build = outcome.raw.get("build") if outcome.provider == "buildkite" else None
    return build if isinstance(build, Mapping) else None


def raw_id(value: Any) -> str | None:
    """A provider id read from a stored payload (a number or a non-blank string) as text, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, str) and not value.strip()):
        return None
    return str(value)


def lineage_of(outcome: CIOutcome) -> tuple[str, ...] | None:
    """The lineage a CircleCI workflow run belongs to, ``("circleci_pipeline", pipeline.id,
    workflow.name)``: its reruns share it. ``None`` for every other outcome."""
    workflow = _circleci_workflow(outcome)
    if workflow is None:
        return None
    pipeline = raw_id(_get(outcome.raw, "pipeline", "id"))
    name = workflow.get("name")
    if pipeline is None or not isinstance(name, str) or not name:
        return None
    return ("circleci_pipeline", pipeline, name)


def rebuilt_from(outcome: CIOutcome) -> str | None:
    """The id of the Buildkite build this build rebuilt (``build.rebuilt_from.id``), else ``None``."""
    build = _buildkite_build(outcome)
    return None if build is None else raw_id(_get(build, "rebuilt_from", "id"))


def lineage_position(outcome: CIOutcome) -> str | None:
    """Where this outcome's run falls among the runs of its lineage, as sortable text: a CircleCI
    workflow's ``workflow.created_at``, a Buildkite build's ``build.number`` (for the build and
    each of its jobs); ``None`` for a provider whose runs have no lineage or a payload without it."""
    workflow = _circleci_workflow(outcome)
    if workflow is not None:
        return sortable_provider_time(workflow.get("created_at"))
    build = _buildkite_build(outcome)
    if build is not None:
        number = build.get("number")
        if isinstance(number, int) and not isinstance(number, bool) and 0 <= number < 10**20:  # 20 digits sort as text
            return f"{number:020d}"
    return None


__all__ = [
    "BUILD_TIME",
    "CHECK_SUITE_TIME",
    "GITLAB_PIPELINE_TIME",
    "lineage_of",
    "lineage_position",
    "provider_time",
    "raw_id",
    "rebuilt_from",
    "rerun_time",
    "sortable_provider_time",
]
