"""The order of the runs of one lineage: what the evidence proves, never when Sediment heard of it.

1. **Commit ancestry on the branch.** A run on a commit comes after every run on a commit of
   the lineage that the mirror shows is its ancestor (the red a commit repairs was tested
   before it).
2. **The provider's time** of the run's verdict attempt (:func:`sediment.plugin.finished_time`:
   GitHub ``workflow_run.updated_at``, GitLab ``finished_at``, …) orders runs ancestry leaves
   free: runs on one commit, on commits the mirror does not hold, on unrelated lines of history.
3. **Capture time** stands in for a run the provider gave no time, and breaks ties; then the
   verdict attempt's outcome id.

Capture time alone, as upstream orders a lineage, is the server's clock: deliveries ingested in
one batch share it, their runs then follow their outcome ids (hashes), and a backfill pairs a
different set of runs than live capture did. With this order a backfill and live capture of the
same deliveries give the same lineage.

The order is the linear extension of the ancestry order that takes, at each step, the earliest
run (by ``(time, capture time, outcome id)``) among those whose ancestors' runs all came
before: a pure function of the runs and the history, whatever order either is given in.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sediment.plugin import (
    CIOutcome,
    CIResolution,
    CIWorkflowResolution,
    CommitKey,
    MirrorReadError,
    finished_time,
    sortable_time,
)

if TYPE_CHECKING:  # only annotations: a bundle-only export loads no pygit2
    from sediment.plugin import Mirror

RunKey = tuple[str, str, str, str, str]


def run_key(run: ResolvedRun) -> RunKey:
    """``(time, capture time, outcome id, commit, run id)`` of a run's verdict attempt: the time is
    the provider's, else the capture time (both sortable UTC text)."""
    captured = sortable_time(run.outcome.captured_at)
    return (finished_time(run.outcome) or captured, captured, run.outcome.outcome_id, run.commit.commit_sha,
            run.workflow.run_id)


def commit_ancestry(runs: Iterable[ResolvedRun], mirror: Mirror | None) -> dict[str, tuple[str, ...]]:
    """Per commit of ``runs`` the mirror holds, the nearest commits of ``runs`` among its ancestors
    (:meth:`sediment.plugin.Mirror.nearest_ancestors`); empty without a mirror or when its history
    cannot be walked (the gates then say why a candidate fails)."""
    if mirror is None:
        return {}
    try:
        return mirror.nearest_ancestors(sorted({run.commit.commit_sha for run in runs}))
    except MirrorReadError:
        return {}


def order_runs(runs: Iterable[ResolvedRun], ancestors: Mapping[str, Sequence[str]]) -> list[ResolvedRun]:
    """``runs`` (one lineage) in evidence order (module doc): each run after the runs on every commit
    ``ancestors`` puts below its commit, else by :func:`run_key`."""
    keyed = sorted(((run_key(run), run) for run in runs), key=lambda item: item[0])
    by_commit: dict[str, list[tuple[RunKey, ResolvedRun]]] = defaultdict(list)
    for item in keyed:
        by_commit[item[1].commit.commit_sha].append(item)
    waiting = {sha: {a for a in ancestors.get(sha, ()) if a in by_commit and a != sha} for sha in by_commit}
    above: dict[str, list[str]] = defaultdict(list)
    for sha, below in waiting.items():
        for ancestor in below:
            above[ancestor].append(sha)
    left = {sha: len(items) for sha, items in by_commit.items()}
    ready: list[tuple[RunKey, int]] = []
    index = {id(run): i for i, (_, run) in enumerate(keyed)}

    def release(sha: str) -> None:
        for key, run in by_commit[sha]:
            heapq.heappush(ready, (key, index[id(run)]))

    for sha in sorted(sha for sha, below in waiting.items() if not below):
        release(sha)
    ordered: list[ResolvedRun] = []
    while len(ordered) < len(keyed):
        if not ready:  # only a cyclic ``ancestors`` (never a mirror's) gets here: the earliest run goes first
            sha = min((sha for sha, below in waiting.items() if below), key=lambda s: by_commit[s][0][0])
            waiting[sha] = set()
            release(sha)
        _, i = heapq.heappop(ready)
        run = keyed[i][1]
        ordered.append(run)
        sha = run.commit.commit_sha
        left[sha] -= 1
        if left[sha]:
            continue
        for child in above[sha]:
            if waiting[child]:
                waiting[child].discard(sha)
                if not waiting[child]:
                    release(child)
    return ordered


__all__ = ["RunKey", "commit_ancestry", "order_runs", "run_key"]


@dataclass(frozen=True)
class ResolvedRun:
    """One resolved CI run with a verdict, as a lineage holds it."""

    #: the resolution of the run's commit (its repository label and identity)
    resolution: CIResolution
    #: the run's own resolution (definition, branch, verdict)
    workflow: CIWorkflowResolution
    #: the attempt that gave the run its verdict
    outcome: CIOutcome

    @property
    def commit(self) -> CommitKey:
        return self.resolution.commit_key

    @property
    def verdict(self) -> str:
        return str(self.workflow.verdict)
