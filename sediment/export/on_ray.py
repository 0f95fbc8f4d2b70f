"""A target export's projection on a Ray cluster (``--engine ray``).

The Rollouts, in export order, are partitioned by Session hash into Ray tasks
(:mod:`sediment.parallel.cluster`). Each task reads its Rollouts itself (a direct export from
the PostgreSQL store, a bundle export from the bundle at the same path on every node), projects
each into a :class:`~sediment.export.writer.RowBuffer` and sends back, per Rollout, its encoded
rows per file, its tally and its derivation counts. The exporting process appends them to its
private stage in export order, so the files are byte-identical to a single process's; it
publishes only once every Rollout is in, so a failed task or a lost worker publishes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sediment.ci.resolution import CIResolutionPolicy
from sediment.evidence.context import Evidence, ProgressCallback, RolloutSource, export_order
from sediment.evidence.recipe import Recipe
from sediment.evidence.rollout import RolloutEvidence
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.projection import Projection, Tally
from sediment.export.writer import RowBuffer, RowFiles
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext


def _project_positions(rollouts: RolloutSource, mirrors: MirrorRoot | None, split_enabled: bool,
                       projection: Projection, order: list[int], budgets: tuple[int, int],
                       verifier_commands: VerifierCommands, ci_policy: CIResolutionPolicy, recipe: Recipe,
                       repositories: RepositoryContext | None, positions: Sequence[int]) -> list[Any]:
    """A Ray task's share: for each position, its rows per file, its tally and its counts."""
    rows = RowBuffer(split_enabled=split_enabled, max_record_bytes=budgets[0], max_stage_bytes=budgets[1])
    take_stats = getattr(rollouts, "take_stats", None)
    results = []
    for position in positions:
        tally = Tally()
        unit = RolloutEvidence(rollouts[order[position]], mirrors=mirrors,
                               verifier_commands=verifier_commands, ci_policy=ci_policy, recipe=recipe,
                               repositories=repositories)
        projection.project(unit, rows, tally)
        results.append((rows.take(), tally, take_stats() if callable(take_stats) else None))
    return results


def project_on_ray(evidence: Evidence, projection: Projection, prepared: RowFiles,
                   verifier_commands: VerifierCommands, ci_policy: CIResolutionPolicy, recipe: Recipe,
                   progress: ProgressCallback | None, workers: int, repositories: RepositoryContext | None) -> Tally:
    """Project every Rollout on the cluster into ``prepared``, in export order; the total tally."""
    from sediment.parallel.cluster import ordered_partitions

    rollouts = evidence.rollouts
    order = export_order(rollouts)
    order_keys = getattr(rollouts, "order_keys", None)
    keys = order_keys() if callable(order_keys) else [(rollouts[i].org_id, rollouts[i].session_id)
                                                     for i in range(len(rollouts))]
    job = partial(_project_positions, rollouts, evidence.mirrors, evidence.split_enabled, projection, order,
                  (prepared.max_record_bytes, prepared.max_stage_bytes), verifier_commands, ci_policy, recipe,
                  repositories)
    merge = getattr(rollouts, "merge_stats", None)
    total = Tally()
    results = ordered_partitions(job, [f"{keys[i][0]}/{keys[i][1]}" for i in order], workers)
    for done, (lines, tally, stats) in enumerate(results, start=1):
        prepared.extend(lines)
        total.update(tally)
        if stats is not None and callable(merge):
            merge(stats)
        if progress is not None:
            progress(done, len(order))
    return total
