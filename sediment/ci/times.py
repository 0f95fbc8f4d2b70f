"""When a CI provider says a recorded attempt reached its final state.

Every provider stamps its final event with its own clock; that time, unlike the capture time
(Sediment's clock when the delivery was stored), is the same whether a delivery is captured as
it arrives or ingested months later from a file with thousands of others. The field read per
event (docs/ci-providers.md "Final times"):

- GitHub ``workflow_run``: ``workflow_run.updated_at`` (a completed run's last change, its
  completion); ``workflow_job`` and ``check_run``: ``completed_at``; ``check_suite``: ``updated_at``;
- GitLab pipeline: ``object_attributes.finished_at``; job: ``build_finished_at``;
- CircleCI ``workflow-completed``: ``workflow.stopped_at``; ``job-completed``: ``job.stopped_at``;
- Buildkite ``build.*``: ``build.finished_at``; ``job.*``: ``job.finished_at``.

Any other outcome (a generic ``sediment ingest ci`` record, Jenkins) and a payload without a
readable time have none: callers then fall back to what else they know.
"""

from __future__ import annotations

from sediment.model.ci_keys import raw_at, sortable_provider_time
from sediment.model.facts import CIOutcome

_GITHUB: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("github.workflow_run.", ("updated_at",)),
    ("github.workflow_job.", ("completed_at",)),
    ("github.check_run.", ("completed_at",)),
    ("github.check_suite.", ("updated_at",)),
)
_BUILDKITE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("build.", ("build", "finished_at")),
    ("job.", ("job", "finished_at")),
)
_CIRCLECI: dict[str, tuple[str, ...]] = {
    "workflow-completed": ("workflow", "stopped_at"),
    "job-completed": ("job", "stopped_at"),
}
_GITLAB: dict[str, tuple[str, ...]] = {
    "pipeline": ("object_attributes", "finished_at"),
    "build": ("build_finished_at",),
}


def _path(outcome: CIOutcome) -> tuple[str, ...] | None:
    event = outcome.source_event_type or ""
    if outcome.provider in ("github_actions", "github_checks"):
        return next((path for prefix, path in _GITHUB if event.startswith(prefix)), None)
    if outcome.provider == "buildkite":
        return next((path for prefix, path in _BUILDKITE if event.startswith(prefix)), None)
    if outcome.provider == "circleci":
        return _CIRCLECI.get(event)
    if outcome.provider == "gitlab_ci":
        kind = outcome.raw.get("object_kind")
        return _GITLAB.get(kind) if isinstance(kind, str) else None
    return None


def finished_time(outcome: CIOutcome) -> str | None:
    """The provider's time of this attempt's final event as sortable UTC text
    (:func:`sediment.records.sortable_time`'s form), or ``None`` when the provider gave none
    this module can read."""
    path = _path(outcome)
    return None if path is None else sortable_provider_time(raw_at(outcome.raw, *path))


__all__ = ["finished_time"]
