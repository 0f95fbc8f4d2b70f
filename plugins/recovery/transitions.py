"""Recovery pairs: the last clean failed run of a workflow definition, then the next passed run
of the same definition on a descendant commit (``RecoveryPolicy`` version "5").

A pure function of the resolved CI evidence and the mirrors' history (:func:`derive_recovery`):

1. Every commit resolution with a verdict (ambiguous and verdict-less commits drop out: the
   resolver counted ambiguity), and in it every workflow run with a verdict. A run that flipped
   between attempts is ``unreliable_ci_resolution`` (per run). A run's workflow **definition** is
   its ``workflow_id``, else its ``workflow_path``; a run with neither is
   ``workflow_identity_absent`` (a display name never identifies a workflow).
2. Runs form **lineages**: one per (qualified repository, branch, CI provider, definition), in
   that order; a lineage's runs are in evidence order (:mod:`.run_order`): commit ancestry in
   the mirror, then the provider's time of the verdict attempt, then its capture time and its
   outcome id.
3. The walk: a failed run becomes the pending red (consecutive failures collapse to the last); a
   passed run with a pending red makes the one candidate transition and always spends the red,
   whatever the gates decide; later passes are not searched for another fix.
4. The gates, per candidate, first failure decides: ``same_commit``; ``ancestry_check_failed``
   (the mirror cannot tell, e.g. a commit is missing); ``not_ancestor`` (the passing commit does
   not contain the failing one: a force push, another line of history); ``diff_unavailable``;
   ``diff_oversized`` (more than ``max_recovery_diff_lines`` changed lines). A repository without
   a mirror counts every candidate of its lineages as ``mirror_absent``.

Changed lines are the ``+``/``-`` lines inside hunks: after an ``@@`` line and before the next
``diff --git`` header, so file headers never count and a ``---`` line of content does.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sediment.plugin import (
    CIOutcome,
    CIResolutionResult,
    CIWorkflowResolution,
    CommitKey,
    MirrorReadError,
    canonical_digest,
)

from .run_order import ResolvedRun, commit_ancestry, order_runs, run_key

if TYPE_CHECKING:  # only annotations: a bundle-only export loads no pygit2
    from sediment.plugin import Mirror

#: The derivation's own skip reasons, in vocabulary order (the registry puts the CI resolver's
#: reasons in front).
DERIVATION_SKIP_REASONS: tuple[str, ...] = (
    "unreliable_ci_resolution",
    "workflow_identity_absent",
    "mirror_absent",
    "same_commit",
    "ancestry_check_failed",
    "not_ancestor",
    "diff_unavailable",
    "diff_oversized",
)
RECOVERY_POLICY_VERSION = "5"
DEFAULT_MAX_RECOVERY_DIFF_LINES = 200
#: How a lineage is ordered (:mod:`.run_order`), in the policy digest: upstream orders by capture
#: time and outcome id under the same policy version, so the digest tells the rows apart.
LINEAGE_ORDER = "ancestry,provider_time,captured_at,outcome_id"


@dataclass(frozen=True)
class RecoveryPolicy:
    """The knobs of the Recovery derivation."""

    max_recovery_diff_lines: int = DEFAULT_MAX_RECOVERY_DIFF_LINES
    policy_version: str = RECOVERY_POLICY_VERSION

    def __post_init__(self) -> None:
        limit = self.max_recovery_diff_lines
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"max_recovery_diff_lines must be a non-negative integer, got {limit!r}")

    def digest(self, *, ci_policy_digest: str, derivation_policy_digest: str) -> str:
        """SHA-256 of the resolved policy the rows depend on: these knobs, the lineage order, and the
        digests of the CI resolution policy (verdicts) and the derivation policy (attribution, split)."""
        return canonical_digest(self.resolved(ci_policy_digest=ci_policy_digest,
                                              derivation_policy_digest=derivation_policy_digest))

    def resolved(self, *, ci_policy_digest: str, derivation_policy_digest: str) -> dict[str, Any]:
        return {"ci_resolution_policy_digest": ci_policy_digest,
                "derivation_policy_digest": derivation_policy_digest,
                "lineage_order": LINEAGE_ORDER,
                "max_recovery_diff_lines": self.max_recovery_diff_lines,
                "policy_version": self.policy_version}


DEFAULT_POLICY = RecoveryPolicy()


@dataclass(frozen=True)
class RecoverySample:
    """A qualified recovery pair: the failed run, the run that fixed it, and the diff between
    their commits."""

    failed: ResolvedRun
    fixed: ResolvedRun
    recovery_diff: str
    changed_lines: int


@dataclass
class RecoveryDerivation:
    """The samples in lineage order, the skip counts (the resolver's and the derivation's), and
    the changed-line counts of the diffs kept and of those dropped as oversized."""

    samples: list[RecoverySample] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    kept_diff_line_counts: list[int] = field(default_factory=list)
    dropped_diff_line_counts: list[int] = field(default_factory=list)


LineageKey = tuple[tuple[str, ...], str, str, str, str]


def changed_lines(diff: str) -> int:
    """The ``+``/``-`` lines inside the hunks of a unified diff (file headers never count)."""
    count, in_hunk = 0, False
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[:1] in ("+", "-"):
            count += 1
    return count


def definition(workflow: CIWorkflowResolution) -> tuple[str, str] | None:
    """``("id", workflow_id)``, else ``("path", workflow_path)``, else ``None``."""
    if workflow.workflow_id:
        return ("id", workflow.workflow_id)
    if workflow.workflow_path:
        return ("path", workflow.workflow_path)
    return None


def lineages(outcomes: Iterable[CIOutcome], resolution: CIResolutionResult,
             skipped: Counter[str]) -> dict[LineageKey, list[ResolvedRun]]:
    """Every clean resolved run with a verdict, grouped by lineage and ordered by
    :func:`.run_order.run_key` (time, capture time, outcome id; :func:`ordered` adds commit
    ancestry); unreliable and unidentified runs counted into ``skipped``."""
    by_id = {o.outcome_id: o for o in outcomes}
    grouped: dict[LineageKey, list[ResolvedRun]] = defaultdict(list)
    for commit in resolution.resolutions:
        if commit.verdict is None:
            continue
        for workflow in commit.workflow_resolutions:
            if workflow.verdict is None or workflow.verdict_outcome_id is None:
                continue
            if workflow.suspected_flake:
                skipped["unreliable_ci_resolution"] += 1
                continue
            named = definition(workflow)
            if named is None:
                skipped["workflow_identity_absent"] += 1
                continue
            key: LineageKey = (commit.commit_key.repository_sort_key, workflow.branch, workflow.provider, *named)
            grouped[key].append(ResolvedRun(commit, workflow, by_id[workflow.verdict_outcome_id]))
    return {key: sorted(grouped[key], key=run_key) for key in sorted(grouped)}


def ordered(runs: Sequence[ResolvedRun], mirror: Mirror | None) -> list[ResolvedRun]:
    """A lineage's runs in evidence order (:mod:`.run_order`); the mirror is walked only when the
    lineage holds both a failed and a passed run (else no order makes a candidate)."""
    if not {"failed", "passed"} <= {run.verdict for run in runs}:
        return list(runs)
    return order_runs(runs, commit_ancestry(runs, mirror))


def candidates(runs: Sequence[ResolvedRun]) -> list[tuple[ResolvedRun, ResolvedRun]]:
    """The walk: each passed run after a pending red makes one candidate and spends the red."""
    found: list[tuple[ResolvedRun, ResolvedRun]] = []
    pending: ResolvedRun | None = None
    for run in runs:
        if run.verdict == "failed":
            pending = run
        elif run.verdict == "passed" and pending is not None:
            found.append((pending, run))
            pending = None
    return found


def gate(failed: ResolvedRun, fixed: ResolvedRun, mirror: Mirror,
         policy: RecoveryPolicy = DEFAULT_POLICY) -> tuple[str | None, str, int]:
    """``(reason, diff, changed lines)`` of one candidate: ``reason`` is ``None`` when it
    qualifies; the diff and its line count are known once the ancestry gates passed."""
    old, new = failed.commit.commit_sha, fixed.commit.commit_sha
    if old == new:
        return "same_commit", "", 0
    try:
        contained = mirror.is_ancestor_or_equal(old, new)
    except MirrorReadError:
        return "ancestry_check_failed", "", 0
    if not contained:
        return "not_ancestor", "", 0
    try:
        diff = mirror.diff(old, new)
    except MirrorReadError:
        return "diff_unavailable", "", 0
    lines = changed_lines(diff)
    if lines > policy.max_recovery_diff_lines:
        return "diff_oversized", diff, lines
    return None, diff, lines


def derive_recovery(outcomes: Sequence[CIOutcome], resolution: CIResolutionResult,
                    mirror_of: Callable[[CommitKey], Mirror | None],
                    policy: RecoveryPolicy = DEFAULT_POLICY) -> RecoveryDerivation:
    """The recovery pairs of ``outcomes`` (resolved as ``resolution``), with every skip counted:
    the resolver's first, then the derivation's (see the module doc)."""
    derived = RecoveryDerivation()
    derived.skipped.update(resolution.skipped)
    for grouped in lineages(outcomes, resolution, derived.skipped).values():
        mirror = mirror_of(grouped[0].commit)
        pairs = candidates(ordered(grouped, mirror))
        if not pairs:
            continue
        if mirror is None:
            derived.skipped["mirror_absent"] += len(pairs)
            continue
        for failed, fixed in pairs:
            reason, diff, lines = gate(failed, fixed, mirror, policy)
            if reason == "diff_oversized":
                derived.dropped_diff_line_counts.append(lines)
            if reason is not None:
                derived.skipped[reason] += 1
                continue
            derived.kept_diff_line_counts.append(lines)
            derived.samples.append(RecoverySample(failed, fixed, diff, lines))
    return derived
