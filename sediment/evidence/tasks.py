"""Task evidence shared by task-producing targets: eligibility steps and the task basis.

A task needs an attributed commit, a CI verdict on the last attributed commit that has one,
and a reference patch from the mirror (docs/exports.md, Targets and Skip reasons).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sediment.ci.resolution import CIResolution
from sediment.evidence.reference_patch import PATCH_SKIP_REASONS, ReferencePatch
from sediment.evidence.rollout import RolloutEvidence

#: The reasons in which task evidence may be missing, before patch resolution.
EVIDENCE_REASONS: tuple[str, ...] = ("no_attributed_commit", "missing_verifier_evidence")


#: What would change each task reason (a target declares them as its ``remedies``, adding its own).
TASK_REMEDIES: dict[str, str] = {
    "no_attributed_commit": "no commit is attributed to the Session: add the repository's mirror with its git-ai "
                            "notes (`sediment mirror add OWNER/REPO SOURCE`, then `sediment mirror fetch`) and derive "
                            "again",
    "missing_verifier_evidence": "no CI verdict for the attributed commits: ingest their CI runs' webhooks "
                                 "(`sediment ingest github|gitlab|circleci|buildkite`, or `sediment serve`)",
    "mirror_absent": "no mirror of the verified repository: `sediment mirror add OWNER/REPO SOURCE`, and pass "
                     "--mirrors (or SEDIMENT_MIRROR_PATH)",
    "reference_patch_unavailable": "the mirror does not hold the commits: `sediment mirror fetch OWNER/REPO`",
}


def task_skip_reasons(*verdict_reasons: str) -> tuple[str, ...]:
    """A task population's own reasons (:func:`task_ineligibility` can return each), with a
    target's verdict reasons after the evidence reasons. The registry puts the CI and
    representation reasons in front."""
    return (*EVIDENCE_REASONS, *verdict_reasons, *PATCH_SKIP_REASONS)


@dataclass(frozen=True)
class TaskBasis:
    """What a task row is built from: the selected resolution and its reference patch."""

    resolution: CIResolution
    patch: ReferencePatch


def task_ineligibility(
    evidence: RolloutEvidence,
    *,
    accepted_verdicts: Collection[str] = ("passed", "failed"),
    rejected_verdict_reason: str = "",
) -> str | None:
    """The first reason the Rollout cannot become a task, or ``None``.

    :param accepted_verdicts: verdicts a task may carry; another verdict declines with
        ``rejected_verdict_reason``.
    """
    if not evidence.rollout.commits:
        return "no_attributed_commit"
    resolution = evidence.reward_resolution
    if resolution is None:
        return "missing_verifier_evidence"
    if resolution.verdict not in accepted_verdicts:
        return rejected_verdict_reason
    patch = evidence.reference_patch(resolution)
    return patch if isinstance(patch, str) else None


def task_basis(evidence: RolloutEvidence) -> TaskBasis:
    """The basis of an eligible task (call only after :func:`task_ineligibility` returned None)."""
    resolution = evidence.reward_resolution
    if resolution is None:
        raise ValueError("task_basis called for a Rollout without a reward resolution")
    patch = evidence.reference_patch(resolution)
    if isinstance(patch, str):
        raise ValueError(f"task_basis called for a Rollout whose patch declined: {patch}")
    return TaskBasis(resolution, patch)


def task_instance_id(evidence: RolloutEvidence, basis: TaskBasis) -> str:
    """``{org}-{session}-{first_commit[:7]}``."""
    return f"{evidence.instance_prefix()}-{basis.patch.first_commit[:7]}"
