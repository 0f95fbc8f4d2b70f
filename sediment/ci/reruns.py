"""Re-runs that a CI provider does not number: which recorded runs are one lineage, and in
what order their final events happened.

GitHub numbers its re-runs (``run_attempt``); the other providers re-run in one of two ways
(docs/ci-providers.md "Re-runs"):

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

from collections.abc import Mapping
from typing import Any, Final

from sediment.model.ci_keys import raw_at, raw_id, sortable_provider_time
from sediment.model.facts import CIOutcome

GITLAB_PIPELINE_TIME: Final = "object_attributes.finished_at"
CHECK_SUITE_TIME: Final = "check_suite.updated_at"
BUILD_TIME: Final = "build.finished_at"


def _circleci_workflow(outcome: CIOutcome) -> Mapping[str, Any] | None:
    workflow = outcome.raw.get("workflow") if outcome.provider == "circleci" else None
    return workflow if isinstance(workflow, Mapping) else None


def _buildkite_build(outcome: CIOutcome) -> Mapping[str, Any] | None:
    build = outcome.raw.get("build") if outcome.provider == "buildkite" else None
    return build if isinstance(build, Mapping) else None


def lineage_of(outcome: CIOutcome) -> tuple[str, ...] | None:
    """The lineage a CircleCI workflow run belongs to, ``("circleci_pipeline", pipeline.id,
    workflow.name)``: its reruns share it. ``None`` for every other outcome."""
    workflow = _circleci_workflow(outcome)
    if workflow is None:
        return None
    pipeline = raw_id(raw_at(outcome.raw, "pipeline", "id"))
    name = workflow.get("name")
    if pipeline is None or not isinstance(name, str) or not name:
        return None
    return ("circleci_pipeline", pipeline, name)


def rebuilt_from(outcome: CIOutcome) -> str | None:
    """The id of the Buildkite build this build rebuilt (``build.rebuilt_from.id``), else ``None``."""
    build = _buildkite_build(outcome)
    return None if build is None else raw_id(raw_at(build, "rebuilt_from", "id"))


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
    "rebuilt_from",
]
