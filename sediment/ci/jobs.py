"""Job-level CI outcomes and the run they belong to.

Some CI events report one job of a run rather than the run: GitHub ``workflow_job`` and
``check_run``, GitLab's Job Hook, CircleCI ``job-completed``. Such an outcome is a CIOutcome of
its run (``run_id`` and ``run_attempt`` are the run's) whose natural key adds the job's own id,
read from the provider payload kept in ``raw`` (:func:`job_id`); several jobs of one run thus
never collapse into one Fact, and a job never takes the key of its run.

CI resolution sees runs, not jobs (:func:`runs_of_jobs`): a run that has a run-level outcome
(``workflow_run``, a check suite, a GitLab pipeline, a CircleCI workflow) is judged by it alone and
its jobs are left out, so a run that arrived both ways is counted once; a run known only from its
jobs is judged per attempt by the worst of its jobs, each job name at its latest try up to that
attempt (:func:`judged_attempts`, docs/ci-providers.md). Pure and order-independent.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sediment.model.ci_keys import job_id, sortable_provider_time
from sediment.model.facts import CIOutcome

RESULT_SEVERITY: Final[tuple[str, ...]] = (
    "failed", "error", "timed_out", "cancelled", "unknown", "passed", "neutral", "skipped",
)
"""Which job result speaks for a run known only from its jobs: the first of these any job has.
One failed job fails the run; a run whose jobs all passed or were skipped passes."""


def run_name(outcome: CIOutcome) -> str:
    """The ``workflow_name`` of the run an outcome belongs to: its own, except for a GitHub
    ``check_run``, whose ``workflow_name`` is the check's (the job's) name: ``""``, unknown."""
    if (outcome.provider in ("github_actions", "github_checks")
            and (outcome.source_event_type or "").startswith("github.check_run.")):
        return ""
    return outcome.workflow_name


def job_name(outcome: CIOutcome) -> str:
    """What names a job across its tries (a retry is a new job with the same name): the job's
    name as the provider gives it (with Buildkite's parallel index), else its own id."""
    raw: Mapping[str, Any] = outcome.raw
    name: Any = None
    if outcome.provider in ("github_actions", "github_checks"):
        name = raw.get("name")
    elif outcome.provider == "gitlab_ci":
        name = raw.get("build_name")
    elif outcome.provider in ("circleci", "buildkite"):
        job = raw.get("job")
        if isinstance(job, Mapping):
            name = job.get("name") if outcome.provider == "circleci" else (job.get("step_key") or job.get("name"))
            index = job.get("parallel_group_index") if outcome.provider == "buildkite" else None
            if isinstance(name, str) and isinstance(index, int) and not isinstance(index, bool):
                name = f"{name}#{index}"
    if isinstance(name, str) and name:
        return f"name:{name}"
    return f"id:{job_id(outcome) or outcome.outcome_id}"


def _tries(jobs: Sequence[CIOutcome]) -> dict[str, list[tuple[int, CIOutcome]]]:
    """Each job name's tries: ``(try, outcome)``. A job's try is its ``run_attempt``; jobs that
    name none (GitHub ``check_run``) are numbered by completion (``completed_at``, then id) among
    the jobs of their name, or all count as one try when a time is missing."""
    by_name: dict[str, list[CIOutcome]] = defaultdict(list)
    for o in jobs:
        by_name[job_name(o)].append(o)
    tries: dict[str, list[tuple[int, CIOutcome]]] = {}
    for name, group in by_name.items():
        if all(o.run_attempt is not None for o in group):
            tries[name] = [(o.run_attempt or 1, o) for o in group]
            continue
        times = [sortable_provider_time(o.raw.get("completed_at")) for o in group]
        if len(group) > 1 and all(t is not None for t in times):
            ordered = sorted(zip(times, group, strict=True), key=lambda pair: (pair[0] or "", pair[1].outcome_id))
            tries[name] = [(index, o) for index, (_, o) in enumerate(ordered, start=1)]
        else:
            tries[name] = [(1, o) for o in group]
    return tries


def judged_attempts(run: Sequence[CIOutcome]) -> list[tuple[CIOutcome, int | None]]:
    """The outcomes CI resolution judges one run by, each with the attempt it speaks for
    (``None``: the outcome's own).

    Run-level outcomes when there are any. Otherwise the run's jobs, round by round: attempt *k*
    is every job name at its latest try up to *k* (a job not retried into attempt *k* still
    counts there, as the provider counts it), and speaks by the job whose result comes first in
    :data:`RESULT_SEVERITY` (ties: the smallest outcome id). Jobs that name no attempt (a GitHub
    ``check_run``) are left out when jobs of the same run do (its ``workflow_job`` events report
    the same jobs with their attempt).
    """
    levels = [(o, job_id(o)) for o in run]
    run_level = [o for o, job in levels if job is None]
    if run_level:
        return [(o, None) for o in run_level]
    jobs = [o for o, _ in levels]
    if any(o.run_attempt is not None for o in jobs):
        jobs = [o for o in jobs if o.run_attempt is not None]
    rank = {result: index for index, result in enumerate(RESULT_SEVERITY)}
    at_try: dict[int, list[tuple[str, CIOutcome]]] = defaultdict(list)
    for name, entries in _tries(jobs).items():
        for attempt, o in entries:
            at_try[attempt].append((name, o))
    latest: dict[str, int] = {}
    heap: list[tuple[int, str, int, str]] = []  # (severity, outcome id, try, name); stale once the name retries
    found: dict[str, CIOutcome] = {}
    judged: list[tuple[CIOutcome, int | None]] = []
    for attempt in sorted(at_try):
        for name, o in at_try[attempt]:
            latest[name] = attempt
            found[o.outcome_id] = o
            heapq.heappush(heap, (rank.get(o.result, len(rank)), o.outcome_id, attempt, name))
        while latest[heap[0][3]] != heap[0][2]:
            heapq.heappop(heap)
        judged.append((found[heap[0][1]], attempt))
    return judged


def runs_of_jobs(run: Sequence[CIOutcome]) -> list[CIOutcome]:
    """The distinct outcomes :func:`judged_attempts` judges ``run`` by, in its order."""
    seen: dict[str, CIOutcome] = {}
    for o, _ in judged_attempts(run):
        seen.setdefault(o.outcome_id, o)
    return list(seen.values())
