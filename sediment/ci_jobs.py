"""Job-level CI outcomes and the run they belong to.

Some CI events report one job of a run rather than the run: GitHub ``workflow_job`` and
``check_run``, GitLab's Job Hook, CircleCI ``job-completed``. Such an outcome is a CIOutcome of
its run (``run_id`` and ``run_attempt`` are the run's) whose natural key adds the job's own id,
read from the provider payload kept in ``raw`` (:func:`job_id`); several jobs of one run thus
never collapse into one Fact, and a job never takes the key of its run.

CI resolution sees runs, not jobs (:func:`runs_of_jobs`): a run that has a run-level outcome
(``workflow_run``, a check suite, a GitLab pipeline, a CircleCI workflow) is judged by it alone and
its jobs are left out, so a run that arrived both ways is counted once; a run known only from its
jobs is judged per attempt by the worst of its jobs (docs/ci-providers.md). Pure and
order-independent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sediment.facts import CIOutcome

GITHUB_JOB_EVENTS: Final = ("github.workflow_job.", "github.check_run.")
"""``source_event_type`` prefixes of GitHub's job-level events (``raw`` is the job object)."""

RESULT_SEVERITY: Final[tuple[str, ...]] = (
    "failed", "error", "timed_out", "cancelled", "unknown", "passed", "neutral", "skipped",
)
"""Which job result speaks for a run known only from its jobs: the first of these any job has.
One failed job fails the run; a run whose jobs all passed or were skipped passes."""


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        return None
    return str(value)


def job_id(outcome: CIOutcome) -> str | None:
    """The job's id when ``outcome`` reports one job of a run, else ``None`` (a run-level outcome)."""
    raw: Mapping[str, Any] = outcome.raw
    if outcome.provider in ("github_actions", "github_checks"):
        event = outcome.source_event_type or ""
        return _id(raw.get("id")) if event.startswith(GITHUB_JOB_EVENTS) else None
    if outcome.provider == "gitlab_ci" and raw.get("object_kind") == "build":
        return _id(raw.get("build_id"))
    if outcome.provider == "circleci" and raw.get("type") == "job-completed":
        job = raw.get("job")
        return _id(job.get("id")) if isinstance(job, Mapping) else None
    if outcome.provider == "buildkite" and (outcome.source_event_type or "").startswith("job."):
        job = raw.get("job")  # a job event's payload; a build.* outcome is run-level
        return _id(job.get("id")) if isinstance(job, Mapping) else None
    return None


def runs_of_jobs(run: Sequence[CIOutcome]) -> list[CIOutcome]:
    """The outcomes of one run that CI resolution judges it by.

    Run-level outcomes when there are any. Otherwise one job outcome per attempt, the one whose
    result comes first in :data:`RESULT_SEVERITY` (ties: the smallest outcome id); jobs that name
    no attempt (a GitHub ``check_run``) are left out when jobs of the same run do (its
    ``workflow_job`` events report the same jobs with their attempt).
    """
    levels = [(o, job_id(o)) for o in run]
    run_level = [o for o, job in levels if job is None]
    if run_level:
        return run_level
    jobs = [o for o, _ in levels]
    if any(o.run_attempt is not None for o in jobs):
        jobs = [o for o in jobs if o.run_attempt is not None]
    by_attempt: dict[int, list[CIOutcome]] = defaultdict(list)
    for o in jobs:
        by_attempt[o.run_attempt or 0].append(o)
    rank = {result: index for index, result in enumerate(RESULT_SEVERITY)}
    return [min(group, key=lambda o: (rank.get(o.result, len(rank)), o.outcome_id))
            for _, group in sorted(by_attempt.items())]
